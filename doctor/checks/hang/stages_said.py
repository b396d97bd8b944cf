"""Slow steps told in words beside verl's own stage timings of a step (timing_s/gen, timing_s/update_actor...): where
the time goes, read from them, with the stage's own fix in verl's keys (outputs/step_pace.py). Pure: the paste's words
and lines in, the reading out."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...signals import LogLine
from ..outputs.step_pace import VERL_STAGES, stage_fix, stage_times


@dataclass(frozen=True)
class StageReading:
    message: str
    fix: list[str]
    title: str
    verify: str
    line: LogLine     # the slowest stage's timing line


def stages_said(said: str, quoted: str, lines: list[LogLine], args: dict[str, Any]) -> StageReading | None:
    """The reading of the pasted stage timings beside words that say the run is slow; None when there are none."""
    times, worst, worst_line = stage_times(lines)
    if worst is None or worst_line is None:
        return None
    seconds, step = times[worst], times.get("step")
    share = f" of a {step:g} s step ({100 * seconds / step:.0f}%, computed)" if step else ""
    others = ", ".join(f"{k} {v:g} s" for k, v in sorted(times.items(), key=lambda kv: -kv[1])
                       if k not in (worst, "step"))
    message = (f"The words of the paste say {said} (`{quoted}`), and its step timings say where the time goes: "
               f"timing_s/{worst} {seconds:g} s{share}, {VERL_STAGES[worst]}" + (f"; then {others}." if others else "."))
    fix = stage_fix(worst, args) or ["Change the stage that dominates first; the timing_s/ values of the next steps "
                                     "show whether it shrank."]
    return StageReading(message, fix, f"Slow steps: verl's {worst} stage takes most of each step",
                        f"the next steps' timing_s/{worst} is lower than {seconds:g} s", worst_line)
