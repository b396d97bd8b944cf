"""Routes signals to rules, folds duplicates and orders findings: the first cause first.

One ``Session`` serves a post-mortem (``analyze`` replays finished files) and a live run
(``watch`` feeds lines as they arrive): the same rule objects, the same code path.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .gate import WordGate
from .model import Finding, Role, Severity
from .registry import RuleMeta, load_catalog
from .rules import FinishContext, Rule, build_rule
from .signals import CheckpointInput, ExceptionInfo, LogLine, Metrics
from .sources import metrics as metrics_src
from .sources.swiftconfig import LITERALS as CONFIG_LITERALS
from .sources.swiftconfig import RunConfig
from .sources.traceback import TracebackTracker
from .verdict import refine

TAIL = 60            # last lines kept per log input (hang phase, unrecognised endings)
MAX_EXCEPTIONS = 200  # exceptions kept for fallback rules; the rest are only routed
_END_MARKERS = ("End time of running main", "last_model_checkpoint: ")


class Session:
    def __init__(self, metas: Iterable[RuleMeta] | None = None, *, console_metrics: bool = True,
                 run: RunConfig | None = None, preflight: bool = False, facts: dict | None = None):
        metas = list(load_catalog() if metas is None else metas)
        self.rules: list[Rule] = [build_rule(m) for m in metas]
        pool: dict[str, Any] = {}   # state the rules of this session share (one metric series)
        for r in self.rules:
            r.share(pool)
        self.run = run or RunConfig()
        self.console_metrics = console_metrics
        self.preflight = preflight
        self.facts = dict(facts or {})
        self.tracker = TracebackTracker()
        self.exceptions: list[ExceptionInfo] = []
        self.tails: dict[str, deque[LogLine]] = {}
        self.ended = False
        self.metrics_steps = 0
        self.log_inputs: list[str] = []
        self.checkpoints: list[tuple[str, int | None]] = []  # (path, step) of the checkpoints seen: verdict.refine
        self.observers: list = []   # callables also handed every non-line signal (the report's curves): never rules
        self._by_type: dict[type, list[Rule]] = {}
        self._all_line_rules: list[Rule] = []
        lit_rules: dict[str, list[Rule]] = {}
        for r in self.rules:
            for k in r.kinds:
                if k is not LogLine:
                    self._by_type.setdefault(k, []).append(r)
            if LogLine in r.kinds:
                if r.wants_all_lines or not r.literals:
                    self._all_line_rules.append(r)
                else:
                    for lit in r.literals:
                        lit_rules.setdefault(lit, []).append(r)
        self._lit_rules = lit_rules
        gate_words = set(lit_rules) | set(CONFIG_LITERALS) | set(metrics_src.LITERALS) | {
            ", line ", "Traceback", "Error", "Exception", "Exit", "Interrupt", "Failure", "Timeout"}
        gate_words.update(_END_MARKERS)
        # one C-level scan per line says which words occur: the gate (any word: a rule, the config, the
        # metrics or the traceback tracker may care) and the rules to feed (those with a literal there)
        self.gate_words: frozenset[str] = frozenset(gate_words)
        self._gate = WordGate({w: tuple({id(r): r for r in lit_rules.get(w, ())}.values()) for w in gate_words})
        self._order = {id(r): i for i, r in enumerate(self.rules)}

    # ------------------------------------------------------------------ what the chunk scanner may skip
    @property
    def sees_every_line(self) -> bool:
        """A rule reads every line (no literals): lines cannot be skipped, only fed one by one."""
        return bool(self._all_line_rules)

    def sticky(self) -> bool:
        """The next lines matter whatever they hold: an open args dump, or a traceback frame awaiting its
        code line (the only state in which a line without a gate word changes anything but the tail)."""
        return self.run._dump_open or self.tracker.expecting()

    # ------------------------------------------------------------------ feeding
    def begin_log(self, path: str) -> None:
        self.log_inputs.append(path)
        self.tails[path] = deque(maxlen=TAIL)

    def feed_line(self, line: LogLine) -> None:
        tail = self.tails.get(line.where.path)
        if tail is None:
            self.begin_log(line.where.path)
            tail = self.tails[line.where.path]
        if line.text.strip():
            tail.append(line)
        for r in self._all_line_rules:
            r.feed(line)
        text = line.text
        if self.run._dump_open:
            self.run.feed(line)
            return
        hits = self._gate.hits(text)
        if not hits:
            exc = self.tracker.feed(line) if text.startswith((" ", "\t")) else None
            if exc:
                self._exception(exc)
            return
        self.run.feed(line)
        exc = self.tracker.feed(line)
        if exc is not None:
            self._exception(exc)
        if any(mk in text for mk in _END_MARKERS):
            self.ended = True
        if self.console_metrics and ":" in text and metrics_src.has_literal(text):
            values, finite = metrics_src.read_console(text)
            if values is not None:
                self.emit(Metrics(values, line.where, line.seq, "console", finite))
        rules: Iterable[Rule]
        if len(hits) == 1:
            rules = hits[0]
        else:  # several words: each rule once, in catalog order
            many = {id(r): r for h in hits for r in h}
            order = self._order
            rules = sorted(many.values(), key=lambda r: order[id(r)])
        for r in rules:
            r.feed(line)

    def _exception(self, exc: ExceptionInfo) -> None:
        if len(self.exceptions) < MAX_EXCEPTIONS:
            self.exceptions.append(exc)
        self._route(exc)

    def emit(self, signal: Any) -> None:
        """Any signal of doctor/signals.py: a log line takes the gated path above, a metrics row is counted (a
        summary row ends the run and reaches no rule), every other signal goes to the rules of its type."""
        if isinstance(signal, LogLine):
            self.feed_line(signal)
            return
        for fn in self.observers:
            fn(signal)
        if isinstance(signal, Metrics):
            if metrics_src.is_summary(signal.values):
                self.ended = True
                return
            if metrics_src.is_step(signal.values):
                self.metrics_steps += 1
        elif isinstance(signal, CheckpointInput):
            self.checkpoints.append((signal.facts.path, signal.facts.step))
        self._route(signal)

    def _route(self, signal: Any) -> None:
        for r in self._by_type.get(type(signal), ()):
            try:
                r.feed(signal)
            except _OUT_OF_RANGE:
                pass  # a value out of range (issue 18 point 16): it costs this signal for this rule, not the report

    # ------------------------------------------------------------------ results
    def finish(self) -> list[Finding]:
        ctx = FinishContext(run=self.run, exceptions=self.exceptions, tails=self.tails, ended=self.ended,
                            log_inputs=self.log_inputs, metrics_steps=self.metrics_steps,
                            open_tracebacks=self.tracker.open_tracebacks(), preflight=self.preflight,
                            facts=self.facts)
        found: list[Finding] = []
        for fallback in (False, True):
            if fallback:
                ctx.findings = list(found)
            for r in self.rules:
                if r.meta.fallback == fallback:
                    try:
                        found.extend(r.finish(ctx))
                    except _OUT_OF_RANGE:
                        pass  # one rule's arithmetic on an absurd value (issue 18 point 16): the others still report
        return refine(order(found), self.run, self.checkpoints, ended=self.ended)


# what a rule's arithmetic raises on a value read from a hostile input: a 400-digit integer as float, a division by a
# zero read from the log, an int() of a 5000-digit string, a deeply nested value
_OUT_OF_RANGE = (ArithmeticError, ValueError, RecursionError)


def order(findings: list[Finding]) -> list[Finding]:
    """Errors first; a consequence never before the error that started it; then first seen first."""
    def key(f: Finding) -> tuple[Any, ...]:
        return (-int(f.severity), f.role == Role.consequence, -f.priority, f.first_seq)

    findings = sorted(findings, key=key)
    roots = [f for f in findings if f.severity == Severity.error and f.role != Role.consequence]
    conseq = [f for f in findings if f.role == Role.consequence]
    out = []
    for f in findings:
        if f.role == Role.consequence and not roots:
            out.append(replace(f, role=Role.standalone))
        elif roots and conseq and f is roots[0]:
            out.append(replace(f, role=Role.root))
        else:
            out.append(f)
    if not roots and conseq:
        out.sort(key=lambda f: (-int(f.severity), -f.priority, f.first_seq))
    return out


__all__ = ["Session", "order"]
