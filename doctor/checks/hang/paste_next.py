"""What a words-only finding asks the person to paste next, less what the paste already holds: a request for step
timings beside "each step takes 20 minutes" is a request the person has already met (the launch command asked for
beside a pasted one is dropped for every finding by doctor/claims.py without_given_requests)."""
from __future__ import annotations

from ... import lazyre
from ...signals import LogLine

_TIMINGS = "the step timings (the bar's s/it or the metric rows' step time)"
# a step's duration said in words or numbers: "each step takes 20 minutes", "80 seconds/step", "24.23s/it",
# "每个step需要10分钟", verl's timing_s/<phase> keys
_TIMING_SAID = lazyre.compile(
    r"(?i)\b\d+(?:\.\d+)?\s*(?:s|secs?|seconds?|mins?|minutes?|h|hours?)\s*(?:/|per |an? |each )\s*(?:it|step|iteration)\b|"
    r"\b(?:each|every|one|a|per|the first)\s+(?:training\s+)?(?:step|iteration)s?\s+(?:takes?|took|costs?|needs?|is|lasts?)"
    r"\s+(?:about\s+|around\s+|nearly\s+|over\s+|~)?\d|\btiming_s/\w+|"
    r"每(?:个|一)?\s*(?:step|步|轮)[^。\n]{0,8}\d+(?:\.\d+)?\s*(?:秒|分钟|小时|s\b|min)")


_COMPLETIONS = "two or three completions as the log prints them, with the sampling settings"
_TAIL = 32        # characters of a line's end compared: the repeated text, whatever counter or label opens it
_REPEATS = 3


def repetition_shown(lines: list[LogLine]) -> tuple[LogLine, int] | None:
    """(a line, how many lines end the same way) when the paste's own lines repeat one text three times or more (a
    completion that loops: 'I looked at the second one. It read "It's a beautiful night ..."'); else None."""
    seen: dict[str, list[LogLine]] = {}
    for ln in lines:
        text = ln.text.strip()
        if len(text) >= 2 * _TAIL:
            seen.setdefault(text[-_TAIL:], []).append(ln)
    best = max(seen.values(), key=len, default=[])
    return (best[0], len(best)) if len(best) >= _REPEATS else None


def still_missing(nxt: str, category: str, lines: list[LogLine]) -> str:
    """``nxt`` with what the paste holds asked for no more."""
    if category == "output-degenerate" and _COMPLETIONS in nxt and repetition_shown(lines) is not None:
        nxt = nxt.replace(_COMPLETIONS, "the sampling settings and the chat template the run used (the pasted output "
                                        "already shows the repetition)")
    if category == "slow-training" and _TIMINGS in nxt and any(_TIMING_SAID.search(ln.text) for ln in lines):
        nxt = nxt.replace(_TIMINGS, "where one step's time goes (the trainer's per-phase timings, or `py-spy dump "
                                    "--pid PID` taken during a slow step)")
    return nxt
