"""GD627: the PPO clip is saturated (a large share of tokens clipped in most steps)."""
from __future__ import annotations

from ...engine.columns import load_numpy
from ...engine.state import RunState
from ...model import Finding
from .._columns import available, column
from .._numbers import now
from .._series import SeriesRule, fmt

KEY = "clip_ratio/region_mean"


def _clipped_columns(col: list[float | None], limit: float) -> tuple[int, list[tuple[int, float]]]:
    """The steps that log a number for the clipped share, and (row, value) of those at or above ``limit``."""
    v, ok = column(col)
    with load_numpy().errstate(invalid="ignore"):
        ok &= v == v
        at = (ok & (v >= limit)).nonzero()[0]
    return int(ok.sum()), [(i, col[i]) for i in at.tolist()]   # the logged floats themselves


class ClipSaturation(SeriesRule):
    """GD627: clip_ratio/region_mean at or above a threshold in most logged steps."""

    series_keys = (KEY, "clip_ratio/high_mean", "clip_ratio/low_mean")
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        col = s.col(KEY)
        limit = float(o.get("threshold", 0.2))
        if s.n and available(s.n):   # no rows (or a few): numpy is not even imported
            logged, high = _clipped_columns(col, limit)
        else:   # no numpy: the same row by row
            vals = [(i, v) for i, v in enumerate(col) if v is not None and v == v]
            logged, high = len(vals), [(i, v) for i, v in vals if v >= limit]
        if logged < int(o.get("min_steps", 4)):
            return []
        if len(high) < float(o.get("share", 0.5)) * logged:
            return []
        run = ctx.run.args
        msg = (f"clip_ratio/region_mean was {fmt(limit)} or more in {len(high)} of {logged} logged steps (up to "
               f"{fmt(max(v for _, v in high))}): that share of the completion tokens had an importance ratio outside "
               f"[1 - epsilon, 1 + epsilon], so their gradient was cut. The updates run far off-policy: each generation "
               f"batch is reused for too many optimizer steps, or the learning rate moves the policy too far per step.")
        fix = [f"Fewer optimizer steps per generation batch: --num_iterations 1 ({now(run.get('num_iterations'))}) "
               f"and a smaller --steps_per_generation / --gradient_accumulation_steps.",
               f"Lower --learning_rate ({now(run.get('learning_rate'))})."]
        ev = [s.evidence(i, (KEY, "clip_ratio/high_mean", "clip_ratio/low_mean")) for i, _ in high[:2]]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=s.seq(high[0][0]))]
