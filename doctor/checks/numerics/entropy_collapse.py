"""GD626: policy entropy collapses (ms-swift logs entropy/mean with --log_entropy true)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from .._series import SeriesRule, fmt
from .kl_spike import finite


class EntropyCollapse(SeriesRule):
    """GD626: the last quarter's mean entropy is a small fraction of the first quarter's, and small in absolute terms."""

    series_keys = ("entropy/mean",)
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        vals = finite(s.col("entropy/mean"))
        if len(vals) < int(o.get("min_steps", 8)):
            return []
        q = max(1, len(vals) // 4)
        early = sum(v for _, v in vals[:q]) / q
        late = sum(v for _, v in vals[-q:]) / q
        if early <= 0 or late > float(o.get("fraction", 0.25)) * early or late > float(o.get("floor", 0.1)):
            return []
        i0, i1 = vals[0][0], vals[-1][0]
        temp = ctx.run.args.get("temperature")
        msg = (f"entropy/mean fell from {fmt(early)} (mean of the first {q} logged steps) to {fmt(late)} (the last {q}), "
               f"{fmt(100 * late / early, 3)} % of where it started: the policy now puts almost all probability on one "
               f"token at each position, so the completions of a group become alike, reward_std goes to 0 and GRPO "
               f"stops learning.")
        fix = ["Use clip-higher (DAPO): --epsilon_high 0.28 keeps low-probability tokens able to grow.",
               f"Sample with more spread: --temperature 1.0 (now {temp if temp is not None else 'the default'}).",
               "Lower --learning_rate; train only on high-entropy tokens with --top_entropy_quantile 0.2 "
               "(ms-swift >= 3.6), or stop at the last checkpoint before the collapse."]
        ev = [s.evidence(i0, ("entropy/mean",)), s.evidence(i1, ("entropy/mean",))]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=s.seq(i1))]
