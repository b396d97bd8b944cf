"""What the reward columns of the metric series say, shared by the series rules of rules/rewards/.

Key variants (swift-notes §3): ``reward``, ``reward_std``, ``frac_reward_zero_std`` (3.7+),
``rewards/<Name>/mean`` and ``/std`` (3.3+), ``rewards/<Name>`` (3.1-3.2 and trl <= 0.16 / open-r1),
``completions/clipped_ratio`` and ``completions/mean_length`` (3.3+; ``response_clip_ratio`` /
``completion_length`` before).

GRPO facts the checks rely on: the advantage of a completion is its reward minus the mean of its
group of num_generations (divided by the group std by default), so a group whose completions all get
the same reward contributes nothing; when every group is flat (reward_std 0, frac_reward_zero_std 1)
loss and grad_norm are 0 by construction. ``reward_std`` is the mean within-group std;
``rewards/<Name>/std`` is the std over the whole batch.
"""
from __future__ import annotations

import math

from ...sources.swiftconfig import RunConfig
from .._columns import available, column, flat_groups, longest_run
from .._series import EPS_STD, Series, fmt, longest_streak
from ._flags import as_list

ALWAYS_ZERO_MIN = 5       # logged steps before "this reward function is always 0" is worth saying
# in a pasted excerpt every row the user chose to show is the paste's whole evidence: even one row where a function is
# 0 while another scores is worth saying, at possible and with what so few rows cannot show
PASTED_ZERO_MIN = 1
EPS_ZERO = 1e-9


REWARD_KEYS = ("loss", "reward", "reward_std", "frac_reward_zero_std", "grad_norm", "completions/mean_length",
               "completions/clipped_ratio", "completion_length", "response_clip_ratio", "epoch")


class RewardView:
    """What the reward columns of a series say. Computed once per rule at finish."""

    def __init__(self, s: Series, run: RunConfig):
        self.s = s
        self.run = run
        rstd, frac, rew = s.col("reward_std"), s.col("frac_reward_zero_std"), s.col("reward")
        if s.n and available(s.n):   # no rows (or a few): numpy is not even imported
            self._flat_columns(rstd, frac, rew)
        else:   # no numpy: the same row by row
            idx = [i for i in range(s.n) if rstd[i] is not None or frac[i] is not None or rew[i] is not None
                   or any(c[i] is not None for c in s.rmean.values())]
            self.idx = idx
            self.flat = []
            for i in idx:
                if rstd[i] is not None and not math.isnan(rstd[i]):
                    self.flat.append(rstd[i] <= EPS_STD)
                elif frac[i] is not None and not math.isnan(frac[i]):
                    self.flat.append(frac[i] >= 0.999)
                else:
                    self.flat.append(False)
            self.known_flat = [rstd[i] is not None or frac[i] is not None for i in idx]
            self.streak, self.streak_end = longest_streak(self.flat)
        idx = self.idx
        self.n = len(idx)

        def total(i: int) -> float | None:
            if rew[i] is not None:
                return rew[i]
            vals = [c[i] for c in s.rmean.values() if c[i] is not None]
            return sum(vals) if vals else None
        self.reward = [total(i) for i in idx]
        self.zero = [r is not None and abs(r) <= EPS_ZERO for r in self.reward]
        self.names = list(s.rmean)
        self.all_flat = self.n > 0 and all(self.flat) and all(self.known_flat)
        self.all_zero = self.n > 0 and all(self.zero) and self.all_flat

    def _flat_columns(self, rstd: list[float | None], frac: list[float | None], rew: list[float | None]) -> None:
        """idx, flat, known_flat and the longest flat streak over the columns (checks/_columns.py)."""
        rstd_v, rstd_ok = column(rstd)
        frac_v, frac_ok = column(frac)
        logged = rstd_ok | frac_ok | column(rew)[1]
        for c in self.s.rmean.values():
            logged |= column(c)[1]
        at = logged.nonzero()[0]
        flat = flat_groups(rstd_v[at], rstd_ok[at], frac_v[at], frac_ok[at])
        self.idx = at.tolist()
        self.flat = flat.tolist()
        self.known_flat = (rstd_ok | frac_ok)[at].tolist()
        self.streak, self.streak_end = longest_run(flat)

    def means(self, name: str) -> list[float | None]:
        col = self.s.rmean.get(name, [])
        return [col[i] if i < len(col) else None for i in self.idx]

    def no_reward_funcs(self, table: bool = False) -> bool:
        """ms-swift >= 4.4 without --reward_funcs: reward keys present but no rewards/<Name>, all 0 and flat. Never
        from a pasted table (``table``: RunState.table_metrics): its columns are the ones the user chose."""
        if self.n == 0 or table or self.names or not self.all_zero:
            return False
        if as_list(self.run.args.get("reward_funcs")) or as_list(self.run.args.get("reward_model")):
            return False
        if self.run.args.get("use_gym_env"):
            return False
        return True

    def always_zero(self, min_rows: int = ALWAYS_ZERO_MIN) -> list[str]:
        out = []
        for name in self.names:
            vals = [v for v in self.means(name) if v is not None]
            if len(vals) >= min_rows and all(abs(v) <= EPS_ZERO for v in vals):
                out.append(name)
        return out


def truncation_note(s: Series, run: RunConfig, idx: list[int]) -> str | None:
    clip = s.col("completions/clipped_ratio")
    if not any(clip[i] is not None for i in idx):
        clip = s.col("response_clip_ratio")
    vals = [clip[i] for i in idx if clip[i] is not None]
    if not vals:
        return None
    mean_clip = sum(vals) / len(vals)
    if mean_clip < 0.5:
        return None
    L = run.int_arg("max_completion_length")
    col = s.col("completions/mean_length")   # once: col() of a key the view lacks builds a list
    mlen = [v for v in (col[i] for i in idx) if v is not None]
    if not mlen:
        col = s.col("completion_length")
        mlen = [v for v in (col[i] for i in idx) if v is not None]
    lens = f", mean length {fmt(sum(mlen) / len(mlen))}" if mlen else ""
    cap = f" of max_completion_length {L}" if L else ""
    return (f"completions/clipped_ratio averaged {fmt(mean_clip, 2)} over these steps{lens}{cap}: most "
            f"completions were cut before they could finish, and a cut completion cannot close a format "
            f"(e.g. </answer>) or state a final answer")


def raise_length(run: RunConfig) -> str:
    L = run.int_arg("max_completion_length")
    if not L:
        return ("Raise --max_completion_length so that completions can finish (its default is 512 in ms-swift, 256 "
                "in TRL).")
    new = 512 if L < 256 else 2 * L
    return (f"Raise --max_completion_length from {L} to {new} or more so that completions can finish "
            f"(time and memory per step grow roughly linearly with it).")
