"""What a words-only finding asks the person to paste next, less what the paste already holds: a request for step
timings beside "each step takes 20 minutes" is a request the person has already met (the launch command asked for
beside a pasted one is dropped for every finding by doctor/claims.py without_given_requests)."""
from __future__ import annotations

from ... import lazyre
from ...signals import LogLine
from .symptom_words import PASTE_NEXT

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


# the metric a words-only reading rests on, and what of it contradicts the words: a gradient norm said to be 0 beside
# rows whose grad_norm is never 0; a NaN said beside rows whose loss and grad_norm are all finite
_SAID_METRIC = {"grad-norm-zero": ("grad_norm", "zero"), "loss-nan-or-inf": ("loss", "nonfinite")}
# the part of each of those categories' requests (symptom_words.PASTE_NEXT) that asks for metric rows
_ROWS_ASKED = {"grad-norm-zero": PASTE_NEXT["grad-norm-zero"].removesuffix(" and the launch command"),
               "loss-nan-or-inf": PASTE_NEXT["loss-nan-or-inf"]}


def rows_beside(category: str, facts: dict) -> tuple[str, str | None] | None:
    """(a sentence, the request that replaces the rows asked for, or None) when the paste's own metric rows
    (``facts``: RunState.metric_facts, key -> MetricFacts) log the metric the words speak of; else None."""
    key, state = _SAID_METRIC.get(category, (None, None))
    fact = facts.get(key) if key else None
    if fact is None or not fact.logged:
        return None
    count = fact.zero if state == "zero" else fact.nonfinite
    if category == "loss-nan-or-inf" and "grad_norm" in facts:
        count += facts["grad_norm"].nonfinite
    rows = f"{fact.logged} row{'s' if fact.logged != 1 else ''}"
    if count:
        return (f"The paste's rows show it too ({key} {'0' if state == 'zero' else 'NaN or inf'} in {count} of "
                f"{rows}).", None)
    shown = f" (one of them logs {fact.example:.4g})" if fact.example is not None else ""
    return (f"The paste's own metric rows do not show it: {key} is logged in {rows}, never "
            f"{'0' if state == 'zero' else 'NaN or inf'}{shown}; they may come from before the failure.",
            f"the metric rows where {key} is {'0' if state == 'zero' else 'NaN'}, with the rows just before them")


def asked_rows(nxt: str, category: str, beside: tuple[str, str | None] | None) -> str:
    """``nxt`` with the rows asked for replaced where the paste holds rows of the metric the words speak of
    (``beside``: rows_beside of the same category)."""
    if beside is None:
        return nxt
    rows, wanted = _ROWS_ASKED[category], beside[1]
    if wanted is not None:
        return nxt.replace(rows, wanted)
    if category == "grad-norm-zero":   # rows like the ones held agree with the words: left to ask, the launch command
        return nxt.replace(rows + " and ", "").replace(rows, "the launch command")
    return nxt   # (the rows before the first NaN are asked for still: the paste may not hold them)
