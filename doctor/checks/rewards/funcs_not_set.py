"""GD611: ms-swift >= 4.4 without --reward_funcs trains silently with reward 0."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...sources.swiftconfig import RunConfig
from .._series import SeriesRule
from ._flags import BUILTIN_ORMS, as_list
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
    # one row is evidence enough when the run's own arguments (GRPO, no reward of any kind) say why it is 0
    sev = Severity.error if rv.n >= 2 or no_reward_configured(run) else Severity.warning
    keys = ("reward", "reward_std", "frac_reward_zero_std", "loss", "grad_norm")
    ev = [s.evidence(first, keys)] + ([s.evidence(last, keys)] if last != first else [])
    return rule.make(message=msg, fix=fix, evidence=ev, count=rv.n, seq=s.seq(first), severity=sev)


def no_reward_configured(run: RunConfig) -> bool:
    """A GRPO command with nothing to score completions: no reward function, reward model, gym environment or teacher
    (a teacher makes it on-policy distillation, which needs no reward)."""
    if str(run.get("rlhf_type", "")).lower() != "grpo":
        return False
    return not any(as_list(run.args.get(k)) for k in ("reward_funcs", "reward_model", "teacher_model",
                                                       "teacher_model_server")) and not _on(run.args.get("use_gym_env"))


def _on(v: object) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1"))


def preflight_finding(rule: Rule, run: RunConfig) -> Finding:
    ver = run.versions.get("ms-swift")
    msg = (f"The command runs GRPO (--rlhf_type grpo) with no --reward_funcs, --reward_model, --use_gym_env or "
           f"--teacher_model: ms-swift {ver or '>= 4.4 (the version is unknown: assumed recent)'} does not stop on "
           f"that (up to 4.3 it raised 'You must specify reward_funcs or reward_model'); it trains with reward 0 and "
           f"every advantage 0, so the model learns nothing from GRPO.")
    fix = ["Add --reward_funcs with built-in rewards (" + ", ".join(BUILTIN_ORMS) + "), e.g. --reward_funcs accuracy "
           "format, and/or --reward_model <dir>; custom rewards are registered with orms['name'] in an "
           "--external_plugins file.",
           "Only a dataset with a teacher_prompt column trains without a reward (on-policy self-distillation): then "
           "pass --ignore GD611."]
    return rule.make(message=msg, fix=fix, evidence=[Evidence("<preflight>", 0, "--rlhf_type grpo")])


class RewardFuncsNotSet(SeriesRule):
    """GD611: ms-swift >= 4.4 without --reward_funcs trains silently with reward 0; preflight names it from the
    command before any GPU time (for an older version preflight predicts GD603's error instead)."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: RunState) -> list[Finding]:
        if ctx.preflight:
            mm = ctx.run.swift_major_minor
            late = mm is None or mm >= (4, 4)
            return [preflight_finding(self, ctx.run)] if late and no_reward_configured(ctx.run) else []
        rv = RewardView(self.s, ctx.run)
        if rv.n == 0 or not rv.no_reward_funcs(ctx.table_metrics):
            return []
        return [_unset_finding(self, rv, ctx.run)]
