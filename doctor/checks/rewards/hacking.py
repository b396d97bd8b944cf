"""GD615: signs of reward hacking: the reward rises while completions run to the length limit, or while one
format-only reward supplies most of it and the others do not rise."""
from __future__ import annotations

import math

from ...engine.state import RunState
from ...model import Finding
from .._series import SeriesRule, fmt
from .collapse import trend


def _finite(col: list[float | None]) -> list[float]:
    return [v for v in col if v is not None and math.isfinite(v)]


def _is_format(name: str) -> bool:
    low = name.lower()
    return "format" in low or "tag" in low


class RewardHacking(SeriesRule):
    """GD615: the reward rises with the completion length up to the limit, or with a format-only reward alone."""

    series_keys = ("reward", "completions/mean_length", "completions/clipped_ratio", "completion_length")

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        reward = _finite(s.col("reward"))
        if len(reward) < int(o.get("min_steps", 8)):
            return []
        tau_min = float(o.get("tau", 0.4))
        t = trend(reward)
        if t is None or t[2] < tau_min or t[1] <= t[0]:
            return []
        msgs: list[str] = []
        length = _finite(s.col("completions/mean_length")) or _finite(s.col("completion_length"))
        clipped = _finite(s.col("completions/clipped_ratio"))
        lt = trend(length) if len(length) >= len(reward) // 2 else None
        if lt is not None and lt[2] >= tau_min and lt[1] >= float(o.get("length_growth", 1.5)) * lt[0] and clipped:
            q = max(1, len(clipped) // 4)
            late_clip = sum(clipped[-q:]) / q
            if late_clip >= float(o.get("clipped", 0.5)):
                msgs.append(f"completions/mean_length grew from {fmt(lt[0])} to {fmt(lt[1])} tokens and "
                            f"{fmt(100 * late_clip, 3)} % of the completions of the last steps hit "
                            f"max_completion_length: the reward pays for length, not for answers")
        fmt_names = [n for n in s.rmean if _is_format(n)]
        others = [n for n in s.rmean if not _is_format(n)]
        # a task reward that never scores (all 0) is a broken reward function (GD612), not a policy gaming the format
        scored = any(v != 0 for n in others for v in _finite(s.rmean[n]))
        if fmt_names and others and scored:
            late = {}
            rising_fmt = []
            for n, col in s.rmean.items():
                tr = trend(_finite(col))
                if tr is None:
                    continue
                late[n] = tr[1]
                if n in fmt_names and tr[2] >= tau_min and tr[1] > tr[0]:
                    rising_fmt.append(n)
                elif n in others and tr[2] >= tau_min and tr[1] > tr[0]:
                    rising_fmt = []
                    break
            total = sum(abs(v) for v in late.values())
            share = sum(abs(late[n]) for n in rising_fmt if n in late) / total if total else 0.0
            if rising_fmt and share >= float(o.get("format_share", 0.8)):
                msgs.append(f"the format-only reward(s) {', '.join(rising_fmt)} rose and supply {fmt(100 * share, 3)} % "
                            f"of the reward in the last steps while {', '.join(others)} did not rise: the policy "
                            f"learns the tags, not the task")
        if not msgs:
            return []
        msg = (f"reward rose from {fmt(t[0])} to {fmt(t[1])} (first and last quarter of {len(reward)} logged steps), "
               f"but " + "; and ".join(msgs) + ".")
        fix = ["Read the completions of the last steps (--log_completions true): check that high-reward completions "
               "actually solve the task.",
               "Against length: the soft_overlong reward (--reward_funcs ... soft_overlong --soft_cache_length N) or "
               "the cosine reward; against a format-only reward: lower its --reward_weights or gate it on a "
               "correct answer."]
        last = s.n - 1
        ev = [s.evidence(0, ("reward", "completions/mean_length", "completions/clipped_ratio")),
              s.evidence(last, ("reward", "completions/mean_length", "completions/clipped_ratio"))]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=s.seq(last))]
