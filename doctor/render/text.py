"""Text for people, with rich. Log text is escaped: '[rank0]:' would be markup otherwise."""
from __future__ import annotations

import io
import shutil

from rich.console import Console
from rich.markup import escape as _markup_escape

from ..model import Report, Role, Severity
from . import run_line
from .safe import clean


def escape(text: object) -> str:
    """Input-derived text for rich: control and bidi characters shown escaped, then markup escaped."""
    return _markup_escape(clean(text))


_STYLE = {Severity.error: "bold red", Severity.warning: "bold yellow", Severity.info: "bold cyan"}


def render(report: Report, color: bool = False, width: int | None = None) -> str:
    buf = io.StringIO()
    if width is None:
        width = shutil.get_terminal_size((120, 40)).columns if color else 400
    con = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False, soft_wrap=not color)
    head = "grpo-doctor " + report.tool_version
    summary = run_line(report.run)
    if summary:
        head += " · " + summary
    con.print(f"[dim]{escape(head)}[/dim]")
    shown = (i.path + (f" (skipped: {i.note})" if i.note else "") for i in report.inputs)
    con.print(f"[dim]inputs: {escape(', '.join(shown))}[/dim]")
    if not report.findings:
        con.print("[bold green]No problem found.[/bold green]")
        return buf.getvalue()
    for i, f in enumerate(report.findings, 1):
        con.print()
        role = {Role.root: " [bold](first cause)[/bold]", Role.consequence: " [dim](consequence)[/dim]"}.get(f.role, "")
        extra = []
        if f.count > 1:
            extra.append(f"×{f.count}")
        if f.ranks:
            extra.append("ranks " + ",".join(map(str, f.ranks[:16])) + ("…" if len(f.ranks) > 16 else ""))
        con.print(f"{i}. [{_STYLE[f.severity]}]{f.severity.name.upper()}[/] [bold]{escape(f.title)}[/bold]{role}"
                  f"  [dim]{escape(f.rule_id)} {escape(f.category)}{(' ' + ' '.join(extra)) if extra else ''}[/dim]")
        con.print("   " + escape(f.message))
        if f.evidence:
            con.print("   [dim]evidence:[/dim]")
            for e in f.evidence:
                con.print(f"     [dim]{escape(e.path)}{f':{e.line}' if e.line else ''}[/dim] {escape(e.text)}")
        if f.fix:
            con.print("   [green]fix:[/green]")
            for step in f.fix:
                con.print(f"     [green]•[/green] {escape(step)}")
    n_err = sum(1 for f in report.findings if f.severity == Severity.error)
    n_warn = sum(1 for f in report.findings if f.severity == Severity.warning)
    con.print()
    con.print(f"[dim]{n_err} error(s), {n_warn} warning(s). grpo-doctor explain <RULE> for details.[/dim]")
    return buf.getvalue()
