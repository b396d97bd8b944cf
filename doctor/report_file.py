"""A report written to a file: atomically (a temporary file beside it, then a rename: a link planted at the path is
replaced, never followed), and the line said after it (where it is and what it says). ``--format html`` on a
terminal writes ``grpo-doctor-report.html`` instead of printing a page of HTML into the terminal."""
from __future__ import annotations

import sys
from pathlib import Path

from .model import Report, Severity

DEFAULT_HTML = "grpo-doctor-report.html"


def write_atomic(path: Path, text: str) -> None:
    """``text`` in ``path``, whole or not at all (doctor/live/atomic.py); OSError for the caller to say in one line."""
    from .live.atomic import write_atomic as write_bytes
    write_bytes(str(path), text.encode("utf-8"))


def summary(report: Report) -> str:
    """'2 error(s), 1 warning(s); first: GD101 Batch not divisible' or 'No problem found.'"""
    if not report.findings:
        return "No problem found."
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in Severity}
    first = report.findings[0]
    head = f"{counts[Severity.error]} error(s), {counts[Severity.warning]} warning(s), {counts[Severity.info]} info"
    title = "".join(c if c.isprintable() else " " for c in first.title)
    return f"{head}; first: {first.rule_id} {title}"


def announce(path: Path, report: Report, open_it: bool) -> None:
    """The written file and the report's one line, on stderr (stdout stays the report's or empty); ``open_it``: in
    the default browser."""
    print(f"grpo-doctor: report written to {path} · {summary(report)}", file=sys.stderr)
    if open_it:
        import webbrowser  # noqa: PLC0415 - only for --open
        if not webbrowser.open(path.resolve().as_uri()):
            print(f"grpo-doctor: no browser to open it; open {path} yourself", file=sys.stderr)
