"""Markdown, ready to paste into a GitHub issue. Only the tool's own markup is markup: every input-derived string
goes through render.safe (escaped text, code spans and fences longer than any backtick run inside)."""
from __future__ import annotations

from .. import known
from ..model import Finding, Report
from . import run_line
from .safe import md_code, md_fence, md_message, md_text


def render(report: Report) -> str:
    out: list[str] = ["## grpo-doctor report", ""]
    summary = run_line(report.run)
    if summary:
        out += ["Run: " + md_text(summary), ""]
    if not report.findings:
        out += ["No problem found.", ""]
    for i, f in enumerate(report.findings, 1):
        tag = f" ({f.role.value})" if f.role.value != "standalone" else ""
        out.append(f"### {i}. {f.severity.name.upper()}: {md_message(f.title)}{tag}")
        out.append("")
        out.append(f"{md_code(f.rule_id)} {md_code(f.slug)} · category {md_code(f.category)}"
                   + (f" · seen {f.count}×" if f.count > 1 else "")
                   + (f" · ranks {', '.join(map(str, f.ranks))}" if f.ranks else ""))
        out.append("")
        out.append(md_message(f.message))
        out.append("")
        if f.evidence:
            out.append("Evidence:")
            out.append("")
            out += md_fence([f"{e.path}{f':{e.line}' if e.line else ''}: {e.text}" for e in f.evidence])
            out.append("")
        fixes = list(f.fix) + known.fix_lines(f)
        if fixes:
            out.append("Fix:")
            out.append("")
            for step in fixes:
                out.append(f"- {md_message(step)}")
            out.append("")
        out += known_lines(f)
    out.append(f"<sub>grpo-doctor {md_text(report.tool_version)} · inputs: "
               + ", ".join(f"{md_code(i.path)} ({md_text(i.kind + (': ' + i.note if i.note else ''))})"
                         for i in report.inputs) + "</sub>")
    return "\n".join(out) + "\n"


def known_lines(f: Finding) -> list[str]:
    """Known issues (doctor/known) as links; every text from the index (titles are input too) is escaped."""
    shown = known.for_finding(f)
    if not shown:
        return []
    out = ["Known issues:", ""]
    for m in shown:
        head = f"[{md_text(m.thread)}]({m.url})" if known.safe_url(m.url) else md_text(m.thread)
        title = f" ({m.title})" if m.title else ""
        out.append(f"- {head}{md_text(title)}, {md_text(known.details(m))}")
    return out + [""]
