"""The paste's outcome sentences (outcomes_said.py) put to work on the ordered findings, like word_reading.py: a
generic or only possible primary finding is given them, quoted, as its first fixes (the only ground the report has
beyond the description), a finding a rule proves gets the person's own result on this run beside its levers, and a
category of "other" follows the way out the paste gives (another release of a package, a setting). Pure: the kept
lines in, findings out."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import lazyre
from ..model import Finding, Severity
from ..release_fill import PACKAGES, release_changed
from .outcomes_said import ADVISED, CAUSE, PACKAGE_CHANGE, RELEASE, SETTING_CHANGE, SOLVED, WORKED, WORKS, Said, read
from .tried_said import mark_tried
from .word_reading import GENERIC

if TYPE_CHECKING:
    from ..engine.state import RunState

# a package and the release the sentence says works: "works fine with trl 0.14.0", "worked with transformers==4.45.2"
_WORKING_RELEASE = lazyre.compile(
    r"(?i)\b(?:works?|worked|working|fine|ok)\b[^.;]{0,30}?\b(?:with|on|using|in)\s+`?(?P<pkg>" + PACKAGES + r")"
    r"`?\s*(?:==|=|v|version\s+)?\s*`?(?P<ver>\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+|\.dev\d+)?)\b")


def _pin(spec: str | None, why: str = "") -> str:
    """The pip line of ``pkg==version`` read from the sentence quoted, or ''."""
    return "" if spec is None else f" Read from that sentence: `pip install '{spec}'`{why}."


def _working(said: Said) -> str:
    """The pip line of the release the sentence says works, or ''."""
    m = _WORKING_RELEASE.search(said.text)
    return _pin(None if m is None else f"{m.group('pkg').lower()}=={m.group('ver')}",
                " restores the release it names as working")


def _fix(said: Said) -> str:
    quote = f"“{said.text}”"
    if said.kind == SOLVED:
        return f"The paste reports what got it going: {quote}. Try that change first." + _pin(release_changed(said.text))
    if said.kind == ADVISED:
        return f"A reply in the paste advises: {quote}."
    if said.kind == WORKED:
        return (f"The paste says it worked before: {quote}. Go back to the versions and settings that worked (their "
                f"`pip freeze`, the old command), then change one thing at a time to find the one that breaks it."
                + _working(said))
    return (f"The paste says it works in another setup: {quote}. The difference between the two setups is where "
            f"the failure is: change one difference at a time, from the working setup towards the failing one, to "
            f"find which." + _working(said))


_READ_PIN = lazyre.compile(r" Read from that sentence: `(pip install [^`]+)`[^`]*$")


def _once(fixes: tuple[str, ...], others: tuple[str, ...]) -> tuple[str, ...]:
    """The outcome fixes without their pip line where another fix already gives the same command."""
    def trimmed(fix: str) -> str:
        m = _READ_PIN.search(fix)
        return fix[:m.start()] if m is not None and any(m.group(1) in o for o in others) else fix
    return tuple(trimmed(f) for f in fixes)


def amend_by_outcomes(findings: list[Finding], state: RunState) -> list[Finding]:
    """The findings, the first given the paste's outcome sentences, quoted, as its first fixes when it is generic or
    only possible, and its levers that the paste says were tried without success told so."""
    if not findings:
        return findings
    first = findings[0]
    if first.severity < Severity.warning:
        return findings
    if first.rule_id not in GENERIC and first.confidence != "possible":
        return [_with_outcomes(first, state), *findings[1:]]
    lines = state.paste_lines()  # a long paste's title and description at its top too
    first = mark_tried(first, lines)
    said = read(lines)
    if not said:
        return [first, *findings[1:]]
    cause = next((s for s in said if s.kind == CAUSE), None)
    if cause is not None:
        # the author's reading, said as theirs: the report has no reading of its own to put beside it
        first = replace(first, message=first.message + f" The paste's own reading of the cause: “{cause.text}”.")
    solved = next((s for s in said if s.kind == SOLVED), None)
    if solved is not None:
        # the change that got this very run going is the best ground the report has for its cause
        first = replace(first, message=first.message + f" The paste reports the change that got it going "
                                                       f"(line {solved.line.where.line}, quoted in the fixes): what it "
                                                       f"changes is where the cause lies.")
    fixes = tuple(_fix(s) for s in said if s.kind != CAUSE)
    first = replace(first, fix=_once(fixes, tuple(first.fix)) + tuple(first.fix))
    before = next((s for s in said if s.kind == WORKED and RELEASE.search(s.text)), None)
    pinned = next((s for s in said if s.kind in (SOLVED, ADVISED) and PACKAGE_CHANGE.search(s.text)), None)
    if first.category == "other" and before is not None:
        # the same code worked with an earlier release and fails with a later one: what changed is a package
        first = replace(first, category="import-or-dependency-error", confidence="possible",
                        message=first.message + f" The paste says it worked with an earlier release (“{before.text}”): "
                                                f"a regression between releases, so the category is a package "
                                                f"version's, from its words.")
    elif first.category == "other" and pinned is not None:
        # the way out the paste gives is another release of a package: the failure was that release's
        first = replace(first, category="import-or-dependency-error", confidence="possible",
                        message=first.message + f" The way out the paste gives is another release of a package "
                                                f"(“{pinned.text}”), so the category is a package version's, from "
                                                f"its words.")
    setting = next((s for s in said if s.kind in (SOLVED, ADVISED) and SETTING_CHANGE.search(s.text)), None)
    if first.category == "other" and setting is not None and before is None and pinned is None:
        first = replace(first, category="argument-error-other", confidence="possible",
                        message=first.message + f" The way out the paste gives is a setting (“{setting.text}”), so "
                                                f"the category is a setting's, from its words.")
    return [first, *findings[1:]]


def _with_outcomes(first: Finding, state: RunState) -> Finding:
    """A finding a rule or the failure's structure gives, with what the paste reports about the way out of this very run
    (a change that got it going, the setup or the release it works with): the person's own result on their run, put
    before the rule's levers when the finding is only likely, after them when it is certain. Its category stays the
    rule's; a reply's advice is added where the rule is not certain, and the author's reading of the cause is left to the
    generic findings."""
    # a reply's advice only where the rule does not prove its own reading
    kinds = (SOLVED, WORKS, WORKED) if first.confidence == "certain" else (SOLVED, WORKS, WORKED, ADVISED)
    said = [s for s in read(state.paste_lines()) if s.kind in kinds]
    if not said:
        return first
    fixes = tuple(_fix(s) for s in said)
    first = replace(first, fix=fixes + tuple(first.fix) if first.confidence != "certain" else tuple(first.fix) + fixes)
    before = next((s for s in said if s.kind == WORKED and RELEASE.search(s.text)), None)
    if before is not None and first.confidence == "likely" and first.category == "argument-error-other":
        # a setting the rule reads as the cause, in a setup the paste says worked with an earlier release: the setting
        # did not change between the two, the release did
        first = replace(first, category="import-or-dependency-error", confidence="possible",
                        alternatives=("argument-error-other",),
                        message=first.message + f" The paste says the same setup worked with an earlier release "
                                                f"(“{before.text}”): what changed between the two is a package's "
                                                f"release, so the category is a package version's, from its words.")
    return first


__all__ = ["amend_by_outcomes"]
