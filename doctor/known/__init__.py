"""Known issues: the public threads about the same failure as a finding, from the shipped offline index.

Renderers call ``for_finding`` (JSON items), ``same_failure`` and ``similar`` (text, markdown and HTML lines) and
``fix_lines`` (the resolution of a thread about the same failure mechanism becomes a fix step). Each thread shown has
a ``basis`` (doctor/known/mechanism.py): ``raise-site`` or ``type-component-phase`` (the same failure mechanism), or
``similarity`` (words in common only: listed as a similar thread with its score, never a fix). Only findings at
``error`` whose evidence quotes an exception or a log line are looked up, so a healthy log never loads the index. The
index and its matching live in ``index.py``.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from .. import lazyre
from ..model import Finding, Severity
from .index import Match, load

MAX_SHOWN = 3
MAX_EVIDENCE = 3
# threads never shown (owner/repo#N): benchmarks set it to a case's own thread, so that a case is not answered by the
# very thread it was taken from (bench/accuracy.py --reports, bench/known_issues.py); empty for users
EXCLUDE: frozenset[str] = frozenset()
_CONF_WORDS = {"confirmed": "confirmed by a user", "maintainer": "maintainer's answer or fix PR",
               "unresolved": "unresolved"}


_BASIS_WORDS = {"raise-site": "raised at the same place", "type-component-phase": "same error and phase"}


def for_finding(f: Finding) -> list[Match]:
    """At most three threads about this finding's failure, best first, each with its ``basis`` ([] when none scores
    high enough)."""
    if f.severity != Severity.error or not f.evidence:
        return []
    return list(_with_basis(f, EXCLUDE))


def _with_basis(f: Finding, exclude: frozenset[str]) -> tuple[Match, ...]:
    from .mechanism import basis, cause_texts
    # a launcher's or wrapper's own line (torchrun's `failed (exitcode: N)`, a RayTaskError header) is never looked
    # up: every child failure is reported in its words
    found = _lookup(tuple(cause_texts(f)), f.category, exclude)
    return tuple(replace(m, basis=basis(m, f)) for m in found)


def shown(m: Match, f: Finding, run: dict | None = None) -> bool:
    """Whether a thread found for ``f`` is listed at all. A similar thread (words alike only) must be the same kind
    of error (mechanism.same_kind) and not about another trainer (mechanism.other_trainer: also when the run's
    trainer is not told and nothing of the run shows the thread's). A thread about the same failure mechanism from
    another trainer's tracker is listed only when its raise site is in a library every trainer shares and it is
    resolved (a run whose trainer is known), or when it is resolved (a run whose trainer is not told: one candidate)."""
    from .mechanism import (
        MECHANISM,
        RAISE_SITE,
        SHARED,
        _told_trainer,
        finding_sites,
        other_trainer,
        same_kind,
        thread_sites,
    )
    if m.basis not in MECHANISM:
        return not other_trainer(m, run, f) and not same_kind(m, f)
    if not other_trainer(m, run, f):
        return True
    if m.confidence == "unresolved" or not m.resolution:
        return False
    if _told_trainer(run) is None:
        return True
    return m.basis == RAISE_SITE and bool({p for p, _, _ in finding_sites(f) & thread_sites(m)} & set(SHARED))


def same_failure(f: Finding, run: dict | None = None) -> list[Match]:
    """The threads shown about the same failure mechanism (basis raise-site or type-component-phase). A thread whose
    answer the run contradicts (its num_generations=1 beside the run's 4, another trainer's stage, a release the run
    is past: fit.why_not) is listed with that instead of its answer, which is no answer for this run."""
    from .fit import why_not
    from .mechanism import MECHANISM
    out = []
    for m in for_finding(f):
        if m.basis in MECHANISM and shown(m, f, run):
            why = why_not(m, f, run) if m.resolution else ""
            out.append(replace(m, resolution=f"its answer does not fit this run ({why})") if why else m)
    return out


def similar(f: Finding, run: dict | None = None) -> list[Match]:
    """The threads shown only because their error reads alike (basis similarity): never a fix; only the same kind
    of error, and none from another trainer's tracker (``shown``)."""
    from .mechanism import MECHANISM
    return [m for m in for_finding(f) if m.basis not in MECHANISM and shown(m, f, run)]


@lru_cache(maxsize=256)
def _lookup(texts: tuple[str, ...], category: str, exclude: frozenset[str] = frozenset()) -> tuple[Match, ...]:
    from ..classify.message import parse
    best: dict[str, Match] = {}
    idx = None
    for text in texts:
        msg = parse(text)
        if len(msg.text) < 8 and not msg.exc_type:
            continue
        idx = idx or load()
        for m in idx.match(msg.exc_type, msg.text, category, exclude=exclude):
            if m.thread not in best or m.score > best[m.thread].score:
                best[m.thread] = m
    ranked = sorted(best.values(), key=lambda m: (-round(m.score, 3), m.thread))
    return tuple(ranked[:MAX_SHOWN])


def json_items(f: Finding, run: dict | None = None) -> list[dict]:
    return [m.to_json() for m in for_finding(f) if shown(m, f, run)]


def describe(m: Match) -> str:
    """One line: thread (title), state, versions; resolution; how sure."""
    head = f"{m.thread} ({m.title})" if m.title else m.thread  # a title not recorded: the id only
    return f"{head}, {details(m)}"


def details(m: Match) -> str:
    """What follows the thread and its title: state, versions; resolution [how sure]."""
    line = ", ".join(b for b in (m.state, m.versions) if b)
    if m.resolution:
        line += f"; {m.resolution}"
    return line + f" [{_CONF_WORDS.get(m.confidence, m.confidence)}]"


def similar_line(m: Match) -> str:
    """One line for a similar thread: thread (title), state, versions, its similarity; no resolution (what fixed
    another failure is no advice for this one)."""
    head = f"{m.thread} ({m.title})" if m.title else m.thread
    return f"{head}, " + ", ".join(b for b in (m.state, m.versions) if b) + f"; similarity {m.score:.2f}"


def why_no_fix(m: Match, f: Finding, run: dict | None) -> str:
    """'' when the thread's resolution is a fix step for this finding, else why not (tests, the bench)."""
    from .fit import why_not
    from .mechanism import MECHANISM, framework_clash, whole_sentence
    if m.basis not in MECHANISM:
        return "similar words only: not raised at the same place, nor the same error in the same phase"
    if m.confidence == "unresolved" or not m.resolution:
        return "the thread is not resolved"
    return whole_sentence(m.resolution) or why_not(m, f, run) or framework_clash(m, f, run, m.basis)


def fix_lines(f: Finding, run: dict | None = None) -> list[str]:
    """The fix that the best thread about the same failure mechanism names, as one fix step, when its resolution is
    a whole sentence, it fits the run (``run``: the report's run object; doctor/known/fit.py) and the thread's
    framework is the run's (doctor/known/mechanism.py); none otherwise. A "Known fix" when everything the thread ties
    it to is shown in this run; "One candidate" when the log does not show it (the thread's trainer, or the version
    of the package its failure belongs to: fit.unshown)."""
    from ..swift.terms import say
    from .fit import unshown
    fw = (run or {}).get("framework") if (run or {}).get("framework_source") != "unknown" else None
    for m in for_finding(f):
        if not shown(m, f, run) or why_no_fix(m, f, run):
            continue
        missing = unshown(m, f, run)
        how = f"{m.thread}, {_BASIS_WORDS[m.basis]}, {_CONF_WORDS[m.confidence]}"
        head = (f"One candidate, not shown to apply to this run ({how}; {missing})" if missing else
                f"Known fix ({how})")
        line = say(f"{head}: {m.resolution}", fw)
        if line:  # in the terms of the framework that ran; an ms-swift-only lever is no fix for a trl run
            return [line]
    return []


_URL = lazyre.compile(r"^https://github\.com/[A-Za-z0-9][\w.-]*/[\w.-]+/issues/\d+$")


def safe_url(url: str) -> bool:
    """A link target markdown may carry: only github.com issue URLs built from a well-formed thread id."""
    return bool(_URL.match(url))


def index_summary() -> str:
    """`known-issues index: 412 threads, built 2026-12-01 from ...` for `grpo-doctor rules --known-issues`."""
    idx = load()
    meta = idx.meta
    return (f"known-issues index: {len(idx.threads)} threads, built {meta.get('built', 'unknown')} from "
            f"{meta.get('source', 'unknown sources')}")


__all__ = ["Match", "describe", "details", "fix_lines", "for_finding", "index_summary", "json_items", "safe_url",
           "same_failure", "shown", "similar", "similar_line", "why_no_fix"]
