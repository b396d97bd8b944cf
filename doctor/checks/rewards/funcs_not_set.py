"""GD611: ms-swift >= 4.4 without --reward_funcs trains silently with reward 0."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule
from ...sources.swiftconfig import RunConfig
from .._series import SeriesRule
from ._view import REWARD_KEYS, RewardView


def _unset_finding(rule: Rule, rv: RewardView, run: RunConfig) -> Finding:
    s = rv.s
    first, last = rv.idx[0], rv.idx[-1]
    msg = (f"No reward function is configured: reward and reward_std are 0 in all {rv.n} logged step(s) "
           f"({s.span(first, last)}) and there is no rewards/<name> metric at all. ms-swift >= 4.4 no longer "
           f"stops with 'You must specify reward_funcs or reward_model'; it trains with every advantage 0, so "
           f"the model learns nothing from GRPO.")
    fix = ["Add --reward_funcs with built-in rewards (accuracy, format, cosine, repetition, soft_overlong, math, "
           "react_format, toolbench), e.g. --reward_funcs accuracy format, and/or --reward_model <dir>; custom "
           "rewards are registered with orms['name'] in an --external_plugins file.",
           "The accuracy reward needs a 'solution' column in the dataset (every extra column reaches the reward "
           "functions as a keyword argument)."]
    sev = Severity.error if rv.n >= 2 else Severity.warning
    keys = ("reward", "reward_std", "frac_reward_zero_std", "loss", "grad_norm")
    ev = [s.evidence(first, keys)] + ([s.evidence(last, keys)] if last != first else [])
    return rule.make(message=msg, fix=fix, evidence=ev, count=rv.n, seq=s.seq(first), severity=sev)


class RewardFuncsNotSet(SeriesRule):
    """GD611: ms-swift >= 4.4 without --reward_funcs trains silently with reward 0."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: RunState) -> list[Finding]:
        rv = RewardView(self.s, ctx.run)
        if rv.n == 0 or not rv.no_reward_funcs(ctx.table_metrics):
            return []
        return [_unset_finding(self, rv, ctx.run)]
