"""Known issues: the public threads about the same failure as a finding, from the shipped offline index.

Renderers call ``for_finding`` (JSON items, text and markdown lines) and ``fix_lines`` (a thread whose resolution
names a fix becomes a fix step). Only findings at ``error`` whose evidence quotes an exception or a log line are
looked up, so a healthy log never loads the index. The index and its matching live in ``index.py``.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..model import Finding, Severity
from .index import Match, load

MAX_SHOWN = 3
MAX_EVIDENCE = 3
# threads never shown (owner/repo#N): benchmarks set it to a case's own thread, so that a case is not answered by the
# very thread it was taken from (bench/accuracy.py --reports, bench/known_issues.py); empty for users
EXCLUDE: frozenset[str] = frozenset()
_CONF_WORDS = {"confirmed": "confirmed by a user", "maintainer": "maintainer's answer or fix PR",
               "unresolved": "unresolved"}


def for_finding(f: Finding) -> list[Match]:
    """At most three threads about this finding's failure, best first ([] when none scores high enough)."""
    if f.severity != Severity.error or not f.evidence:
        return []
    return list(_lookup(tuple(e.text for e in f.evidence[:MAX_EVIDENCE]), f.category, EXCLUDE))


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


def json_items(f: Finding) -> list[dict]:
    return [m.to_json() for m in for_finding(f)]


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


def fix_lines(f: Finding, run: dict | None = None) -> list[str]:
    """The fix that the best resolved thread names, as one fix step (none when no shown thread is resolved), when it
    fits the run (``run``: the report's run object; doctor/known/fit.py)."""
    from ..swift.terms import say
    from .fit import fits
    fw = (run or {}).get("framework") if (run or {}).get("framework_source") != "assumed" else None
    for m in for_finding(f):
        if m.confidence != "unresolved" and m.resolution and fits(m, f, run):
            line = say(f"Known fix ({m.thread}, {_CONF_WORDS[m.confidence]}): {m.resolution}", fw)
            if line:  # in the terms of the framework that ran; an ms-swift-only lever is no fix for a trl run
                return [line]
    return []


_URL = re.compile(r"^https://github\.com/[A-Za-z0-9][\w.-]*/[\w.-]+/issues/\d+$")


def safe_url(url: str) -> bool:
    """A link target markdown may carry: only github.com issue URLs built from a well-formed thread id."""
    return bool(_URL.match(url))


def index_summary() -> str:
    """`known-issues index: 412 threads, built 2026-12-01 from ...` for `grpo-doctor rules --known-issues`."""
    idx = load()
    meta = idx.meta
    return (f"known-issues index: {len(idx.threads)} threads, built {meta.get('built', 'unknown')} from "
            f"{meta.get('source', 'unknown sources')}")


__all__ = ["Match", "describe", "details", "fix_lines", "for_finding", "index_summary", "json_items", "safe_url"]
