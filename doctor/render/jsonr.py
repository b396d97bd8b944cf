"""The JSON report (schema version 1). Written with json.dumps; no rich here."""
from __future__ import annotations

import json

from ..model import Report


def render(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False, allow_nan=False, default=str) + "\n"
