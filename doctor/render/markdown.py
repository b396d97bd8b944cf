"""Markdown, ready to paste into a GitHub issue."""
from __future__ import annotations

from ..model import Report


def _fence(text: str) -> str:
    return text.replace("```", "ˋˋˋ")


def render(report: Report) -> str:
    out: list[str] = ["## grpo-doctor report", ""]
    run = report.run
    bits = []
    if run.get("framework_version"):
        bits.append(f"ms-swift {run['framework_version']}")
    elif run.get("framework_major"):
        bits.append(f"ms-swift {run['framework_major']}.x")
    for name, ver in (run.get("versions") or {}).items():
        if name != "ms-swift":
            bits.append(f"{name} {ver}")
    if run.get("world_size"):
        bits.append(f"world size {run['world_size']}")
    if bits:
        out += ["Run: " + ", ".join(bits), ""]
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
                out.append(_fence(f"{e.path}:{e.line}: {e.text}"))
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
