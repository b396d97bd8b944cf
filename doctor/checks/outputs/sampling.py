"""GD643 / GD644: sampling settings that make groups degenerate (one class, the rule's [options] pick
which setting it judges)."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule
from ...signals import Completions, Metrics
from .._runargs import arg_float, more_generations
from .._series import fmt


class SamplingConfig(Rule):
    """GD643 (num_generations < 4) / GD644 (temperature < 0.3): settings that make groups degenerate.

    Only reported for runs that trained (metrics or completions were seen): on a run that failed
    before training these would be noise next to the real error."""

    kinds = frozenset({Metrics, Completions})

    def __init__(self, meta):
        super().__init__(meta)
        self.trained = False
        self.what = meta.options.get("what", "num_generations")

    def feed(self, signal: Any) -> None:
        self.trained = True

    def feed_many(self, signals: list[Any]) -> None:
        self.trained = self.trained or bool(signals)

    def finish(self, ctx: RunState) -> list[Finding]:
        if not (self.trained or ctx.metrics_steps or ctx.preflight):
            return []
        run = ctx.run
        if self.what == "num_generations":
            g = run.int_arg("num_generations")
            if g is None or g < 2 or g >= 4:
                return []
            msg = (f"--num_generations {g}: GRPO compares each completion with only {g - 1} other(s) of the same "
                   f"prompt, so the group mean and std are noisy and many groups end up with equal rewards. 4 or more "
                   f"gives a stable advantage estimate.")
            fix = [more_generations(run, g, 4) + "; GRPO recipes commonly use 4 or more, with --temperature about 0.9."]
            return [self.make(message=msg, fix=fix, severity=Severity.warning)]
        temp = arg_float(run, "temperature")
        if temp is None or temp >= 0.3:
            return []
        g = run.int_arg("num_generations")
        msg = (f"--temperature {fmt(temp)}: sampling is close to greedy, so the {g or 'num_generations'} completions "
               f"of a prompt are nearly identical and get the same reward (zero advantage).")
        fix = ["Use --temperature 0.9-1.0 for GRPO rollouts (ms-swift's default is 0.9); lower it only for "
               "evaluation."]
        return [self.make(message=msg, fix=fix, severity=Severity.warning)]
