"""GD630: grad_norm exactly 0 while reward_std > 0.

In GRPO a group whose completions all get the same reward has zero advantages, so grad_norm 0 is expected
when every group is flat (GD610); with reward_std above 0 it means no update reached the trainable weights.
"""
from __future__ import annotations

import math

from ...engine.columns import load_numpy
from ...engine.state import RunState
from ...model import Finding, Severity
from .._columns import available, column, longest_run
from .._series import EPS_STD, EXCERPT_CONFIDENCE, FEW_ROWS, SeriesRule, excerpt, few_rows_caveat, fmt, longest_streak


def _no_update_columns(gn: list[float | None], rstd: list[float | None],
                       frac: list[float | None]) -> tuple[list[int], list[bool], tuple[int, int]]:
    """The rows that log grad_norm and a number for reward_std, whether each had no update although its groups had
    a reward spread (grad_norm exactly 0, reward_std above EPS_STD, not every group flat by frac_reward_zero_std),
    and the longest run of such rows."""
    (g, g_ok), (r, r_ok), (f, f_ok) = column(gn), column(rstd), column(frac)
    np = load_numpy()
    with np.errstate(invalid="ignore"):
        at = (g_ok & r_ok & ~np.isnan(r)).nonzero()[0]
        g, r, f, f_ok = g[at], r[at], f[at], f_ok[at]
        bad = (g == 0) & (r > EPS_STD) & (~f_ok | (f < 0.999))
    return at.tolist(), bad.tolist(), longest_run(bad)


class GradNormZero(SeriesRule):
    """GD630: grad_norm exactly 0 while reward_std > 0 (advantages are not zero, yet nothing moves)."""

    want_rewards = False
    series_keys = ("loss", "grad_norm", "learning_rate", "reward_std", "frac_reward_zero_std", "kl")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        run = ctx.run
        gn, rstd, frac = s.col("grad_norm"), s.col("reward_std"), s.col("frac_reward_zero_std")
        if s.n and available(s.n):   # no rows (or a few): numpy is not even imported
            rows, bad, (streak, end) = _no_update_columns(gn, rstd, frac)
        else:   # no numpy: the same row by row
            rows = [i for i in range(s.n) if gn[i] is not None and rstd[i] is not None and not math.isnan(rstd[i])]
            bad = [gn[i] == 0 and rstd[i] > EPS_STD and (frac[i] is None or frac[i] < 0.999) for i in rows]
            streak, end = longest_streak(bad)
        if not rows:
            return []
        n_bad = sum(bad)
        if not (n_bad == len(rows) or streak >= 3):
            return []
        lo = end - streak + 1 if n_bad != len(rows) else 0
        hi = end if n_bad != len(rows) else len(rows) - 1
        idx = [rows[k] for k in range(lo, hi + 1) if bad[k]]
        i0 = idx[0]
        std_vals = [rstd[i] for i in idx]
        # a short excerpt: a warning that says what it cannot show (a short run logged whole keeps its severity)
        few = n_bad == len(rows) and len(rows) <= FEW_ROWS and excerpt(s, rows)
        if n_bad == len(rows):
            scope = (f"in the only logged step ({s.label(idx[0])})" if len(idx) == 1
                     else f"in both logged steps ({s.span(idx[0], idx[-1])})" if len(idx) == 2
                     else f"in all {len(idx)} logged steps ({s.span(idx[0], idx[-1])})")
        else:
            scope = f"in {streak} consecutive logged steps ({s.span(idx[0], idx[-1])})"
        msg = (f"grad_norm was exactly 0 {scope} although reward_std was {fmt(min(std_vals))}"
               + (f"-{fmt(max(std_vals))}" if max(std_vals) != min(std_vals) else "")
               + (f" and frac_reward_zero_std {fmt(frac[i0])}" if frac[i0] is not None else "")
               + ": the groups had non-zero advantages, so the policy loss should have produced gradients. No update "
                 "reached the trainable weights.")
        kl = s.col("kl")
        if all(kl[i] == 0 for i in idx if kl[i] is not None) and any(kl[i] is not None for i in idx):
            msg += " kl stayed 0 too: the policy never moved away from the reference."
        if few:
            msg += few_rows_caveat(len(rows))
        fix: list[str] = []
        offload = [f for f in ("offload_model", "offload_optimizer") if run.args.get(f) in (True, "true", "True")]
        mode = run.args.get("vllm_mode")
        if run.args.get("use_vllm") in (True, "true", "True") and offload:
            fix.append(f"This run uses vLLM{' ' + str(mode) + ' mode' if mode else ''} with "
                       f"{' and '.join('--' + f + ' true' for f in offload)}: ms-swift's GRPO docs (3.4) say that "
                       f"with offload_model on and grad_norm always 0 you should install vllm==0.7.3; otherwise try "
                       f"the run without {' / '.join('--' + f for f in offload)} (save memory with --sleep_level 1 "
                       f"instead) or with the vLLM version the ms-swift examples pin.")
        tuner = run.tuner()
        if tuner == "lora" or tuner is None:
            lr = run.args.get("lora_rank")
            tm = run.args.get("target_modules")
            fix.append("Check that LoRA parameters are trainable: the log line 'model_parameter_info: "
                       "PeftModelForCausalLM: ... Trainable [x%]' must show x > 0"
                       + (f" (this run: --lora_rank {lr}" + (f", --target_modules {tm}" if tm else "") + ")"
                          if lr else "") + ".")
        if run.args.get("deepspeed"):
            fix.append(f"With --deepspeed {run.args.get('deepspeed')} compare with a run without DeepSpeed (or ZeRO-2) "
                       f"on a few steps to see whether gradients are lost in the engine.")
        fix.append("Reproduce on a few steps with --logging_steps 1: if loss and grad_norm stay 0 while reward_std is "
                   "above 0, update ms-swift/trl/vLLM together to a combination the ms-swift README lists.")
        keys = ("loss", "grad_norm", "reward_std", "frac_reward_zero_std", "kl", "learning_rate")
        ev = [s.evidence(i0, keys)] + ([s.evidence(idx[-1], keys)] if idx[-1] != i0 else [])
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(i0),
                          severity=Severity.warning if few else None, confidence=EXCERPT_CONFIDENCE if few else None)]
