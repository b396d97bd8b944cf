"""Column functions of the metric rules (issue 32): a Series column (floats and None) as float64 with its mask, and
the shapes the rules look for, read over whole columns: flat groups, the longest run of a condition.

Pure: numpy arrays in, arrays or numbers out. ``available()`` says whether numpy is there and the column path is on
(engine/columns.ENABLED); without it the rules keep their row-by-row loops, which the equivalence test compares.
"""
from __future__ import annotations

from itertools import repeat
from operator import is_not
from typing import Any

from ..engine import columns

EPS_STD = 1e-6            # reward_std at or below this is a flat group (as _series.EPS_STD)
FRAC_FLAT = 0.999         # frac_reward_zero_std at or above this: every group flat


def available(n: int | None = None) -> bool:
    """Whether the column path is taken (for a series of ``n`` rows: see engine/columns.worth)."""
    return columns.ENABLED and (n is None or columns.worth(n)) and columns.load_numpy() is not None


def column(xs: list[float | None]) -> tuple[Any, Any]:
    """(values, present) of a Series column: float64 with NaN where a row has no value, and the rows that have one
    (a logged NaN is present)."""
    np = columns.load_numpy()
    return np.array(xs, dtype=np.float64), np.fromiter(map(is_not, xs, repeat(None)), bool, len(xs))


def flat_groups(rstd: Any, rstd_ok: Any, frac: Any, frac_ok: Any) -> Any:
    """Per row, whether every group of completions got one reward: reward_std at or below EPS_STD where it is logged
    as a number, else frac_reward_zero_std at least FRAC_FLAT where that is, else not known to be flat."""
    np = columns.load_numpy()
    with np.errstate(invalid="ignore"):
        by_std = rstd_ok & ~np.isnan(rstd)
        by_frac = frac_ok & ~np.isnan(frac)
        return np.where(by_std, rstd <= EPS_STD, by_frac & (frac >= FRAC_FLAT))


def longest_run(mask: Any) -> tuple[int, int]:
    """(length, index of its last row) of the first longest run of True; (0, -1) when there is none."""
    np = columns.load_numpy()
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if not starts.size:
        return 0, -1
    j = int((stops - starts).argmax())   # argmax: the first of equal lengths, as a left-to-right count keeps
    return int(stops[j] - starts[j]), int(stops[j] - 1)
