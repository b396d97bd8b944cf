"""Checkpoint fixtures: every fixtures/ckpt/<case>/ is checked with check-ckpt and compared with
<case>.expected.json (GRPO_DOCTOR_UPDATE_GOLDEN=1 rewrites them; review the diff by hand).

provenance.toml of each case: ``source``, ``check`` (paths inside the case to pass to check-ckpt), optional
``expect`` (--expect full|lora), and what a person expects: ``expect_category`` (findings[0]),
``expect_rules``, ``forbid_rules``, ``expect_no_error``.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from conftest import ROOT

from doctor.ckpt import check_paths

CKPT = ROOT / "fixtures" / "ckpt"
UPDATE = os.environ.get("GRPO_DOCTOR_UPDATE_GOLDEN") == "1"
CASES = sorted(p.name for p in CKPT.iterdir() if p.is_dir()) if CKPT.is_dir() else []


def provenance(case: str) -> dict:
    return tomllib.loads((CKPT / case / "provenance.toml").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _no_base_lookup(monkeypatch):
    """Goldens must not depend on whether this machine has the base model the fixture's args.json names."""
    import doctor.sources.checkpoint as ck
    monkeypatch.setattr(ck, "LOOK_UP_BASE", False)


def report_for(case: str) -> dict:
    prov = provenance(case)
    old = os.getcwd()
    os.chdir(CKPT)
    try:
        rep = check_paths([f"{case}/{p}" for p in prov["check"]], expect=prov.get("expect")).to_json()
    finally:
        os.chdir(old)
    rep["tool"]["version"] = "X"
    return rep


def test_there_are_real_and_built_fixtures():
    real = [c for c in CASES if c.startswith("real-")]
    built = [c for c in CASES if c.startswith("edge-")]
    assert len(real) >= 4 and len(built) >= 5, (real, built)


def test_fixtures_stay_small():
    total = sum(p.stat().st_size for p in CKPT.rglob("*") if p.is_file() and not p.is_symlink())
    assert total < 10_000_000, total


@pytest.mark.parametrize("case", CASES)
def test_expected_findings(case):
    prov = provenance(case)
    assert prov.get("source"), f"{case}: provenance.toml needs a source"
    findings = report_for(case)["findings"]
    if prov.get("expect_no_error"):
        assert [f["rule_id"] for f in findings if f["severity"] == "error"] == []
    if "expect_category" in prov:
        assert findings and findings[0]["category"] == prov["expect_category"], findings[:1]
    got = {f["rule_id"] for f in findings}
    for rid in prov.get("expect_rules", []):
        assert rid in got, f"{case}: {rid} should fire"
    for rid in prov.get("forbid_rules", []):
        assert rid not in got, f"{case}: {rid} must not fire"


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    rep = report_for(case)
    path = CKPT / f"{case}.expected.json"
    if UPDATE:
        path.write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"{path.name} missing: run with GRPO_DOCTOR_UPDATE_GOLDEN=1 and review it"
    assert rep == json.loads(path.read_text(encoding="utf-8"))
