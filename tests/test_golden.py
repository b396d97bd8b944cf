"""Every fixture's report equals its reviewed golden, and its primary finding is the expected one.

``provenance.toml`` of each case says where the log came from and what a person expects:
``expect_category`` (findings[0].category, checked by hand against the dev-log label or the real run),
or ``expect_no_error = true`` for healthy and control runs.
"""
from __future__ import annotations

import json

import pytest
from golden import UPDATE, cases, golden_path, provenance, report_for, write_golden

CASES = cases()


def test_there_are_fixtures():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES)
def test_expected_primary_finding(case):
    prov = provenance(case)
    assert prov.get("source"), f"{case}: provenance.toml needs a source"
    rep = report_for(case)
    findings = rep["findings"]
    if prov.get("expect_no_error"):
        errors = [f["rule_id"] + " " + f["category"] for f in findings if f["severity"] == "error"]
        assert errors == [], f"{case}: a healthy/control run must have no error finding"
    if "expect_category" in prov:
        assert findings, f"{case}: expected {prov['expect_category']}, got no finding"
        assert findings[0]["category"] == prov["expect_category"], (
            f"{case}: findings[0] is {findings[0]['rule_id']} {findings[0]['category']}")
    for rid in prov.get("expect_rules", []):
        assert rid in {f["rule_id"] for f in findings}, f"{case}: {rid} should fire"
    for rid in prov.get("forbid_rules", []):
        assert rid not in {f["rule_id"] for f in findings}, f"{case}: {rid} must not fire"


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    rep = report_for(case)
    path = golden_path(case)
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"{path.name} missing: run with GRPO_DOCTOR_UPDATE_GOLDEN=1 and review it")
        write_golden(case, rep)
        return
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert rep == expected
