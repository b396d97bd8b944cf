"""preflight on real commands: every fixtures/preflight/<case>/command.txt against its reviewed golden, the
rules its provenance expects, and, for real runs, the ms-swift error line predicted word for word."""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from doctor.preflight import preflight_command

PRE = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"
UPDATE = os.environ.get("GRPO_DOCTOR_UPDATE_GOLDEN") == "1"
CASES = sorted(p.name for p in PRE.iterdir() if p.is_dir())


def prov(case: str) -> dict:
    return tomllib.loads((PRE / case / "provenance.toml").read_text(encoding="utf-8"))


def report(case: str) -> dict:
    p = prov(case)
    argv = shlex.split((PRE / case / "command.txt").read_text(encoding="utf-8"))
    old = os.getcwd()
    os.chdir(PRE / case)
    try:
        rep = preflight_command(argv, {}, gpu_mem_gib=p.get("gpu_mem"), swift_version=p.get("swift_version"),
                                live_gpu=False).to_json()
    finally:
        os.chdir(old)
    rep["tool"]["version"] = "X"
    return rep


def test_there_are_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES)
def test_expected_rules(case):
    p = prov(case)
    assert p.get("source")
    found = report(case)["findings"]
    ids = {f["rule_id"] for f in found}
    for rid in p.get("expect_rules", []):
        assert rid in ids, f"{case}: {rid} should fire, got {sorted(ids)}"
    if p.get("expect_no_error"):
        assert [f["rule_id"] for f in found if f["severity"] == "error"] == []
    if "expect_category" in p:
        assert found[0]["category"] == p["expect_category"]


@pytest.mark.parametrize("case", [c for c in CASES if (PRE / c / "real-error.txt").exists()])
def test_predicts_the_real_error_line(case):
    real = (PRE / case / "real-error.txt").read_text(encoding="utf-8").strip()
    real = real.split("]: ", 1)[1] if real.startswith("[rank") else real
    texts = [e["text"] for f in report(case)["findings"] for e in f["evidence"]]
    assert real in texts, f"{case}: predicted {texts}, the real run printed {real!r}"


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    rep = report(case)
    path = PRE / f"{case}.expected.json"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"{path.name} missing: run with GRPO_DOCTOR_UPDATE_GOLDEN=1 and review it")
        path.write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert rep == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.swift
def test_fields_table_is_the_installed_dataclass():
    """Where ms-swift 4.6 is importable, the committed table equals dataclasses.fields(RLHFArguments)."""
    import dataclasses
    import importlib.metadata
    try:
        if not importlib.metadata.version("ms-swift").startswith("4.6"):
            pytest.skip("ms-swift here is not 4.6")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ms-swift not installed")
    from swift.arguments import RLHFArguments  # type: ignore

    from doctor.checks.args._swift_fields import RLHF_FIELDS_4_6
    assert {f.name for f in dataclasses.fields(RLHFArguments)} == set(RLHF_FIELDS_4_6)
