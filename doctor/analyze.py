"""Post-mortem: discover inputs, stream them through one Session, build the Report.

Reports written by `grpo-doctor watch` on several nodes (grpo-doctor-report*.json) are merged: their
findings join the ones from the logs, labelled with the node and host, and the first error of the node
that failed first becomes the primary finding (the root cause; other nodes' failures usually follow it).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import __version__
from .classify import provenance
from .engine import Session, order
from .gate import store_words
from .gpu_summary import GpuSummary
from .model import Finding, Report, Role, Severity
from .registry import load_catalog
from .run_terms import framework_of, in_run_terms
from .selectors import Selection, resolve
from .signals import CheckpointInput
from .sources import reports as reports_src
from .sources import scan
from .sources.compressed import suffix_codec
from .sources.inputs import LOGGER_KINDS, discover, feed_input, read_small
from .sources.safeio import regular_size
from .sources.sparse import is_sparse
from .vitals import Tracker, vitals

RUNS_LISTED = 200  # run line ranges listed in the report: past it the first and the last 100, and runs_total


def analyze(paths: list[str], select: set[str] | None = None, ignore: set[str] | None = None, *,
            scan_options: dict | None = None, series: bool = False) -> Report:
    """``scan_options``: passed to the log chunk scanner (tests: ``{"lines": True}`` forces the line path).
    ``series``: record the run's curves (report.series: for --format html and --series). A folder of runs
    (ms-swift's ``v{N}-<timestamp>`` folders) is analyzed run by run (doctor/analyze_runs.py)."""
    from .analyze_runs import analyze_runs, split_runs
    split = split_runs(paths)
    if split is not None:
        return analyze_runs(split, lambda inputs, curves: analyze_inputs(inputs, select, ignore,
                                                                         scan_options=scan_options, series=curves),
                            series=series)
    return analyze_inputs(discover(paths), select, ignore, scan_options=scan_options, series=series)


def analyze_inputs(inputs: list, select: set[str] | None = None, ignore: set[str] | None = None, *,
                   scan_options: dict | None = None, series: bool = False) -> Report:
    """One run's report from its discovered inputs."""
    # the first log, when big: its scanning child starts now, while the catalog loads (see scan.start_early)
    big = next((i for i in inputs if i.kind == "log" and i.path is not None and not suffix_codec(i.path.name)
                and not is_sparse(i.path)), None)   # both are read as streams, not mapped
    if big is not None and not scan.big_enough(big.path):
        big = None
    early = scan.start_early(big.path) if big is not None and scan_options is None else None
    try:
        sel = resolve(load_catalog(), select, ignore)
        has_jsonl = any(i.kind == "metrics" for i in inputs)
        session = Session(sel.run, console_metrics=not has_jsonl)
        if big is not None and len(sel.run) == len(load_catalog()):
            store_words(session.gate_words)  # the whole catalog's words: for the next run's early start
        counter = [0]
        nodes = []
        from .progress import METER  # the bar's total: what the readers below will read, by size on disk
        METER.plan(sum(regular_size(i.path) or 0 for i in inputs
                       if i.path is not None and i.kind in ("log", "metrics", "completions")))
        tracker = Tracker()   # the run's vitals: first and last values only, whatever the format
        session.observers.append(tracker)
        gpus = GpuSummary()   # the GPU samples in the JSON report, not only in the HTML charts
        session.observers.append(gpus)
        recorder = None
        if series:
            from .curves import Recorder
            recorder = Recorder()
            session.observers.append(recorder)
        ledger = None
        notes: dict[str, str] = {}
        if any(i.kind in LOGGER_KINDS for i in inputs):
            from .sources.loggers import StepLedger
            ledger = StepLedger()
            session.observers.append(ledger)
        for inp in inputs:
            if inp.kind == "checkpoint":
                continue  # its facts go in after the logs, below
            if inp.kind in LOGGER_KINDS:
                from .sources.loggers import feed as feed_logger
                feed_logger(inp, session, counter, ledger, notes)
                continue
            if inp.kind == "report":
                nr = reports_src.load(inp.display, read_small(inp))
                if nr is not None:
                    nodes.append(nr)
                continue
            feed_input(inp, session, counter, {"early": early} if early is not None and inp is big else scan_options)
    finally:
        if early is not None:
            early.close()  # not adopted (the line-by-line path ran), or already reaped: nothing left behind
    ckpts = [(i.path, i.display) for i in inputs if i.kind == "checkpoint" and i.path is not None]
    ckpt_skipped: list = []
    if ckpts:
        from .ckpt import fold_into_log_finding, skipped_inputs
        from .sources.checkpoint import read_checkpoint
        sizes: dict[str, Any] = {}  # each checkpoint measured once for all its siblings (and each run folder read once)
        for d, display in ckpts:
            facts = read_checkpoint(d, display, sizes=sizes)
            ckpt_skipped += skipped_inputs(facts)
            session.emit(CheckpointInput(facts))
    # where the errors come from (doctor/classify/provenance.py): the versions they narrow down before the rules
    # make their fixes, the raise site of each quoted error after; no exception and no error line: no lookup
    prov = provenance.for_session(session)
    session.run.inferred_versions = prov.narrow()
    kind = session.state.trainer_kind()
    framework = framework_of(session, inputs, kind)
    findings = sel.keep(session.finish(kind))
    if ckpts:
        findings = fold_into_log_finding(findings)
    findings = prov.annotate(findings)
    findings = in_run_terms(findings, framework)
    notes.update(session.input_notes)
    infos = [replace(i.info(), note=notes[i.display]) if i.display in notes else i.info() for i in inputs] + ckpt_skipped
    run = session.run.summary()
    run.update(framework)
    provenance.summarize(run, session.run.inferred_versions)
    if len(session.run.runs) > 1:  # runs appended to one log (issue 17.16): each one's line range
        run["runs"] = session.run.runs.summary(RUNS_LISTED)
        if len(run["runs"]) < len(session.run.runs):   # the first and the last ones: memory flat (issue 19)
            run["runs_total"] = len(session.run.runs)
    sampled = gpus.result()
    if sampled is not None:
        run["gpus"] = sampled
    fixed = one_relaunch(findings, framework)
    if fixed is not None:
        run["relaunch"] = fixed
    vit = vitals(tracker, [p for p, _ in session.state.checkpoints] + list(session.state.saves))
    if vit is not None:
        run["vitals"] = vit
    if nodes:
        findings = merge_nodes(findings, nodes, sel)
        run["nodes"] = [{"node_rank": n.node_rank, "host": n.host, "status": n.status, "exit_code": n.exit_code,
                         "first_error_time": n.first_error_time, "report": n.path} for n in nodes]
    report = Report(__version__, infos, run, findings)
    if recorder is not None:
        report.series = recorder.result(findings, session)
    return report


def one_relaunch(findings: list[Finding], framework: dict) -> dict | None:
    """The ms-swift run's errors' commands joined into one, judged by preflight round by round (doctor/
    preflight_relaunch.py): ``{"command", "accepted", "remaining"}``, or None when no error computed a command."""
    first = next((f.command for f in findings if f.severity == Severity.error and f.command), None)
    if first is None or framework.get("framework") != "ms-swift":
        return None
    import shlex

    from .preflight import preflight_command
    from .preflight_relaunch import one_command
    version = framework.get("framework_version")

    def judge(argv: list[str]) -> Report:   # a past run: no live GPU of this machine in the verdict
        return preflight_command(argv, {}, swift_version=version, live_gpu=False)
    try:
        return one_command(Report(__version__, [], {}, findings), shlex.split(first), judge, version)
    except Exception:  # noqa: BLE001 - a command preflight cannot read (a launcher it does not parse) is no relaunch
        return None


def merge_nodes(findings: list[Finding], nodes: list, sel: Selection | None = None) -> list[Finding]:
    """Log findings plus each node's report findings (labelled with node and host; a finding the logs already gave
    is not repeated); the first error of the node that failed first goes first, as the root cause."""
    def key_of(f: Finding) -> tuple[str, str]:
        return (f.rule_id, f.evidence[0].text if f.evidence else f.message)

    # one watch report beside its own run's logs (no node label): its finding of a rule the logs also gave is the
    # same failure seen live (a hang watch measured and the post-mortem of the log it left); said once, as watch saw it
    single = len(nodes) == 1 and nodes[0].node_rank is None
    if single:
        live = {f.rule_id for f in nodes[0].findings if sel is None or sel.wants(f.rule_id)}
        findings = [f for f in findings if f.rule_id not in live]
    by_key = {key_of(f): f for f in findings}
    failing = sorted((n for n in nodes if n.first_error_time is not None),
                     key=lambda n: (n.first_error_time, n.node_rank if n.node_rank is not None else 1 << 30))
    rank_of = {id(n): i for i, n in enumerate(failing)}
    extra: list[Finding] = []
    root_key = None
    for n in sorted(nodes, key=lambda n: rank_of.get(id(n), 1 << 30)):
        for f in n.findings:
            if sel is not None and not sel.wants(f.rule_id):
                continue
            key = key_of(f)
            if root_key is None and failing and n is failing[0] and f.severity == Severity.error \
                    and f.role != Role.consequence:
                root_key = key
            if key in by_key:
                continue
            label = f"[{n.label}] " if len(nodes) > 1 or n.node_rank is not None else ""
            g = replace(f, message=f"{label}{f.message}", role=Role.standalone if f.role == Role.root else f.role,
                        first_seq=rank_of.get(id(n), 1 << 30))
            by_key[key] = g
            extra.append(g)
    merged = order(findings + extra)
    if root_key is None:
        return merged
    root = by_key[root_key]
    rest = [f if f.role != Role.root else replace(f, role=Role.standalone) for f in merged if f is not root]
    return [replace(root, role=Role.root)] + rest
