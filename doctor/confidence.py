"""How sure each finding's category is (issue 29 point 3), and what else was considered when it is only possible.

A finding's level comes from the rule that made it (``registry.RuleMeta.confidence_level``, set in ``Rule.make``;
the table is in rules/README.md, "Confidence"): ``certain`` when the log proves the rule's condition (a signature, a
raise site, a check computed from the run), ``likely`` when the failure's structure points at the category (the
component, phase and exception type of doctor/classify), ``possible`` on weak evidence (how a log ends, a trend, a
risk, a stack without its exception line).

One thing raises a level after the rules: a structural verdict (``likely``) whose quoted exception the raise-site
index places in one library's source (doctor/classify/provenance.py, ``raised_by``) is ``certain``: the check that
raised it is known, not only the component (``by_raise_site``, called where ``raised_by`` is filled in).

This pass, run once over the session's findings (pure: no I/O beyond the shipped known-issues index), fills in the
``alternatives`` of each ``possible`` finding with the categories the code really weighed, best first: the
structural classifier's runners-up (kept by the rule), the categories of the other findings of the run, and the
categories of the public threads the known-issues index matches to its evidence (doctor/known, as the reports show
them). Any other finding has none.
"""
from __future__ import annotations

from dataclasses import replace

from . import lazyre
from .model import Finding, RaisedBy, Severity

MAX_ALTERNATIVES = 4
# the categories read from metric rows: how training went, not how the process failed
METRIC_CATEGORIES = frozenset({"reward-zero-or-flat", "grad-norm-zero", "loss-nan-or-inf", "output-degenerate",
                               "slow-training"})


def _similar(f: Finding) -> list[str]:
    """The categories of the known-issue threads about this finding's failure mechanism (the same raise site, or
    exception type, component and phase: doctor/known/mechanism.py), errors only. A thread alike in words only is
    no candidate: its category follows its own failure, which shares the words, not the cause."""
    if f.severity != Severity.error or not f.evidence:
        return []
    from . import known
    from .known.mechanism import MECHANISM
    try:
        return [m.category for m in known.for_finding(f) if m.basis in MECHANISM]
    except (OSError, ValueError):  # the index unreadable: no alternatives from it, the report still comes
        return []


def alternatives_of(f: Finding, others: list[Finding]) -> tuple[str, ...]:
    """The other categories considered for a possible finding: the rule's own candidates, the other findings' (at
    warning or above), the known issues'; each once, never its own."""
    seen = [*f.alternatives, *(o.category for o in others if o.severity >= Severity.warning), *_similar(f)]
    out = [c for c in dict.fromkeys(seen) if c and c != f.category]
    return tuple(out[:MAX_ALTERNATIVES])


_LOG_LEVELS = ("error", "critical", "warning", "info")   # RaisedBy.kind of a log line, not an exception class


def by_raise_site(f: Finding, raised: tuple[RaisedBy, ...]) -> str:
    """The finding's level once its raise sites are known: a likely verdict of a structural rule (a fallback check
    that is not last-resort and declares no level of its own) whose quoted exception is raised, by the index, in one
    package's source becomes certain, when what the rule explains is that check (its entry reads the message, the
    failing line or the site's test, not only the files the stack went through: a file raises for several
    reasons, and the entry of its usual one does not explain another); anything else keeps its level."""
    if f.confidence != "likely" or not raised or not f.branch_known:
        return f.confidence
    from .registry import find_rule
    meta = find_rule(f.rule_id)
    if meta is None or meta.confidence or not meta.fallback or not meta.check or meta.options.get("last_resort"):
        return f.confidence
    if any(r.kind.lower() in _LOG_LEVELS for r in raised) or len({r.package for r in raised}) != 1:
        return f.confidence   # an error log line, or a wording several packages raise: the site is not pinned
    return "certain"


def assess(findings: list[Finding]) -> list[Finding]:
    """The findings with their alternatives: for a possible one, what else was considered; for the others, none. A
    metric-shape finding is certain of its rows, not that they are the run's failure: beside a failure of another
    kind (an exception, an error line) it is likely."""
    failed_otherwise = any(o.severity >= Severity.warning and o.category not in METRIC_CATEGORIES for o in findings)
    out = []
    for f in findings:
        if f.confidence == "certain" and f.category in METRIC_CATEGORIES and failed_otherwise and not _quotes_exception(f):
            f = replace(f, confidence="likely")
        if f.confidence == "possible":
            alts = alternatives_of(f, [o for o in findings if o is not f])
        else:
            alts = ()
        out.append(f if alts == f.alternatives else replace(f, alternatives=alts))
    return out


def _quotes_exception(f: Finding) -> bool:
    """Whether the finding rests on an exception line it quotes (torch refusing a backward pass): the process's own
    failure, not a reading of metric rows beside it."""
    return any(_EXC_LINE.search(e.text) for e in f.evidence)


_EXC_LINE = lazyre.compile(r"\b[A-Z]\w*(?:Error|Exception): ")

__all__ = ["MAX_ALTERNATIVES", "METRIC_CATEGORIES", "alternatives_of", "assess", "by_raise_site"]
