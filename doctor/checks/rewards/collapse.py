"""GD613: one reward function falls towards 0 (while another rises: the policy trades one for the other)."""
from __future__ import annotations

import math
import sys

from ...engine.state import RunState
from ...model import Finding, Severity
from .._series import SeriesRule, fmt
from ._flags import as_list, flag_name
from ._view import RewardView


def kendall_tau(vals: list[float]) -> float:
    n = len(vals)
    if n < 2:
        return 0.0
    np = sys.modules.get("numpy")   # a long run's rows were read as columns: numpy is there (never imported here)
    if np is not None and n >= 32 and all(type(v) is float for v in vals):
        # the same signs of the same float64 differences, counted over the upper triangle (400 points: 80,000 pairs,
        # ~20 ms in the loop below)
        a = np.asarray(vals, dtype=np.float64)
        with np.errstate(all="ignore"):   # inf - inf is nan, counted neither way, as in the loop
            d = a[None, :] - a[:, None]   # d[i, j] = vals[j] - vals[i]
        upper = np.triu(np.ones((n, n), dtype=bool), 1)
        conc, disc = int(np.count_nonzero((d > 0) & upper)), int(np.count_nonzero((d < 0) & upper))
    else:
        conc = disc = 0
        for i in range(n):
            for j in range(i + 1, n):
                d = vals[j] - vals[i]
                if d > 0:
                    conc += 1
                elif d < 0:
                    disc += 1
    pairs = n * (n - 1) / 2
    return (conc - disc) / pairs if pairs else 0.0


def trend(vals: list[float]) -> tuple[float, float, float] | None:
    """(early mean, late mean, tau) of a series; tau on at most 400 evenly spaced points."""
    if len(vals) < 2:
        return None
    k = max(1, len(vals) // 4)
    early = sum(vals[:k]) / k
    late = sum(vals[-k:]) / k
    if len(vals) > 400:
        step = len(vals) / 400
        vals = [vals[int(i * step)] for i in range(400)]
    return early, late, kendall_tau(vals)


class RewardCollapse(SeriesRule):
    """GD613: one reward function falls towards 0 (while another rises: the policy trades one for the other)."""

    series_keys = ("reward", "reward_std", "frac_reward_zero_std")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        rv = RewardView(s, ctx.run)
        if rv.n < 2 or len(rv.names) == 0:
            return []
        series = {}
        for name in rv.names:
            pts = [(k, v) for k, v in enumerate(rv.means(name)) if v is not None and not math.isnan(v)]
            if len(pts) >= 2:
                series[name] = pts
        falling, rising = [], []
        for name, pts in series.items():
            vals = [v for _, v in pts]
            t = trend(vals)
            if t is None:
                continue
            early, late, tau = t
            if len(vals) <= 3:
                strictly_down = all(b < a for a, b in zip(vals, vals[1:]))
                strictly_up = all(b > a for a, b in zip(vals, vals[1:]))
                # towards zero: a reward that ends far below 0 has not collapsed to it (rewards can be negative)
                if strictly_down and early > 0.05 and (early - late) >= 0.2 * early and late > -0.1 * early:
                    falling.append((name, vals[0], vals[-1], pts))
                elif strictly_up and (late - early) >= 0.05 and (late - early) >= 0.1 * abs(early):
                    rising.append(name)
            else:
                peak = max(vals[: max(2, len(vals) // 2)])
                if (tau <= -0.5 and early > 0.05 and -0.1 * early < late <= 0.5 * early) or \
                        (peak > 0.1 and early > 0 and abs(late) <= 0.1 * peak):
                    falling.append((name, early, late, pts))
                elif tau >= 0.4 and late > early:
                    rising.append(name)
        if not falling:
            return []
        if len(rv.names) > 1 and not rising and all(len(p) <= 3 for _, _, _, p in falling):
            return []  # two or three points of one falling reward alone are noise
        name, a, b, pts = falling[0]
        n_pts = len(pts)
        first_i, last_i = rv.idx[pts[0][0]], rv.idx[pts[-1][0]]
        kind = "fell" if n_pts <= 3 else "fell on average"
        msg = (f"rewards/{name} {kind} from {fmt(a)} to {fmt(b)} over {n_pts} logged steps "
               f"({s.span(first_i, last_i)})")
        if rising:
            msg += (f" while {', '.join('rewards/' + r for r in rising)} rose: the policy is optimising the easier "
                    f"reward at the expense of this one")
        msg += "."
        if abs(b) <= 0.02:
            msg += " It has collapsed to about 0."
        fix = []
        fl = flag_name(name)
        if fl in ("accuracy", "accuracy_reward"):
            fix.append("Log completions (--log_completions true) and run the accuracy reward offline on them next to "
                       "the gold 'solution' column: check whether the parser or the model's answers fail.")
        else:
            fix.append(f"Log completions (--log_completions true) and check them against the '{fl}' reward offline.")
        if rising:
            w = as_list(ctx.run.args.get("reward_weights"))
            fix.append(f"Weight the falling reward higher with --reward_weights (one per reward function, in "
                       f"--reward_funcs order{'; now ' + ' '.join(w) if w else ''}) so that the easier "
                       f"{', '.join(rising)} cannot dominate the advantage.")
        fix.append("Make sure the prompt asks for the answer format the reward parses (e.g. <answer>...</answer> or "
                   "\\boxed{}); lower --learning_rate if the drop started right after training began.")
        keys = [f"rewards/{name}/mean" if s.rstd.get(name) is not None else f"rewards/{name}"] + [
            f"rewards/{r}/mean" if s.rstd.get(r) is not None else f"rewards/{r}" for r in rising][:3]
        ev = [s.evidence(first_i, keys), s.evidence(last_i, keys)]
        return [self.make(message=msg, fix=fix, evidence=ev, count=n_pts, seq=s.seq(first_i),
                          severity=Severity.warning)]
