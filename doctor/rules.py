"""Runtime rule objects. A rule sees only the signal types it declares (``kinds``, from doctor/signals.py), keeps its own state, does
no I/O and never prints. ``finish`` turns what it saw into findings, with the run's configuration
at hand so that a fix can name this run's flags and numbers."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from .model import Evidence, Finding, Severity, weaker
from .registry import RuleMeta, resolve
from .release_fill import fill_versions
from .signals import ExceptionInfo, LogLine
from .sources.swiftconfig import RunConfig

if TYPE_CHECKING:  # the engine imports this module: the state's type only for the checker
    from .engine.state import RunState

MAX_EVIDENCE = 5


@dataclass
class Hit:
    """One matching line (or exception) and the named groups of its match."""

    groups: dict[str, str]
    evidence: Evidence
    rank: int | None
    seq: int
    exc: ExceptionInfo | None = None
    line: LogLine | None = None


@dataclass(frozen=True)
class Diagnosis:
    """What a pattern rule's ``diagnose(hits, state)`` computed from the run: the message and fix that replace
    the TOML's templates (None keeps the template), a severity other than the rule's, evidence put before the
    matched lines. A diagnose hook returns None to drop the finding (the hits are not this failure)."""

    message: str | None = None
    fix: tuple[str, ...] | None = None
    severity: Severity | None = None
    evidence: tuple[Evidence, ...] = ()
    action: str | None = None                 # refines the rule's default action (registry.ACTIONS)
    flags: tuple[tuple[str, str], ...] = ()   # the corrected flags, ("--name", "value"): the finding's command
    category: str | None = None               # the category the run's context places the failure in (not the rule's)
    confidence: str | None = None             # less than the rule's level when this run's evidence is weaker (Rule.make)
    title: str | None = None                  # the failure this run shows, when it is a narrower one than the rule's title
    verify: str | None = None                 # how this run's next log shows the fix worked, when not the rule's way


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return "?"




@cache
def _fmt() -> Any:
    """string.Formatter, made when a finding's text is: the string module compiles Template's pattern at import (~2 M
    instructions of every watch start, which mostly says nothing)."""
    import string
    return string.Formatter()


def render(template: str, values: dict[str, Any]) -> str:
    """str.format with missing names shown as '?' and no attribute access."""
    try:
        return _fmt().vformat(template, (), _Blank(values))
    except (ValueError, IndexError, AttributeError, KeyError):
        return template


def template_values(run: RunConfig, groups: dict[str, str]) -> dict[str, Any]:
    vals: dict[str, Any] = {k: v for k, v in run.args.items() if isinstance(v, (str, int, float, bool))}
    vals["world_size"] = run.world_size() or "?"
    vals["swift_version"] = run.swift_version or "?"
    vals.update({k: v for k, v in groups.items() if v is not None})
    return vals


def _filling(template: str, hits: list[Hit]) -> Hit:
    """The first hit whose groups fill every named group the template uses (a rule of several patterns: its first
    line may be one without them); the first hit when none does."""
    try:
        fields = {name for _, name, _, _ in _fmt().parse(template) if name}
    except ValueError:
        return hits[0]
    named = {f for f in fields if any(f in h.groups for h in hits)}  # the template's holes a pattern fills
    if not named:
        return hits[0]
    return next((h for h in hits if all(h.groups.get(f) is not None for f in named)), hits[0])


def evidence_of(line: LogLine) -> Evidence:
    return Evidence(line.where.path, line.where.line, line.raw)


def fold(hits: list[Hit]) -> tuple[tuple[Evidence, ...], int, tuple[int, ...]]:
    """Evidence (distinct texts, first few), count and ranks of a list of hits."""
    ev: list[Evidence] = []
    seen: set[str] = set()
    for h in hits:
        key = h.evidence.text.split("]:", 1)[-1].strip() if h.evidence.text.startswith("[rank") else h.evidence.text
        if key in seen:
            continue
        seen.add(key)
        ev.append(h.evidence)
        if len(ev) >= MAX_EVIDENCE:
            break
    ranks = tuple(sorted({h.rank for h in hits if h.rank is not None}))
    # one failure printed by 8 ranks counts 8; a message repeated by one process counts once per repeat
    return tuple(ev), len(hits), ranks


class Rule:
    """Base class: both catalog pattern rules and Python checks."""

    kinds: frozenset[type] = frozenset()
    literals: tuple[str, ...] = ()   # for LogLine: words that must occur; empty tuple + wants_all_lines
    wants_all_lines = False
    # its state describes one run: a log holding several appended runs gets a fresh instance at each run's start
    # (engine/session.py _next_run), after it says what the previous run showed. The metric-series rules are
    # per run by construction; a line rule whose finish() reads only its own state and ctx.run may set it
    per_run = False
    # an instance fed no signal finishes with no finding, whatever the run state holds: watch then builds the rule
    # only when its first signal comes (doctor/lazyrules.py). Declared per class, after reading its finish
    idle_silent = False

    def __init__(self, meta: RuleMeta):
        self.meta = meta

    def feed(self, signal: Any) -> None:  # pragma: no cover - interface
        pass

    def feed_many(self, signals: list[Any]) -> None:
        """feed() of each signal in order (Session.emit_many: signals of one type, no line fed between them); a
        signal whose value is out of range costs that signal only, as in Session._route. A rule may do the same
        in bulk: the same state at the end."""
        for signal in signals:
            try:
                self.feed(signal)
            except OUT_OF_RANGE:
                pass

    def finish(self, ctx: RunState) -> list[Finding]:  # pragma: no cover - interface
        return []

    def share(self, pool: dict[str, Any]) -> None:
        """Called once per session, before any signal, with a dict shared by all its rules: a rule may keep
        state there that other rules of the session read too (the metric series)."""

    # helpers for subclasses
    def make(self, *, message: str | None = None, fix: list[str] | tuple[str, ...] | None = None,
             evidence: tuple[Evidence, ...] | list[Evidence] = (), count: int = 1, ranks: tuple[int, ...] = (),
             seq: int = 0, severity: Severity | None = None, title: str | None = None, action: str | None = None,
             flags: tuple[tuple[str, str], ...] = (), confidence: str | None = None,
             alternatives: tuple[str, ...] = (), verify: str | None = None) -> Finding:
        """``verify``: how the next run shows the fix worked, when this run calls for another check than the rule's
        own (the rule's is written for its most common case). ``confidence``: what this finding rests on when it is less than the rule's (a structural verdict from a
        cut traceback); never more (registry.RuleMeta.confidence_level). ``alternatives``: the other categories
        the rule weighed (kept for a "possible" finding: doctor/confidence.py)."""
        m = self.meta
        level = m.confidence_level if confidence is None else weaker(m.confidence_level, confidence)
        return Finding(
            rule_id=m.id, slug=m.slug, category=m.category, severity=severity if severity is not None else m.severity,
            title=title or m.title, message=message or m.message, fix=tuple(fix if fix is not None else m.fix),
            evidence=tuple(evidence), count=count, ranks=ranks, role=m.role_hint, first_seq=seq, priority=m.priority,
            action=action or m.action, verify=verify or m.verify, prevent=m.prevent, flags=tuple(flags),
            confidence=level, alternatives=tuple(alternatives),
        )


# what a rule's arithmetic raises on a value read from a hostile input: a 400-digit integer as float, a division by a
# zero read from the log, an int() of a 5000-digit string, a deeply nested value
OUT_OF_RANGE = (ArithmeticError, ValueError, RecursionError)


class PatternRule(Rule):
    """A catalog rule made of line patterns and/or exception patterns."""

    def __init__(self, meta: RuleMeta):
        super().__init__(meta)
        kinds: set[type] = set()
        if meta.patterns:
            kinds.add(LogLine)
        if meta.exceptions:
            kinds.add(ExceptionInfo)
        self.kinds = frozenset(kinds)
        self.literals = tuple(dict.fromkeys(l for p in meta.patterns for l in p.literals))
        self.hits: list[Hit] = []


    def feed(self, signal: Any) -> None:
        if len(self.hits) > 10000:  # enough to count; keeps memory flat on pathological logs
            return
        if isinstance(signal, LogLine):
            line = signal
            for p in self.meta.patterns:
                if p.origin and p.origin != line.origin:
                    continue
                if not any(l in line.text for l in p.literals):
                    continue
                m = p.regex.search(line.text)
                if m:
                    self.hits.append(Hit(m.groupdict(), evidence_of(line), line.rank, line.seq, line=line))
                    return
        elif isinstance(signal, ExceptionInfo):
            exc = signal
            for e in self.meta.exceptions:
                groups = match_exception(e, exc)
                if groups is not None:
                    self.hits.append(Hit(groups, Evidence(exc.where.path, exc.where.line, exc.raw), exc.rank,
                                         exc.seq, exc=exc))
                    return

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.hits:
            return []
        self.hits.sort(key=lambda h: h.seq)
        first = self.hits[0]
        ctx = ctx.at(first.evidence)  # runs appended to one log: the configuration of this failure's own run
        evidence, count, ranks = fold(self.hits)
        vals = template_values(ctx.run, _filling(self.meta.message, self.hits).groups)
        message = render(self.meta.message, vals)
        # a catalog fix's `pkg==<version>`: the version this run printed for the package (release_fill.py)
        fix = [fill_versions(render(f, vals), ctx.run.versions) for f in self.meta.fix]
        severity = None
        action: str | None = None
        flags: tuple[tuple[str, str], ...] = ()
        category: str | None = None
        confidence: str | None = None
        title: str | None = None
        verify: str | None = None
        if self.meta.fixer:  # resolved only for a rule that matched: the catalog loads without importing hooks
            out = resolve(self.meta.fixer)(self.hits, ctx)
            if out is None:
                return []
            message = out.message if out.message is not None else message
            fix = list(out.fix) if out.fix is not None else fix
            severity = out.severity
            evidence = out.evidence + evidence
            action, flags, category, confidence = out.action, out.flags, out.category, out.confidence
            title, verify = out.title, out.verify
        found = self.make(message=message, fix=fix, evidence=evidence[:MAX_EVIDENCE + 2], count=count, ranks=ranks,
                          seq=first.seq, severity=severity, action=action, flags=flags, confidence=confidence,
                          title=title, verify=verify)
        return [dataclasses.replace(found, category=category) if category else found]


def match_exception(e: Any, exc: ExceptionInfo) -> dict[str, str] | None:
    groups: dict[str, str] = {}
    if e.type is not None:
        m = e.type.search(exc.type)
        if not m:
            return None
        groups.update(m.groupdict())
    if e.message is not None:
        m = e.message.search(exc.message)
        if not m:
            return None
        groups.update(m.groupdict())
    if e.frames and not any(any(f in fr.path for f in e.frames) for fr in exc.frames):
        return None
    if e.raised_in:
        last = exc.raised_at
        if last is None or not any(f in last.path for f in e.raised_in):
            return None
    return groups


def build_rule(meta: RuleMeta) -> Rule:
    if meta.check:
        cls = resolve(meta.check)
        return cls(meta)
    return PatternRule(meta)
