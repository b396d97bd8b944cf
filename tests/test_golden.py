"""Every golden case (analyze: fixtures/logs, check-ckpt: fixtures/ckpt, preflight: fixtures/preflight) gives
its reviewed golden report, and the findings a person expects (provenance.toml; see tests/golden.py)."""
from __future__ import annotations

import json

import pytest
from golden import KINDS, UPDATE, all_cases, expectation_errors, golden_path, provenance, report_for, write_golden

WORD_READING = True  # tests/conftest.py: the category-from-words post-pass stays on here

CASES = all_cases()
IDS = [f"{kind}/{case}" for kind, case in CASES]


def test_every_kind_has_cases():
    counts = {k: len(v.cases()) for k, v in KINDS.items()}
    assert counts["logs"] >= 10 and counts["ckpt"] >= 9 and counts["preflight"] >= 10, counts


@pytest.mark.parametrize(("kind", "case"), CASES, ids=IDS)
def test_golden(kind, case):
    rep = report_for(case, kind)
    assert expectation_errors(case, provenance(case, kind), rep["findings"]) == []
    path = golden_path(case, kind)
    if UPDATE:
        write_golden(case, rep, kind)
        return
    assert path.exists(), f"{path.name} missing: run with GRPO_DOCTOR_UPDATE_GOLDEN=1 and review it"
    assert rep == json.loads(path.read_text(encoding="utf-8"))


def test_expectations_can_fail():
    """The expectation check itself: a wrong category, a missing rule and an error in a healthy run are caught."""
    f = [{"rule_id": "GD101", "category": "batch-divisibility", "severity": "error"}]
    assert expectation_errors("c", {"source": "x", "expect_category": "cuda-oom"}, f)
    assert expectation_errors("c", {"source": "x", "expect_rules": ["GD201"]}, f)
    assert expectation_errors("c", {"source": "x", "expect_no_error": True}, f)
    assert expectation_errors("c", {"source": "x", "forbid_rules": ["GD101"]}, f)
    assert expectation_errors("c", {}, [])
    assert expectation_errors("c", {"source": "x", "expect_category": "batch-divisibility"}, f) == []


def test_no_golden_sentence_holds_an_unfilled_template_hole():
    """A rule's template whose named group the first hit lacks renders '?' (rules._Blank): no reviewed report says it."""
    for kind, case in CASES:
        path = golden_path(case, kind)
        if not path.exists():
            continue
        for f in json.loads(path.read_text(encoding="utf-8")).get("findings", []):
            for text in [f.get("message", ""), f.get("title", ""), *f.get("fix", [])]:
                assert "`?`" not in text and " ? " not in text, (case, f["rule_id"], text[:160])
