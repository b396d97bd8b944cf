"""Markdown, ready to paste into a GitHub issue. Only the tool's own markup is markup: every input-derived string
goes through render.safe (escaped text, code spans and fences longer than any backtick run inside).

For an issue tracker: paths are written relative to the run directory (no user names or cluster paths; the
directory itself is named by its last part only), the launch flags come first (what maintainers ask for), and
long evidence is folded into ``<details>``.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Any

from .. import known, lazyre
from ..model import Evidence, Finding, Report, raised_lines
from . import run_line, runs_lines, vitals_line
from .paths import rel_path, run_base
from .safe import md_code, md_fence, md_message, md_text

EVIDENCE_SHOWN = 4     # evidence lines shown before the rest is folded
EVIDENCE_CHARS = 1500  # ... or fewer when the lines are long
LAUNCH_SHOWN = 12      # a launch block longer than this is folded
_SECRET = lazyre.compile(r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


def _where(e: Evidence, base: str | None) -> str:
    return f"{rel_path(e.path, base)}{f':{e.line}' if e.line else ''}: {e.text}"


def evidence_block(evidence: tuple[Evidence, ...] | list[Evidence], base: str | None) -> list[str]:
    """A fenced block of the evidence; past EVIDENCE_SHOWN lines (or EVIDENCE_CHARS) the rest is in <details>."""
    lines = [_where(e, base) for e in evidence]
    shown, size = 0, 0
    for line in lines:
        if shown >= EVIDENCE_SHOWN or (shown and size + len(line) > EVIDENCE_CHARS):
            break
        shown, size = shown + 1, size + len(line)
    out = md_fence(lines[:shown]) + [""]
    rest = lines[shown:]
    if rest:
        out += [f"<details><summary>{len(rest)} more evidence line{'s' if len(rest) > 1 else ''}</summary>", "",
                *md_fence(rest), "", "</details>", ""]
    return out


def _arg(value: Any) -> str | None:
    if value is None or value == [] or value == {} or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return " ".join(shlex.quote(str(v)) for v in value)
    return shlex.quote(str(value))


def launch_lines(run: dict[str, Any]) -> list[str]:
    """``ENV=... swift rlhf \\ --flag value ...`` from the run's env and the flags grpo-doctor read (secrets such
    as tokens and keys are left out); [] when nothing is known."""
    args = run.get("args") or {}
    flags = [f"--{k} {v}" for k, v in ((k, _arg(v)) for k, v in args.items()) if v is not None]
    env = [f"{k}={shlex.quote(str(v))}" for k, v in (run.get("env") or {}).items() if not _SECRET.search(str(k))]
    if not flags and not env:
        return []
    cmd = run.get("command")
    prog = f"swift {cmd}" if cmd and run.get("framework") == "ms-swift" else (str(cmd) if cmd else "")
    head = " ".join([*env, prog]).strip() or "# flags"
    body = [head] + [f"    {f}" for f in flags]
    return [line + " \\" for line in body[:-1]] + [body[-1]]


def _launch(run: dict[str, Any], whose: str = "") -> list[str]:
    lines = launch_lines(run)
    if not lines:
        return []
    note = f"Launch flags ({whose}as grpo-doctor read them from the command, args.json or the log):"
    block = md_fence(lines)
    block[0] += "bash"
    if len(lines) <= LAUNCH_SHOWN:
        return [note, "", *block, ""]
    return [f"<details><summary>Launch flags ({whose}{len(lines) - 1} lines, as grpo-doctor read them from the command, "
            "args.json or the log)</summary>", "", *block, "", "</details>", ""]


def render(report: Report) -> str:
    out: list[str] = ["## grpo-doctor report", ""]
    summary = run_line(report.run)
    if summary:
        out += [("Newest run: " if report.runs else "Run: ") + md_text(summary), ""]
    listed = runs_lines(report)
    if listed:  # a folder of runs: one line per run, then each run's findings
        out += [md_text(listed[0]), ""] + [f"- {md_message(line)}" for line in listed[1:]] + [""]
    vit = vitals_line(report.run) if not listed else ""
    if vit and report.findings:  # with no finding it ends "No problem found." below instead
        out += ["Vitals: " + md_text(vit), ""]
    base = run_base(report)
    if base not in (None, "", "."):
        where = "folder of runs" if report.runs else "run directory"
        out += [f"Paths are relative to the {where} {md_code(os.path.basename(base) or base)}.", ""]
    out += _launch(report.run, "the newest run's, " if report.runs else "")
    if not report.findings:
        out += ["No problem found." + (f" Vitals: {md_text(vit)}." if vit else ""), ""]
    for i, f in enumerate(report.findings, 1):
        tag = f" ({f.role.value})" if f.role.value != "standalone" else ""
        out.append(f"### {i}. {f.severity.name.upper()}: {md_message(f.title)}{tag}")
        out.append("")
        out.append(f"{md_code(f.rule_id)} {md_code(f.slug)} · category {md_code(f.category)} · {_sureness(f)}"
                   + (f" · seen {f.count}×" if f.count > 1 else "")
                   + (f" · ranks {', '.join(map(str, f.ranks))}" if f.ranks else "")
                   + (f" · {md_message(f.run.label())}" if f.run is not None else ""))
        out.append("")
        out.append(md_message(f.message))
        out.append("")
        if f.evidence:
            out.append("Evidence:")
            out.append("")
            out += evidence_block(f.evidence, base)
        for said in raised_lines(f.raised_by):  # doctor/classify/provenance.py: where the quoted error is raised
            out.append(md_message(said))
            out.append("")
        fixes = list(f.fix) + known.fix_lines(f, report.run)
        if fixes:
            out.append("Fix:")
            out.append("")
            for step in fixes:
                out.append(f"- {md_message(step)}")
            out.append("")
        if f.action:
            out.append(f"Action: **{md_text(f.action)}**" + (f" · verify: {md_message(f.verify)}" if f.verify else ""))
            out.append("")
            if f.command:
                out += md_fence([f.command])
                out.append("")
        out += known_lines(f, report.run)
    out.append(f"<sub>grpo-doctor {md_text(report.tool_version)} · inputs: "
               + ", ".join(f"{md_code(rel_path(i.path, base))} ({md_text(i.kind + (': ' + i.note if i.note else ''))})"
                         for i in report.inputs) + "</sub>")
    return "\n".join(out) + "\n"


def _sureness(f: Finding) -> str:
    """'confidence `likely`', with the other categories considered for a possible finding."""
    out = f"confidence {md_code(f.confidence)}"
    if f.alternatives:
        out += " (also considered: " + ", ".join(md_code(c) for c in f.alternatives) + ")"
    return out


def known_lines(f: Finding, run: dict | None = None) -> list[str]:
    """Known issues (doctor/known) as links; every text from the index (titles are input too) is escaped."""
    out: list[str] = []
    same, alike = known.same_failure(f, run), known.similar(f, run)
    if same:  # the same failure mechanism: raise site, or error and phase
        out += ["Known issues:", ""]
        for m in same:
            title = f" ({m.title})" if m.title else ""
            out.append(f"- {_link(m)}{md_text(title)}, {md_text(known.details(m))}")
        out.append("")
    if alike:  # similar wording only: listed with the similarity, never a fix
        out += ["Similar threads (similar wording, not shown to be the same failure):", ""]
        for m in alike:
            out.append(f"- {_link(m)}{md_text(known.similar_line(m)[len(m.thread):])}")
        out.append("")
    return out


def _link(m: known.Match) -> str:
    return f"[{md_text(m.thread)}]({m.url})" if known.safe_url(m.url) else md_text(m.thread)
