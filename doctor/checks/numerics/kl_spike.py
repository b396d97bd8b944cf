"""GD625: a KL spike measured against the run's own rolling mean and standard deviation."""
from __future__ import annotations

import math

from ...engine.state import RunState
from ...model import Finding
from .._numbers import now
from .._series import SeriesRule, fmt


def finite(col: list[float | None]) -> list[tuple[int, float]]:
    """(row index, value) of the finite values of a column."""
    return [(i, v) for i, v in enumerate(col) if v is not None and math.isfinite(v)]


def spikes(vals: list[tuple[int, float]], window: int, min_history: int, sigmas: float, ratio: float,
           floor: float) -> list[tuple[int, float, float, float]]:
    """(row, value, rolling mean, rolling std) of each value above mean + sigmas x std of the ``window`` values
    before it (at least ``min_history`` of them), at least ``ratio`` x that mean and at least ``floor``. The std
    has a floor of 10 % of the mean, so a perfectly flat history does not make every wiggle a spike."""
    out = []
    # a value below the floor is never a spike: skipped unread, unless a value is so large that its square
    # overflows or no history is asked for (the arithmetic below then raises, as it did before this short cut)
    skip = min_history > 0 and window > 0 and (not vals or max(abs(v) for _, v in vals) < 1e150)
    for k in range(min_history, len(vals)):
        if skip and vals[k][1] < floor:
            continue
        hist = [v for _, v in vals[max(0, k - window):k]]
        mu = sum(hist) / len(hist)
        sd = math.sqrt(sum((v - mu) ** 2 for v in hist) / len(hist))
        sd = max(sd, 0.1 * abs(mu))
        i, v = vals[k]
        if v >= floor and v >= ratio * mu and v > mu + sigmas * sd:
            out.append((i, v, mu, sd))
    return out


class KlSpike(SeriesRule):
    """GD625: kl far above its own recent level (rolling mean + N standard deviations)."""

    series_keys = ("kl",)
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        vals = finite(s.col("kl"))
        found = spikes(vals, int(o.get("window", 20)), int(o.get("min_history", 8)), float(o.get("sigmas", 6.0)),
                       float(o.get("ratio", 3.0)), float(o.get("floor", 0.05)))
        if not found:
            return []
        i, v, mu, sd = max(found, key=lambda t: (t[1] - t[2]) / t[3] if t[3] else math.inf)
        first = found[0][0]
        beta = ctx.run.args.get("beta")
        msg = (f"kl reached {fmt(v)} at {s.label(i)}, against a rolling mean of {fmt(mu)} (std {fmt(sd)}) over the "
               f"steps before it: {fmt((v - mu) / sd if sd else math.inf, 3)} standard deviations above the run's own "
               f"level ({len(found)} such step(s), the first at {s.label(first)}). A sudden KL jump means one update "
               f"moved the policy far from the reference: usually a too large learning rate or gradient, or a batch "
               f"whose advantages are mostly noise.")
        fix = [f"Lower --learning_rate ({now(ctx.run.args.get('learning_rate'))}) and clip gradients harder "
               f"(--max_grad_norm 0.5).",
               f"Keep the policy nearer the reference: raise --beta ({now(beta)}).",
               "Look at the completions of the spike step (--log_completions true): a few very long or degenerate "
               "completions often carry the jump."]
        ev = [s.evidence(j, ("kl",)) for j in sorted({first, i})]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=s.seq(first))]
