"""Renderers: a Report in, text out. Only text.py imports rich."""
from __future__ import annotations

from typing import Any

from ..swift.trainer_kind import GROUP_KINDS, LABEL


def run_line(run: dict[str, Any]) -> str:
    """'ms-swift 4.6.0, trl 0.29.1, world size 8' from the report's run object ('' when nothing is known); a
    version inferred from the wording of the errors (``inferred_versions``) says so: 'ms-swift 3.6-3.11 (from the
    wording of the error)'."""
    bits = []
    fw = str(run.get("framework") or "")
    inferred = {k: v for k, v in (run.get("inferred_versions") or {}).items() if isinstance(v, dict)}

    def guess(name: str) -> str:
        v = inferred[name]
        return f"{name} {v.get('shown') or v.get('versions')} (from {v.get('from')})"

    if run.get("framework_version"):
        bits.append(f"{fw} {run['framework_version']}")
    elif fw in inferred:
        bits.append(guess(fw))
    elif run.get("framework_major") and fw == "ms-swift":
        bits.append(f"ms-swift {run['framework_major']}.x")
    elif fw:   # its release not shown: the name alone, so that the reader sees whose terms the fixes use
        bits.append(fw)
    if not fw:
        bits.append("framework not told by the log")
    for name, ver in (run.get("versions") or {}).items():
        if name != fw:
            bits.append(f"{name} {ver}")
    for name in inferred:
        if name != fw and name not in (run.get("versions") or {}):
            bits.append(guess(name))
    if run.get("world_size"):
        bits.append(f"world size {run['world_size']}")
    trainer = run.get("trainer")
    if isinstance(trainer, str) and trainer not in GROUP_KINDS:   # a GRPO run is the default subject: said only otherwise
        bits.append(f"{LABEL.get(trainer, trainer)} trainer, not GRPO (from the {run.get('trainer_source') or 'log'})"
                    if trainer not in ("serve", "infer") else f"{LABEL.get(trainer, trainer)} only, no trainer")
    return ", ".join(bits)


def vitals_line(run: dict[str, Any]) -> str:
    """The run's vitals (doctor/vitals.py) as one line, '' when the inputs show none: raw input-derived text (a
    checkpoint's name) that each renderer escapes its own way."""
    v = run.get("vitals")
    summary = v.get("summary") if isinstance(v, dict) else None
    return summary if isinstance(summary, str) else ""


def runs_lines(report: Any) -> list[str]:
    """A folder of runs (doctor/analyze_runs.py): a heading and one line per run, newest first ('v3-20250101-120000
    failed  step 12/100  GD101 error: <title>  action: relaunch'); [] for one run. Raw input-derived text: each
    renderer escapes it its own way."""
    rows = report.runs
    if not rows:
        return []
    named = sum(1 for r in rows if not str(r.get("name", "")).startswith("("))
    out = [f"{named} runs, each analyzed on its own (newest first):"]
    for row in rows:
        bits = [str(row.get("name")), str(row.get("status"))]
        if row.get("steps") is not None:
            bits.append(f"step {row['steps']}/{row['max_steps']}" if row.get("max_steps") else f"step {row['steps']}")
        p = row.get("primary")
        if p:
            bits.append(f"{p['rule_id']} {p['severity']}: {p['title']}")
        if row.get("action"):
            bits.append(f"action: {row['action']}")
        if row.get("note"):
            bits.append(str(row["note"]))
        out.append("  ".join(bits))
    return out
