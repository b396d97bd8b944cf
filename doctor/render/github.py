"""GitHub Actions workflow commands, one annotation per finding, for CI gates:
``::error file=run/log.txt,line=45,title=GD101 ...::message``.

Escaped as GitHub's toolkit does (actions/toolkit, packages/core/src/command.ts): in the message ``%``, CR and LF
become ``%25``, ``%0D``, ``%0A``; in a property also ``:`` and ``,`` (``%3A``, ``%2C``). What is left is cleaned
by render.safe (no control, bidi or invisible character reaches the log; in the message, the '@' of a mention from the input
is written as U+FF20 so that pasting it into an issue notifies no one). A workflow reading the report from an untrusted
run should still print it with ``::stop-commands::`` around it when the text could hold ``::`` commands of its
own: here every line starts with the tool's own command and the data cannot start a new line.
"""
from __future__ import annotations

import os

from ..model import Finding, Report, Severity
from . import vitals_line
from .paths import is_pseudo
from .safe import clean, unmention

_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "notice"}


def _escape(text: str) -> str:
    return clean(str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_data(text: str) -> str:
    """A message: mentions inert too (annotations end up in check runs and pasted into issues)."""
    return unmention(_escape(text))


def escape_property(text: str) -> str:
    """A property (file, title): exact, a file name must stay the file's name."""
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def _file(path: str) -> str | None:
    """The path as the workflow sees it: relative to the working directory (the checkout) when inside it."""
    if is_pseudo(path):
        return None
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        return rel if not rel.startswith("..") else path
    return os.path.normpath(path)


def annotation(f: Finding) -> str:
    props: list[str] = []
    if f.evidence:
        e = f.evidence[0]
        file = _file(e.path)
        if file is not None:
            props.append(f"file={escape_property(file)}")
            if e.line > 0:
                props.append(f"line={e.line}")
    sure = "" if f.confidence == "certain" else f" ({f.confidence})"
    props.append(f"title={escape_property(f'{f.rule_id} {f.title}{sure}')}")
    body = f.message + ("\nFix:\n" + "\n".join(f"- {s}" for s in f.fix) if f.fix else "")
    if f.alternatives:
        body += f"\nAlso considered: {', '.join(f.alternatives)}"
    if f.evidence and is_pseudo(f.evidence[0].path):
        body += f"\n(from {f.evidence[0].path})"
    return f"::{_LEVEL[f.severity]} {','.join(props)}::{escape_data(body)}"


def render(report: Report) -> str:
    if not report.findings:   # with findings: one annotation per finding, nothing else (the CI's contract)
        vit = vitals_line(report.run)
        return "::notice title=grpo-doctor::No problem found." + (escape_data(f" Vitals: {vit}.") if vit else "") + "\n"
    return "".join(annotation(f) + "\n" for f in report.findings)
