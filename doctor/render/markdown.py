"""Markdown, ready to paste into a GitHub issue."""
from __future__ import annotations

from ..model import Report
from . import run_line


def _fence(text: str) -> str:
    return text.replace("```", "ˋˋˋ")


def render(report: Report) -> str:
    out: list[str] = ["## grpo-doctor report", ""]
    summary = run_line(report.run)
    if summary:
        out += ["Run: " + summary, ""]
    if not report.findings:
        out += ["No problem found.", ""]
    for i, f in enumerate(report.findings, 1):
        tag = f" ({f.role.value})" if f.role.value != "standalone" else ""
        out.append(f"### {i}. {f.severity.name.upper()}: {f.title}{tag}")
        out.append("")
        out.append(f"`{f.rule_id}` `{f.slug}` · category `{f.category}`"
                   + (f" · seen {f.count}×" if f.count > 1 else "")
                   + (f" · ranks {', '.join(map(str, f.ranks))}" if f.ranks else ""))
        out.append("")
        out.append(f.message)
        out.append("")
        if f.evidence:
            out.append("Evidence:")
            out.append("")
            out.append("```")
            for e in f.evidence:
                out.append(_fence(f"{e.path}{f':{e.line}' if e.line else ''}: {e.text}"))
            out.append("```")
            out.append("")
        if f.fix:
            out.append("Fix:")
            out.append("")
            for step in f.fix:
                out.append(f"- {step}")
            out.append("")
    out.append(f"<sub>grpo-doctor {report.tool_version} · inputs: "
               + ", ".join(f"`{i.path}` ({i.kind})" for i in report.inputs) + "</sub>")
    return "\n".join(out) + "\n"
