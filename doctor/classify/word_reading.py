"""A primary finding no rule could place (a generic one of category ``other``) given the category its log's words are
closest to (doctor/classify/category_words.py), said as what it is: word statistics, possible. A post-pass over the
ordered findings, like doctor/verdict.py; pure."""
from __future__ import annotations

from dataclasses import replace

from ..engine.state import RunState
from ..model import Finding, Severity
from ..registry import CATEGORY_WORDS

# the fallbacks that say a failure is there without a category: an unrecognised exception, a failure in words, a
# crash whose exception is not in the log, a paste with nothing recognised
GENERIC = frozenset({"GD999", "GD326", "GD327", "GD328", "GD329", "GD330"})


def texts_of(state: RunState) -> list[str]:
    """The run's kept lines (the last lines of each log) and its command texts, as the model was trained on them."""
    out = ["\n".join(line.raw for line in tail) for tail in state.tails.values()]
    kept = set(out[0].splitlines()) if len(out) == 1 else {ln for t in out for ln in t.splitlines()}
    out += [t for t in state.run.command_texts if not set(t.splitlines()) <= kept]
    return out


def place_by_words(findings: list[Finding], state: RunState) -> list[Finding]:
    """The findings, the first re-categorised when it is generic and the words choose a category."""
    if not findings:
        return findings
    first = findings[0]
    if first.rule_id not in GENERIC or first.category != "other" or first.severity < Severity.warning:
        return findings
    from .category_words import closest
    reading = closest(texts_of(state))
    if reading is None or reading.category == "other":
        return findings
    # said to the person reading the report: what the category rests on and that it is theirs to check
    said = (f" Going by the paste's words alone, the failure most resembles {CATEGORY_WORDS[reading.category]} "
            f"({reading.category}): a guess to check against the log.")
    fix = first.fix
    usual, meanwhile = _if_it_is(reading.category)
    if usual:
        said += f" If it is: {usual}"
    if meanwhile:
        fix = (*fix, f"If it is {CATEGORY_WORDS[reading.category]}: {meanwhile}")
    return [replace(first, category=reading.category, message=first.message + said, fix=fix, confidence="possible"),
            *findings[1:]]


# the fallbacks that place a failure by its structure (component, phase, exception type; a launcher's header naming
# the exception type) with fixes that only look further (search the issues, find the line after the stack, paste more)
STRUCTURAL = frozenset({"GD990", "GD991", "GD992", "GD993", "GD994", "GD996", "GD997", "GD998", "GD999", "GD326",
                        "GD312"})
_LOOKS_ONLY = ("Search ", "Find ", "Paste ", "Share ", "Read ", "Look ")


def act_meanwhile(findings: list[Finding]) -> list[Finding]:
    """The findings, the first given its category's actions (symptom_words.MEANWHILE) when a structural fallback
    placed it and every fix it has only looks further: the reader gets something to change while they look."""
    if not findings:
        return findings
    first = findings[0]
    if first.rule_id not in STRUCTURAL or first.category == "other" or first.severity < Severity.warning:
        return findings
    if not all(x.startswith(_LOOKS_ONLY) for x in first.fix):
        return findings
    from ..checks.hang.symptom_words import MEANWHILE
    meanwhile = MEANWHILE.get(first.category)
    if meanwhile is None:
        return findings
    return [replace(first, fix=(*first.fix, meanwhile)), *findings[1:]]


def _if_it_is(category: str) -> tuple[str | None, str | None]:
    """(the category's usual causes, its meanwhile actions without their lead-in) for a guess from the words: said as
    conditional on the guess."""
    from ..checks.hang.symptom_words import MEANWHILE, without_lead_in
    from ..checks.hang.usual_causes import USUAL_CATEGORY
    meanwhile = MEANWHILE.get(category)
    if meanwhile:
        meanwhile = without_lead_in(meanwhile)
        meanwhile = meanwhile[0].lower() + meanwhile[1:] if meanwhile[:1].isupper() and meanwhile[1:2].islower() else meanwhile
    return USUAL_CATEGORY.get(category), meanwhile


__all__ = ["GENERIC", "STRUCTURAL", "act_meanwhile", "place_by_words", "texts_of"]
