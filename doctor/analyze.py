"""Post-mortem: discover inputs, stream them through one Session, build the Report."""
from __future__ import annotations

from . import __version__
from .engine import Session, select_rules
from .model import InputInfo, Report
from .registry import load_catalog
from .sources.inputs import discover, feed_input, run_checkpoints


def analyze(paths: list[str], select: set[str] | None = None, ignore: set[str] | None = None, *,
            scan_options: dict | None = None) -> Report:
    """``scan_options``: passed to the log chunk scanner (tests: ``{"lines": True}`` forces the line path)."""
    inputs = discover(paths)
    metas = select_rules(load_catalog(), select, ignore)
    has_jsonl = any(i.kind == "metrics" for i in inputs)
    session = Session(metas, console_metrics=not has_jsonl)
    counter = [0]
    for inp in inputs:
        feed_input(inp, session, counter, scan_options)
    ckpts = run_checkpoints(paths)
    if ckpts:
        from .checks.ckpt_facts import CkptInput
        from .ckpt import fold_into_log_finding
        from .sources.checkpoint import read_checkpoint
        for d, display in ckpts:
            session.feed_checkpoint(CkptInput(read_checkpoint(d, display)))
    findings = session.finish()
    if ckpts:
        findings = fold_into_log_finding(findings)
    infos = [i.info() for i in inputs] + [InputInfo(display, "checkpoint") for _, display in ckpts]
    return Report(__version__, infos, session.run.summary(), findings)
