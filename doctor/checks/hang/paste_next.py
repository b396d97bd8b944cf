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


def still_missing(nxt: str, category: str, lines: list[LogLine]) -> str:
    """``nxt`` with what the paste holds asked for no more."""
    if category == "slow-training" and _TIMINGS in nxt and any(_TIMING_SAID.search(ln.text) for ln in lines):
        nxt = nxt.replace(_TIMINGS, "where one step's time goes (the trainer's per-phase timings, or `py-spy dump "
                                    "--pid PID` taken during a slow step)")
    return nxt
