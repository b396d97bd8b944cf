"""GD630: grad_norm exactly 0 while reward_std > 0, or, in rows without rewards, while the loss is not 0.

In GRPO a group whose completions all get the same reward has zero advantages, so grad_norm 0 is expected
when every group is flat (GD610); with reward_std above 0 it means no update reached the trainable weights.
"""
from __future__ import annotations

import math
from dataclasses import replace

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
            return self._no_rewards(ctx) if not any(v is not None for v in rstd) else []
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

    def _no_rewards(self, ctx: RunState) -> list[Finding]:
        """Rows without rewards (SFT, DPO, PPO's actor rows): grad_norm exactly 0 in every logged step while the loss
        is not 0. transformers' Trainer logs the norm clip_grad_norm_ returns over the trainable parameters' gradients,
        and torch returns 0.0 when there are none (torch/nn/utils/clip_grad.py: `if len(grads) == 0: return
        torch.tensor(0.0)`) or when every one is 0: the loss reached no trainable weight."""
        s = self.s
        gn, loss = s.col("grad_norm"), s.col("loss")
        rows = [i for i in range(s.n) if gn[i] is not None and loss[i] is not None and not math.isnan(loss[i])]
        if len(rows) < 2 or any(gn[i] != 0 for i in rows):
            return []
        if all(abs(loss[i] or 0.0) < 1e-8 for i in rows):
            return self._no_signal(ctx, rows)
        if any(abs(loss[i] or 0.0) < 1e-8 for i in rows):
            return []
        first, last = loss[rows[0]] or 0.0, loss[rows[-1]] or 0.0
        if len(rows) >= 3 and last < 0.9 * first:
            return []  # the loss falls: weights are updated, and the 0 is how the norm was reported (DeepSpeed below)
        few = len(rows) <= FEW_ROWS and excerpt(s, rows)
        lo, hi = min(loss[i] or 0.0 for i in rows), max(loss[i] or 0.0 for i in rows)
        scope = "in both logged steps" if len(rows) == 2 else f"in all {len(rows)} logged steps"
        msg = (f"grad_norm was exactly 0 {scope} ({s.span(rows[0], rows[-1])}) while the loss was {fmt(lo)}"
               + (f"-{fmt(hi)}" if hi != lo else "") + ": the trainer logs the norm of the trainable parameters' "
               "gradients, and it is 0 when no trainable parameter received a gradient. The loss is computed, but "
               "nothing it depends on is being trained.")
        lr = s.col("learning_rate")
        lr_zero = all(lr[i] is not None and lr[i] == 0 for i in rows)
        if lr_zero:
            msg = msg.replace(" The loss is computed, but nothing it depends on is being trained.", "")
            # DeepSpeedEngine._take_model_step steps the lr scheduler only when the step was not skipped for an
            # overflow, and torch's GradScaler skips optimizer.step() on inf/NaN gradients: a warmup from 0 then stays 0
            msg += (" learning_rate was 0 in every one of these rows as well: either the scheduler never advanced "
                    "because every step was skipped (the fp16 loss scaler or DeepSpeed skips the step, and the "
                    "scheduler with it, when the gradients overflow), or the learning rate is set to 0; either way no "
                    "weight changed.")
        if few:
            msg += few_rows_caveat(len(rows))
        fix = ["Count the trainable parameters before training (`model.print_trainable_parameters()` for a PEFT "
               "model, or sum(p.numel() for p in model.parameters() if p.requires_grad)): 0 means the adapter's "
               "target modules matched no layer or every weight is frozen.",
               "With gradient checkpointing and a frozen base model (LoRA), the inputs of the checkpointed blocks need "
               "gradients: call model.enable_input_require_grads() (transformers) before training, or turn "
               "gradient checkpointing off for a test step.",
               "Run one step by hand: loss.backward(), then list the parameters whose .grad is not None; the first "
               "layer missing from that list is where the graph is cut (a detach, torch.no_grad, a frozen embedding)."]
        if lr_zero:
            fix.insert(0, "Look for skipped steps: DeepSpeed's 'OVERFLOW! Skipping step' lines or a loss scale that keeps "
                          "falling (fp16); train in bf16 where the GPU has it, and check the configured learning rate "
                          "and warmup (a warmup from 0 only rises once steps are taken).")
        if ctx.run.args.get("deepspeed") or any("deepspeed" in t.lower() for t in ctx.run.command_texts):
            fix.append("This run uses DeepSpeed, where a logged grad_norm of 0 can be the report, not the training: "
                       "DeepSpeed 0.14.3 logged 0 (deepspeedai/DeepSpeed#5692), and a norm read after DeepSpeed's step "
                       "is 0 (huggingface/finetrainers#63). If the loss falls over more steps, the weights are being "
                       "updated; check the DeepSpeed version before anything else.")
        ev = self._first_and_last(rows)
        found = self.make(message=msg, fix=fix, evidence=ev, count=len(rows), seq=s.seq(rows[0]),
                          title="grad_norm is 0 in every logged step while the loss is not",
                          severity=Severity.warning if few else None, confidence=EXCERPT_CONFIDENCE if few else None)
        return [replace(found, verify="grad_norm above 0 from the first logged step")]

    def _no_signal(self, ctx: RunState, rows: list[int]) -> list[Finding]:
        """Rows without rewards whose loss and grad_norm are both exactly 0 in every logged step: the loss carries no
        training signal at all (nothing is learned from these batches), whatever the trainer."""
        s = self.s
        few = len(rows) <= FEW_ROWS and excerpt(s, rows)
        scope = "in both logged steps" if len(rows) == 2 else f"in all {len(rows)} logged steps"
        msg = (f"loss and grad_norm were both exactly 0 {scope} ({s.span(rows[0], rows[-1])}): the loss gives the "
               "weights no signal, so nothing is learned from these batches. In GRPO this is what flat rewards do "
               "(every completion of a group scores the same: zero advantages; these rows log no reward_std to "
               "tell); in supervised or preference training it means no token counts toward the loss (every label "
               "masked) or the loss is multiplied by 0.")
        if few:
            msg += few_rows_caveat(len(rows))
        fix = ["If this is a GRPO run: log reward and reward_std (or frac_reward_zero_std) per step; reward_std 0 "
               "means every group is flat, and the reward functions or the prompts' difficulty are what to change.",
               "Otherwise decode one training batch and count the label tokens that are not -100: 0 means the "
               "template or a completion-only collator masks everything (a response template that never matches, "
               "a max length that cuts every answer off).",
               "Check the loss's weight and scale settings for a 0 (a loss coefficient, beta or a weight set to 0)."]
        ev = self._first_and_last(rows)
        found = self.make(message=msg, fix=fix, evidence=ev, count=len(rows), seq=s.seq(rows[0]),
                          title="loss and grad_norm are 0 in every logged step: no training signal",
                          severity=Severity.warning, confidence=EXCERPT_CONFIDENCE if few else None)
        return [replace(found, verify="loss and grad_norm above 0 from the first logged steps")]

    def _first_and_last(self, rows: list[int]) -> list:
        """The evidence of a rows-without-rewards finding: the first logged row and, when another, the last."""
        keys = ("loss", "grad_norm", "learning_rate")
        return [self.s.evidence(i, keys) for i in dict.fromkeys((rows[0], rows[-1]))]
