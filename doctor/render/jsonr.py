"""The JSON report (schema version 1). Written with json.dumps (through render.safe: non-finite numbers as the
strings "nan"/"inf"/"-inf", invisible characters as \\uXXXX, undecodable file-name bytes as \\xNN); no rich here."""
from __future__ import annotations

from pathlib import Path

from ..model import Report
from .safe import json_dumps

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "report-schema-1.json"


def render(report: Report) -> str:
    doc = report.to_json()
    add_known_issues(report, doc)
    return json_dumps(doc, indent=2) + "\n"


def add_known_issues(report: Report, doc: dict) -> None:
    """Known issues (doctor/known): ``known_issues`` on each finding that has any, the resolved one as a fix."""
    from .. import known
    for f, out in zip(report.findings, doc["findings"]):
        items = known.json_items(f, report.run)
        if items:
            out["known_issues"] = items
            out["fix"] = list(out["fix"]) + known.fix_lines(f, report.run)


def schema_text() -> str:
    """The published JSON Schema (draft 2020-12) of this report: ``grpo-doctor schema``."""
    return SCHEMA_PATH.read_text(encoding="utf-8")
