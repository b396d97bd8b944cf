"""Routes signals to rules, folds duplicates and orders findings: the first cause first.

One ``Session`` serves a post-mortem (``analyze`` replays finished files) and a live run
(``watch`` feeds lines as they arrive): the same rule objects, the same code path.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from .. import lazyre
from ..claims import RunFacts, read_oom
from ..claims import check_finding as check_claims
from ..classify.outcomes_amend import amend_by_outcomes
from ..classify.word_reading import act_meanwhile, place_by_words
from ..confidence import assess
from ..gate import WordGate
from ..model import Finding, Role, Severity
from ..registry import RuleMeta, id_in_family, load_catalog
from ..rules import OUT_OF_RANGE, Rule, build_rule
from ..signals import METRICS_TYPES, LazyMetrics, LogLine, Metrics
from ..sources.runs import MAX_RUNS
from ..sources.swiftconfig import RunConfig
from ..swift.fixcheck import check_finding
from ..swift.trainer_kind import TrainerKind
from ..verdict import refine
from .columns import Block
from .state import STATE_WORDS, RunState

# False: a rule reading both the rows of a block and the lines among them takes them one at a time even when it can
# take them in one call (feed_between); the equivalence tests compare both
INTERLEAVE_BULK = True


class Session:
    def __init__(self, metas: Iterable[RuleMeta] | None = None, *, console_metrics: bool = True,
                 run: RunConfig | None = None, preflight: bool = False, facts: dict | None = None,
                 lazy: bool = False):
        metas = list(load_catalog() if metas is None else metas)
        if lazy:   # the rules that wait for a signal built when it comes (doctor/lazyrules.py; watch)
            from ..lazyrules import build as build_lazy
            self.rules: list[Rule] = build_lazy(metas)
        else:
            self.rules = [build_rule(m) for m in metas]
        # the rules over the metric series and the other per-run rules: built anew for each run appended to one log
        # (see _next_run), so that no curve or finding joins two launches
        self._series_rules = frozenset(id(r) for r in self.rules if r.per_run or (
            Metrics in r.kinds and LogLine not in r.kinds and not r.meta.fallback))
        pool: dict[str, Any] = {}   # state the rules of this session share (one metric series)
        for r in self.rules:
            r.share(pool)
        self.state = RunState(run=run or RunConfig(), preflight=preflight, facts=dict(facts or {}),
                              console_metrics=console_metrics)
        self.observers: list = []   # callables also handed every non-line signal (the report's curves): never rules
        self._earlier: list[Finding] = []   # series findings of the runs appended before the current one
        self.input_notes: dict[str, str] = {}   # an input read only in part (a compressed log cut short): why
        self._runs_seen = 0
        # bumped by every input (a line, a signal, a new log; ``changed`` for a caller that sets the run's configuration
        # or state itself): watch evaluates the rules again only when it moved (live/reporting.py)
        self.generation = 0
        self._tiers_of: list[Rule] | None = None       # the rule list (and its length) _tiers_cache was worked out for
        self._tiers_n = 0
        self._tiers_cache: tuple[list[Rule], list[Rule], list[Rule]] = ([], [], [])
        self._wire()

    def _wire(self) -> None:
        """Route each signal type to its rules and each trigger word to the line rules that hold it."""
        self._by_type: dict[type, list[Rule]] = {}
        self._all_line_rules: list[Rule] = []
        lit_rules: dict[str, list[Rule]] = {}
        for r in self.rules:
            for k in r.kinds:
                if k is not LogLine:
                    self._by_type.setdefault(k, []).append(r)
                if k is Metrics:   # a console run's row whose dict is built on first read: a Metrics to every rule
                    self._by_type.setdefault(LazyMetrics, []).append(r)
            if LogLine in r.kinds:
                if r.wants_all_lines or not r.literals:
                    self._all_line_rules.append(r)
                else:
                    for lit in r.literals:
                        lit_rules.setdefault(lit, []).append(r)
        self._lit_rules = lit_rules
        gate_words = set(lit_rules) | STATE_WORDS
        # one C-level scan per line says which words occur: the gate (any word: a rule or the state's readers
        # may care) and the rules to feed (those with a literal there)
        self.gate_words: frozenset[str] = frozenset(gate_words)
        self._gate = WordGate({w: tuple({id(r): r for r in lit_rules.get(w, ())}.values()) for w in gate_words})
        self._order = {id(r): i for i, r in enumerate(self.rules)}

    def _next_run(self) -> None:
        """A run appended to the same log starts: the per-run rules (the metric series, Rule.per_run) say what the
        previous run showed (with that run's configuration), then start over; the observers that keep a run's numbers
        (vitals, curves) too."""
        old = [r for r in self.rules if id(r) in self._series_rules]
        ended = self.state.at(self.state.run.runs.starts[-2])   # the configuration of the run that just ended
        for r in old:
            try:
                self._earlier.extend(r.finish(ended))
            except OUT_OF_RANGE:
                pass
        pool: dict[str, Any] = {}
        fresh = {id(r): build_rule(r.meta) for r in old}
        for r in fresh.values():   # in catalog order, as at the start: the same rule adds the rows to the series
            r.share(pool)
        # each new rule takes its predecessor's place in every route (the word gate is not rebuilt: a log of
        # thousands of appended runs costs a rule rebuild per run, nothing more)
        self.rules = [fresh.get(id(r), r) for r in self.rules]
        self._by_type = {k: [fresh.get(id(r), r) for r in rs] for k, rs in self._by_type.items()}
        self._all_line_rules = [fresh.get(id(r), r) for r in self._all_line_rules]
        self._lit_rules = {w: [fresh.get(id(r), r) for r in rs] for w, rs in self._lit_rules.items()}
        self._gate.substitute(fresh)
        self._order = {id(r): i for i, r in enumerate(self.rules)}
        self._series_rules = frozenset(id(r) for r in fresh.values())
        for fn in self.observers:
            restart = getattr(fn, "new_run", None)
            if restart is not None:
                restart()

    def _check_run_start(self) -> None:
        starts = self.state.run.runs.starts
        if len(starts) != self._runs_seen:
            self._runs_seen = len(starts)
            # past MAX_RUNS runs (a log repeating its launch line thousands of times) the later ones share one set
            # of rules: the same bound as the configurations kept per run (doctor/sources/runs.py)
            if 1 < len(starts) <= MAX_RUNS and starts[-1].path == starts[-2].path:
                self._next_run()

    # ------------------------------------------------------------------ what the chunk scanner may skip
    @property
    def sees_every_line(self) -> bool:
        """A rule reads every line (no literals): lines cannot be skipped, only fed one by one."""
        return bool(self._all_line_rules)

    @property
    def run(self) -> RunConfig:
        """The run's configuration (launch line, args.json, args dump): the state's."""
        return self.state.run

    # ------------------------------------------------------------------ feeding
    def changed(self) -> None:
        """The run's configuration or state was set from outside the signals (an args.json read, the console's rows
        given up for logging.jsonl's): what the rules see moved."""
        self.generation += 1

    def begin_log(self, path: str) -> None:
        self.generation += 1
        self.state.begin_log(path)

    def feed_line(self, line: LogLine) -> None:
        self.generation += 1
        state = self.state
        state.keep(line)
        for r in self._all_line_rules:
            r.feed(line)
        hits = None if state.run._dump_open else self._gate.hits(line.text)
        got = state.read(line, bool(hits))
        if len(state.run.runs.starts) != self._runs_seen:
            self._check_run_start()
            if hits:  # a new run replaced the per-run rules: this line goes to the new ones
                hits = self._gate.hits(line.text)
        if got is not None:
            exc, row = got
            if exc is not None:
                self._route(exc)
            if row is not None:
                self.emit(row)
        for r in self._hit_rules(hits):
            r.feed(line)

    def _hit_rules(self, hits: list[tuple[Rule, ...]] | None) -> Iterable[Rule]:
        """The rules of the gate words a line holds: each rule once, in catalog order when several words hit."""
        if not hits:
            return ()
        if len(hits) == 1:
            return hits[0]
        many = {id(r): r for h in hits for r in h}
        order = self._order
        return sorted(many.values(), key=lambda r: order[id(r)])

    def feed_line_among(self, line: LogLine, hold: Callable[[LogLine, Rule], None]) -> None:
        """feed_line() of a line printed among console metric rows not emitted yet, whose readers other than the rules
        that read rows are shown not to read the rows before it (a checkpoint save, sources/saves.py): the state and
        those readers take it now; each rule that reads rows too goes to ``hold``, which feeds it the line in file
        order with the rows."""
        self.generation += 1
        state = self.state
        state.keep(line)
        hits = self._gate.hits(line.text)
        got = state.read(line, bool(hits))
        assert got is None and len(state.run.runs.starts) == self._runs_seen, "a line among rows gave a signal"
        for r in self._hit_rules(hits):
            if Metrics in r.kinds:
                hold(line, r)
            else:
                r.feed(line)

    def emit(self, signal: Any) -> None:
        """Any signal of doctor/signals.py: a log line takes the gated path above; every other signal is
        accounted for in the state (a summary row ends the run and reaches no rule) and goes to the rules of
        its type."""
        if isinstance(signal, LogLine):
            self.feed_line(signal)
            return
        self.generation += 1
        for fn in self.observers:
            fn(signal)
        if self.state.count(signal):
            self._route(signal)

    def emit_many(self, signals: list[Any], between: list[tuple[int, LogLine, Rule]] | None = None) -> None:
        """emit() of each of these signals, in order, for signals of one type (not lines) that nothing else is fed
        between (the rows of a logging.jsonl block): each rule of that type takes them all in one call
        (Rule.feed_many), so its state at the end is what emit() of each would leave.

        ``between``: lines printed among the signals that reach one rule each, straight (the progress bars among
        console metric rows, sources/console_rows.py), as (index of the signal they precede, line, rule). A rule named
        there takes those lines and the signals one at a time, in file order: it reads both, so their order
        matters to it; every other rule reads no such line and takes the signals in one call."""
        if not signals:
            return
        self.generation += 1
        kinds = set(map(type, signals))   # the types in C: no Python step per signal
        kind = Metrics if kinds <= METRICS_TYPES else type(signals[0])
        if kind is LogLine or len(kinds) != 1 and kind is not Metrics:
            assert not between, "lines between signals of one type only"
            for s in signals:
                self.emit(s)
            return
        rows = signals
        block = Block.of(signals) if kind is Metrics else None
        for fn in self.observers:
            many = getattr(fn, "observe_many", None) if block is not None else None
            if many is not None:
                many(signals, block)
            else:
                for s in signals:
                    fn(s)
        if block is not None:
            signals = self.state.count_many(signals, block)
        else:
            count = self.state.count
            signals = [s for s in signals if count(s)]
        held = {id(r) for _, _, r in between or ()}
        if signals:
            for r in self._by_type.get(kind, ()):
                if id(r) not in held:
                    r.feed_many(signals)
        if held:
            self._interleave(rows, signals, between or [], block)

    def _interleave(self, rows: list[Any], counted: list[Any], between: list[tuple[int, LogLine, Rule]],
                    block: Block | None = None) -> None:
        """The rules of ``between`` take its lines and the ``counted`` ones of ``rows`` in file order (emit_many). Each
        rule's own order is what matters (rules share no state through their feed): a rule with ``feed_between``
        takes its lines and the block in one call, which may read the rows over columns and says whether it did;
        the others, and a rule that declines, take them one at a time."""
        held = list({id(r): r for _, _, r in between}.values())
        kept = None if len(counted) == len(rows) else {id(s) for s in counted}
        loop = []
        for r in held:
            bulk = getattr(r, "feed_between", None) if block is not None and INTERLEAVE_BULK else None
            if bulk is None or not bulk(rows, block, [(i, line) for i, line, x in between if x is r], kept):
                loop.append(r)
        if not loop:
            return
        if len(loop) < len(held):
            ids = {id(r) for r in loop}
            between = [b for b in between if id(b[2]) in ids]
        at, n = 0, len(between)
        for i, s in enumerate(rows):
            while at < n and between[at][0] <= i:
                between[at][2].feed(between[at][1])
                at += 1
            if kept is None or id(s) in kept:
                for r in loop:
                    try:
                        r.feed(s)
                    except OUT_OF_RANGE:
                        pass  # as _route: it costs this signal for this rule
        for _, line, r in between[at:]:
            r.feed(line)

    def _route(self, signal: Any) -> None:
        for r in self._by_type.get(type(signal), ()):
            try:
                r.feed(signal)
            except OUT_OF_RANGE:
                pass  # a value out of range (issue 18 point 16): it costs this signal for this rule, not the report

    # ------------------------------------------------------------------ results
    def _tiers(self) -> tuple[list[Rule], list[Rule], list[Rule]]:
        """The rules of each tier in the order finish runs them, worked out once per rule list (watch finishes the
        same session every few seconds; _next_run builds a new list): within a tier the fallback family's generic
        readers (GD990-GD999) come after the other fallbacks."""
        if self._tiers_of is not self.rules or self._tiers_n != len(self.rules):
            # a rule marked after_all reads what every other rule found (GD330: that nothing was)
            ranked = sorted(self.rules, key=lambda r: (bool(r.meta.options.get("after_all")),
                                                       id_in_family(r.meta.id, "fallback")))
            self._tiers_cache = ([r for r in ranked if _tier(r) == 0], [r for r in ranked if _tier(r) == 1],
                                 [r for r in ranked if _tier(r) == 2])
            self._tiers_of, self._tiers_n = self.rules, len(self.rules)
        return self._tiers_cache

    def finish(self, kind: TrainerKind | None = None, *, outside: Iterable[Finding] = (),
               checkpoints: Iterable[tuple[str, int | None]] = ()) -> list[Finding]:
        """The findings of everything fed so far; ``kind``: the trainer the state shows, when the caller read it
        already (RunState.trainer_kind). ``outside``: findings of rules run elsewhere on the same run (watch checks
        each checkpoint in a session of its own as it is saved), checked already; the fallback rules see them, as
        they see the rules' (a run whose checkpoint rule found the error is not one that no rule explains), and they
        are ordered and given their verdict with the rest. ``checkpoints``: (path, step) of checkpoints seen
        outside the signals (the same checkpoints), which a verdict may resume from."""
        state = self.state
        outside = list(outside)
        found: list[Finding] = []
        # three tiers: the rules, the fallback rules (with the rules' findings at hand), and the last-resort rules
        # that read how a log ends (with every other finding at hand: they speak only when nobody else did)
        found.extend(self._earlier)
        state.complete_messages()
        for tier, rules in enumerate(self._tiers()):
            if tier:
                state.findings = list(found) + outside
            for r in rules:
                try:
                    new = r.finish(state)
                except OUT_OF_RANGE:
                    continue  # one rule's arithmetic on an absurd value (issue 18 point 16): the others still report
                found.extend(new)
                if tier:  # a fallback sees the fallbacks before it too (GD220 quoted the line GD999 would)
                    state.findings.extend(new)
        # every computed fix re-checked against the run it is for (doctor/swift/fixcheck.py): no fix that names the
        # value the run has, a flag its version lacks, or a batch that still breaks; then the relaunch command.
        # The alternatives of each finding that is only possible: the other findings are all at hand here
        found = [check_finding(f, _run_of(state, f)) for f in found]
        # then every sentence that states a fact of the run (a flag unset, grad_norm 0, a shortage of memory, world
        # size 1, a model size, a version to install) checked against what the run shows (doctor/claims.py)
        kind = kind or state.trainer_kind()
        found = [check_claims(f, run_facts(state, f, _run_of(state, f), kind))[0] for f in found]
        ckpts = list(state.checkpoints)
        ckpts += [c for c in checkpoints if c not in ckpts]
        # a failure no rule placed takes the category its words are closest to, said as such
        ordered = act_meanwhile(place_by_words(order(state.place(found) + outside), state))
        # and, when it is only a guess, what the paste itself says solved it or where the same run works
        ordered = amend_by_outcomes(ordered, state)
        return assess(refine(ordered, state.run, ckpts, ended=state.ended, broken_at=state.broken_at))


def _run_of(state: RunState, f: Finding) -> RunConfig:
    """The configuration of the run a finding is about: its first located evidence line's (runs appended to one log,
    issue 17.16), else the state's."""
    ev = next((e for e in f.evidence if e.line), None)
    return state.at(ev).run if ev is not None else state.run


def run_facts(state: RunState, f: Finding, run: RunConfig, kind: TrainerKind | None = None) -> RunFacts:
    """What the run shows, for the claims of finding ``f`` (doctor/claims.py): its run's configuration, the ranks,
    the metric rows, and the CUDA OOM messages of its evidence (else of the run's exceptions)."""
    ooms = [o for o in (read_oom(e.text) for e in f.evidence) if o is not None]
    if not ooms:
        ooms = [o for o in (read_oom(x.message) for x in state.exceptions if "memory" in x.message) if o is not None]
    model = run.args.get("model") or run.args.get("model_id_or_path")
    return RunFacts(args=run.args, cli=run.cli, env=_env_shown(state, run), versions=run.versions, world=run.world_size(),
                    max_rank=state.max_rank, model=str(model) if model else None, params_read=state.params_read,
                    metrics=state.metric_facts, ooms=tuple(ooms),
                    config_read=bool(run.command or run.args or run.cli or run.command_texts or run.launches),
                    command_given=bool(run.command or run.command_texts or run.launches or _cli_pasted(state)),
                    **trainer_facts(kind))


def _env_shown(state: RunState, run: RunConfig) -> dict[str, str]:
    """The run's environment, with what its own lines show set: NCCL prints its ``NCCL INFO`` lines
    (``host:pid:tid [dev] NCCL INFO ...``, src/include/debug.h) only under NCCL_DEBUG=INFO, so advice to rerun with it
    is advice the run already followed."""
    if "NCCL_DEBUG" in run.env or not any(" NCCL INFO " in ln.text for ln in state.paste_lines()):
        return run.env
    return {**run.env, "NCCL_DEBUG": "INFO"}


# a framework's own CLI launch pasted on a line of its own (`trl grpo --model_name_or_path ...`, `tune run <recipe>
# --config ...`, `llamafactory-cli train x.yaml`): the launch command is in the input even when no launcher reader took
# it (a shell script's name alone is not: its contents are the command)
_CLI_LINE = lazyre.compile(r"^\s*(?:\$\s*)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:trl\s+(?:sft|dpo|grpo|kto|rloo|orpo|cpo|ppo|reward|"
                           r"gkd|online_dpo|vllm-serve)|tune\s+run|llamafactory-cli\s+(?:train|export|chat|api|webchat|eval)|"
                           r"swift\s+(?:sft|rlhf|pt|infer|deploy|rollout|export|eval))\s+\S")


def _cli_pasted(state: RunState) -> bool:
    return any(_CLI_LINE.match(ln.text) for ln in state.paste_lines())


def trainer_facts(kind: TrainerKind | None) -> dict[str, Any]:
    """RunFacts' trainer fields: the kind of trainer the run shows (None: not told)."""
    if kind is None or kind.kind is None:
        return {}
    return {"trainer": kind.kind, "trainer_label": kind.label, "trainer_config": kind.config_class}


def _tier(rule: Rule) -> int:
    if not rule.meta.fallback:
        return 0
    return 2 if rule.meta.options.get("last_resort") else 1


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
