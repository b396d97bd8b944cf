"""The JSON report (schema version 1). Written with json.dumps (through render.safe: non-finite numbers as the
strings "nan"/"inf"/"-inf", invisible characters as \\uXXXX, undecodable file-name bytes as \\xNN); no rich here."""
from __future__ import annotations

from ..model import Report
from .safe import json_dumps


def render(report: Report) -> str:
    return json_dumps(report.to_json(), indent=2) + "\n"
