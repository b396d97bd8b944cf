"""The JSON report (schema version 1). Written with json.dumps (through render.safe: non-finite numbers as the
strings "nan"/"inf"/"-inf", invisible characters as \\uXXXX, undecodable file-name bytes as \\xNN); no rich here."""
from __future__ import annotations

from pathlib import Path

from ..model import Report
from .safe import json_dumps

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "report-schema-1.json"


def render(report: Report) -> str:
    return json_dumps(report.to_json(), indent=2) + "\n"


def schema_text() -> str:
    """The published JSON Schema (draft 2020-12) of this report: ``grpo-doctor schema``."""
    return SCHEMA_PATH.read_text(encoding="utf-8")
