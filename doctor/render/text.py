"""Text for people, with rich. Log text is escaped: '[rank0]:' would be markup otherwise.

``width``: wrap at this width with hanging indents (a message under its number, a fix step under its text);
None keeps one line per item (piped output, watch's console). ``quiet``: one line per finding, nothing else.
"""
from __future__ import annotations

import io
from typing import Any

from .. import known
from ..model import Finding, Report, Role, Severity, raised_lines
from . import plain, run_line, runs_lines, vitals_line
from .plain import escape as _markup_escape
from .safe import clean, unmention


def escape(text: object) -> str:
    """Input-derived text for rich: control, bidi and invisible characters shown escaped, mentions inert (pasted
    into an issue), then markup escaped."""
    return _markup_escape(unmention(clean(text)))


_STYLE = {Severity.error: "bold red", Severity.warning: "bold yellow", Severity.info: "bold cyan"}
NO_WRAP = 400
INPUTS_SHOWN = 20  # inputs named in the text report's inputs line


def render(report: Report, color: bool = False, width: int | None = None, quiet: bool = False,
           spark: bool = False) -> str:
    """``spark``: a sparkline under the findings about a series (a terminal only; report.series must be set)."""
    if quiet:
        return "".join(quiet_line(f) + "\n" for f in report.findings)
    wrap = width is not None and width < NO_WRAP
    if not wrap and not color:
        try:   # the same text without importing rich (doctor/render/plain.py): watch's console, a piped report
            return _render(report, plain.Console(), False, spark)
        except plain.NeedsRich:
            pass
    from rich.console import Console
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=color, no_color=not color, width=width if wrap else NO_WRAP,
                  highlight=False, soft_wrap=not wrap)
    return _render(report, con, wrap, spark, buf)


def _render(report: Report, con: Any, wrap: bool, spark: bool, buf: io.StringIO | None = None) -> str:
    """The report printed on ``con`` (rich's Console writing to ``buf``, or plain.Console)."""
    if wrap:
        from rich.padding import Padding
        from rich.table import Table
        from rich.text import Text

    def out(markup: str, indent: int = 0, bullet: str = "") -> None:
        if not wrap:
            con.print(" " * indent + (bullet + " " if bullet else "") + markup)
        elif bullet:  # the bullet in its own column: the step's next lines stay under its text
            grid = Table.grid(padding=(0, 1, 0, 0))
            grid.add_column(no_wrap=True)
            grid.add_column()
            grid.add_row(Text.from_markup(bullet), Text.from_markup(markup))
            con.print(Padding(grid, (0, 0, 0, indent), expand=False))
        else:
            con.print(Padding(Text.from_markup(markup), (0, 0, 0, indent), expand=False))

    head = "grpo-doctor " + report.tool_version
    summary = run_line(report.run)
    if summary:
        head += (" · newest run: " if report.runs else " · ") + summary
    out(f"[dim]{escape(head)}[/dim]")
    shown = [i.path + (f" ({'skipped' if i.kind == 'skipped' else i.kind}: {i.note})" if i.note else "")
             for i in report.inputs]
    if len(shown) > INPUTS_SHOWN:   # hundreds of rank logs: the first ones, the count, the rest in --format json
        shown = shown[:INPUTS_SHOWN] + [f"... and {len(shown) - INPUTS_SHOWN:,} more (all in --format json)"]
    out(f"[dim]inputs: {escape(', '.join(shown))}[/dim]")
    if report.config:  # which file's select / ignore / fail-on shaped this report
        out(f"[dim]config: {escape(report.config)}[/dim]")
    listed = runs_lines(report)
    if listed:
        out(f"[bold]{escape(listed[0])}[/bold]")
        for line in listed[1:]:
            out(escape(line), 2)
    vit = vitals_line(report.run) if not listed else ""   # a folder of runs: each row says how far its run got
    if not report.findings:
        out("[bold green]No problem found.[/bold green]" + (f" Vitals: {escape(vit)}." if vit else ""))
        return _tidy(buf.getvalue() if buf is not None else con.getvalue())
    if vit:  # under the inputs, once: how far the run got before what the findings say
        out(f"[dim]vitals: {escape(vit)}[/dim]")
    sparks: dict[int, str] = {}
    if spark and report.series:
        from .spark import lines_for
        sparks = lines_for(report.series)
    section = None
    for i, f in enumerate(report.findings, 1):
        con.print()
        if f.run is not None and f.run.name and f.run.name != section:  # a folder of runs: each run's findings
            section = f.run.name
            out(f"[bold]── run {escape(section)} ──[/bold]")
            con.print()
        role = {Role.root: " [bold](first cause)[/bold]", Role.consequence: " [dim](consequence)[/dim]"}.get(f.role, "")
        extra = []
        if f.count > 1:
            extra.append(f"×{f.count}")
        if f.ranks:
            extra.append("ranks " + ",".join(map(str, f.ranks[:16])) + ("…" if len(f.ranks) > 16 else ""))
        if f.run is not None:
            extra.append(f.run.label())
        out(f"[{_STYLE[f.severity]}]{f.severity.name.upper()}[/] [bold]{escape(f.title)}[/bold]{role}{sureness(f)}"
            f"  [dim]{escape(f.rule_id)} {escape(f.category)}{(' ' + ' '.join(extra)) if extra else ''}[/dim]",
            bullet=f"{i}.")
        out(escape(f.message), 3)
        if i - 1 in sparks:
            out(f"[cyan]{escape(sparks[i - 1])}[/cyan]", 3)
        if f.evidence:
            out("[dim]evidence:[/dim]", 3)
            for e in f.evidence:
                out(f"[dim]{escape(e.path)}{f':{e.line}' if e.line else ''}[/dim] {escape(e.text)}", 5)
        for said in raised_lines(f.raised_by):  # doctor/classify/provenance.py: where the quoted error is raised
            out(f"[dim]{escape(said)}[/dim]", 3)
        fixes = list(f.fix) + known.fix_lines(f, report.run)
        if fixes:
            out("[green]fix:[/green]", 3)
            for step in fixes:
                out(escape(step), 5, bullet="[green]•[/green]")
        if f.action:
            out(f"[bold]action:[/bold] {escape(f.action)}" + (f" [dim]{escape(f.command)}[/dim]" if f.command else ""), 3)
        if f.verify:
            out(f"[dim]verify: {escape(f.verify)}[/dim]", 3)
        same = known.same_failure(f, report.run)
        if same:  # doctor/known: public threads about the same failure mechanism (raise site, or error and phase)
            out("[dim]known issues:[/dim]", 3)
            for m in same:
                out(escape(known.describe(m)), 5, bullet="[dim]-[/dim]")
        alike = known.similar(f, report.run)
        if alike:  # threads whose error only reads alike: listed with their similarity, never a fix
            out("[dim]similar threads (similar wording, not shown to be the same failure):[/dim]", 3)
            for m in alike:
                out(escape(known.similar_line(m)), 5, bullet="[dim]-[/dim]")
    fixed = (report.run.get("relaunch") or (report.run.get("preflight") or {}).get("relaunch")) \
        if isinstance(report.run, dict) else None
    if isinstance(fixed, dict) and fixed.get("command"):   # doctor/preflight_relaunch.py
        con.print()
        verdict = ("preflight accepts it" if fixed.get("accepted") else
                   f"preflight still reports {', '.join(map(str, fixed.get('remaining') or ()))}")
        out(f"[bold]One command with every fix[/bold] ({escape(verdict)}):")
        out(escape(fixed["command"]), 2)
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in Severity}
    con.print()
    out(f"[dim]{counts[Severity.error]} error(s), {counts[Severity.warning]} warning(s), {counts[Severity.info]} "
        f"info. grpo-doctor explain <RULE> for details.[/dim]")
    return _tidy(buf.getvalue() if buf is not None else con.getvalue())


def sureness(f: Finding) -> str:
    """' (likely)', ' (possible; also considered: a, b)' beside the title (rich markup); nothing for certain, the
    usual case (doctor/confidence.py)."""
    if f.confidence == "certain":
        return ""
    also = f"; also considered: {', '.join(f.alternatives)}" if f.alternatives else ""
    return f" [dim]({escape(f.confidence + also)})[/dim]"


def quiet_line(f: Finding) -> str:
    """`path:line: GD101 error title` (ruff's concise form); the first evidence line gives the place."""
    where = ""
    if f.evidence:
        e = f.evidence[0]
        where = f"{e.path}:{e.line}: " if e.line else f"{e.path}: "
    return _clean(f"{where}{f.rule_id} {f.severity.name} {f.title}")


def _clean(s: str) -> str:
    return "".join(c if c.isprintable() else " " for c in s)


def _tidy(text: str) -> str:
    """No trailing blanks (padding of the wrapped layout)."""
    return "\n".join(line.rstrip(" ") for line in text.split("\n"))
