"""One job's record in the store: how the job ended, what the analysis found, where the full report is.

Written whole to a temporary name and renamed into place (doctor/live/atomic.py), so that a reader, or a hook on
another node, sees either no record or a complete one; a hook killed mid-write leaves a ``*.tmp*`` file that no
``*.json`` glob matches. The record's shape is doctor/data/fleet-record-1.json (``record_schema``: 1)."""
from __future__ import annotations

import dataclasses
import os
from datetime import datetime, timezone
from typing import Any

from .. import __version__, lazyre
from ..live.atomic import write_atomic
from ..render.safe import json_dumps
from .diagnose import Outcome

RECORD_SCHEMA = 1
REPORTS_DIR = "reports"   # full reports beside the records, out of the records' *.json glob
EVIDENCE_CHARS = 500
_UNSAFE = lazyre.compile(r"[^A-Za-z0-9._-]+")
_JOB_KEYS = ("job_id", "array_job_id", "array_task_id", "name", "user", "partition", "account", "cluster", "nodes",
             "num_nodes", "gpus", "submit", "start", "end", "run_seconds", "state", "reason", "exit_code", "signal",
             "work_dir", "stdout", "stderr")


def record_name(cluster: str | None, job_id: str) -> str:
    """``<cluster>-<job id>.json``: one name per job, so the epilog and a follow-up job for the same job replace
    each other's record instead of counting the job twice."""
    return f"{_UNSAFE.sub('_', cluster or 'cluster')}-{_UNSAFE.sub('_', job_id or 'unknown')}.json"


def _finding(f: dict) -> dict:
    ev = (f.get("evidence") or [None])[0]
    return {"rule_id": f.get("rule_id"), "category": f.get("category"), "severity": f.get("severity"),
            "confidence": f.get("confidence"), "title": f.get("title"), "action": f.get("action") or None,
            "evidence": {"path": ev["path"], "line": ev["line"], "text": ev["text"][:EVIDENCE_CHARS]} if ev else None}


def primary_of(findings: list[dict]) -> dict | None:
    """The report's first error (the root cause comes first), else its first warning: an info is no failure."""
    for sev in ("error", "warning"):
        for f in findings:
            if f.get("severity") == sev:
                return f
    return None


def build(job: Any, source: str, outcome: Outcome | None, located: Any = None, report_path: str | None = None,
          notes: list[str] | None = None) -> dict:
    """The record: ``job`` a SlurmJob (or any dataclass with the same fields), the analysis outcome (None: not
    analysed, e.g. the job succeeded)."""
    fields = dataclasses.asdict(job) if dataclasses.is_dataclass(job) and not isinstance(job, type) else dict(job)
    job_out = {("id" if k == "job_id" else k): fields.get(k) for k in _JOB_KEYS}
    report = outcome.report if outcome is not None else None
    findings = (report or {}).get("findings") or []
    primary = primary_of(findings)
    run = (report or {}).get("run") or {}
    gpus, secs = job_out.get("gpus"), job_out.get("run_seconds")
    rec: dict[str, Any] = {
        "record_schema": RECORD_SCHEMA,
        "tool": {"name": "grpo-doctor", "version": __version__},
        "source": source,
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "job": job_out,
        "gpu_hours": round(gpus * secs / 3600.0, 4) if gpus is not None and secs is not None else None,
        "framework": {"name": run.get("framework"), "version": run.get("framework_version")} if report else None,
        "primary": _finding(primary) if primary else None,
        "others": [{k: v for k, v in _finding(f).items() if k != "evidence"} for f in findings if f is not primary],
        "action": (primary or {}).get("action") or None,
        "report": report_path,
        "analysis": {
            "status": outcome.status if outcome is not None else "skipped",
            "seconds": round(outcome.seconds, 3) if outcome is not None else 0.0,
            "error": outcome.error if outcome is not None else None,
            "inputs": list(getattr(located, "paths", []) or []),
            "output_dir": getattr(located, "output_dir", None),
            "notes": list(fields.get("notes") or []) + list(getattr(located, "notes", []) or []) + list(notes or []),
        },
    }
    return rec


def write(store: str, record: dict, report: dict | None) -> str:
    """Write the full report (when there is one) and then the record, each atomically; the record's path."""
    job = record["job"]
    name = record_name(job.get("cluster"), str(job.get("id") or ""))
    os.makedirs(store, exist_ok=True)
    if report is not None:
        rdir = os.path.join(store, REPORTS_DIR)
        os.makedirs(rdir, exist_ok=True)
        rpath = os.path.join(rdir, name)
        write_atomic(rpath, (json_dumps(report, indent=1) + "\n").encode("utf-8"))
        record["report"] = rpath
    path = os.path.join(store, name)
    write_atomic(path, (json_dumps(record) + "\n").encode("utf-8"))  # one line: JSON Lines readers take it too
    return path
