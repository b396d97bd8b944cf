"""GD642: groups whose completions are nearly identical (within-group reward spread tiny next to the
batch spread) while the policy drifts fast (KL jumps, large grad_norm)."""
from __future__ import annotations

import math

from ...engine.state import RunState
from ...model import Finding, Severity
from .._runargs import arg_float, more_generations
from .._series import SeriesRule, fmt


class LowGroupDiversity(SeriesRule):
    """GD642: within-group reward spread tiny next to the batch spread, with a fast-drifting policy (KL jump)."""

    series_keys = ("reward", "reward_std", "kl", "grad_norm", "learning_rate", "completions/mean_length")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        run = ctx.run
        rstd, kl, gn = s.col("reward_std"), s.col("kl"), s.col("grad_norm")
        rows = []
        for i in range(s.n):
            if rstd[i] is None or math.isnan(rstd[i]):
                continue
            batch = [c[i] for c in s.rstd.values() if c[i] is not None and not math.isnan(c[i])]
            if not batch:
                continue
            b = max(batch)
            rows.append((i, rstd[i], b))
        if len(rows) < 2:
            return []
        low = [(i, r, b) for i, r, b in rows if b >= 0.05 and 0 < r <= 0.2 * b]
        if len(low) * 2 < len(rows):
            return []
        # KL jump: from about 0 to a large value between consecutive logged steps
        jump = None
        kl_rows = [i for i in range(s.n) if kl[i] is not None and not math.isnan(kl[i])]
        for a, b in zip(kl_rows, kl_rows[1:]):
            if kl[b] - kl[a] >= 0.2 and kl[b] >= 0.3:
                jump = (a, b)
                break
        gmax = max((gn[i] for i in range(s.n) if gn[i] is not None and not math.isnan(gn[i])), default=None)
        if jump is None and (gmax is None or gmax < 10):
            return []
        i0 = low[0][0]
        rs = [r for _, r, _ in low]
        bs = [b for _, _, b in low]
        msg = (f"Within-group reward_std was only {fmt(min(rs))}-{fmt(max(rs))} while the batch-level reward std was "
               f"{fmt(min(bs))}-{fmt(max(bs))} in {len(low)} of {len(rows)} logged steps: the completions of each "
               f"prompt are nearly the same (the scores differ between prompts, not within a group), so the "
               f"normalised advantages are mostly noise.")
        if jump:
            a, b = jump
            msg += f" Meanwhile kl jumped from {fmt(kl[a])} ({s.label(a)}) to {fmt(kl[b])} ({s.label(b)})"
            msg += f" with grad_norm up to {fmt(gmax)}" if gmax is not None else ""
            msg += ": the policy is drifting fast on that noise."
        elif gmax is not None:
            msg += f" grad_norm reached {fmt(gmax)}: large updates driven by that noise."
        mlen = [v for v in s.col("completions/mean_length") if v is not None]
        if mlen and max(mlen) <= 16:
            msg += f" Completions are only {fmt(min(mlen))}-{fmt(max(mlen))} tokens long."
        fix = []
        lr = arg_float(run, "learning_rate")
        lr_seen = next((v for v in s.col("learning_rate") if v), None)
        lr = lr or lr_seen
        tuner = run.tuner()
        if lr:
            fix.append(f"Lower --learning_rate from {fmt(lr)} to {fmt(lr / 10)}"
                       + (" (full-parameter GRPO usually needs about 1e-6)" if tuner == "full" or lr <= 2e-5 else "")
                       + ".")
        else:
            fix.append("Lower --learning_rate substantially (full-parameter GRPO usually needs about 1e-6).")
        beta = arg_float(run, "beta")
        fix.append(f"Keep the policy near the reference: --beta {fmt(beta) if beta is not None else '0.04 (assumed)'}"
                   f" -> {fmt((beta or 0.04) * 2)}, and --max_grad_norm 0.5.")
        g = run.int_arg("num_generations")
        temp = arg_float(run, "temperature")
        fix.append("Make rewards differ within a group: "
                   + (f"{more_generations(run, g)}, " if g else "more generations per prompt (--num_generations 8+), ")
                   + (f"--temperature {fmt(temp)} -> 1.0, " if temp is not None and temp < 0.9 else "")
                   + "and a finer-grained reward (continuous scores instead of a few levels).")
        keys = ["reward", "reward_std"] + [f"rewards/{n}/std" for n in s.rstd][:2] + ["kl", "grad_norm"]
        ev = [s.evidence(i0, keys)]
        if jump:
            ev.append(s.evidence(jump[1], keys))
        sev = Severity.error if jump else Severity.warning
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(low), seq=s.seq(i0), severity=sev)]
