"""Golden reports: every fixtures/logs/<case>/ is analysed and compared with <case>.expected.json.

Run with GRPO_DOCTOR_UPDATE_GOLDEN=1 to rewrite the goldens, then review the diff by hand.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from doctor.analyze import analyze

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
UPDATE = os.environ.get("GRPO_DOCTOR_UPDATE_GOLDEN") == "1"


def cases() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []


def provenance(case: str) -> dict:
    return tomllib.loads((FIXTURES / case / "provenance.toml").read_text(encoding="utf-8"))


def report_for(case: str) -> dict:
    """The JSON report of a case, with paths relative to fixtures/logs and the tool version blanked."""
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        rep = analyze([case]).to_json()
    finally:
        os.chdir(old)
    rep["tool"]["version"] = "X"
    return rep


def golden_path(case: str) -> Path:
    return FIXTURES / f"{case}.expected.json"


def write_golden(case: str, rep: dict) -> None:
    golden_path(case).write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
