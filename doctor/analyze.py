"""Post-mortem: discover inputs, stream them through one Session, build the Report."""
from __future__ import annotations

from . import __version__
from .engine import Session, select_rules
from .model import Report
from .registry import load_catalog
from .sources.inputs import discover, feed_input


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
    findings = session.finish()
    return Report(__version__, [i.info() for i in inputs], session.run.summary(), findings)
