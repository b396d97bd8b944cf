"""The one collector of small rule cases: every ``rules/<family>/cases.toml``.

Each ``[[case]]`` names a ``rule`` and feeds it, alone (plus the rules listed in ``with``), through the real
engine (as ``preflight`` judges a command before a run when ``preflight = true``): a launch ``command``, ``log`` text, ``metrics`` rows (as logging.jsonl holds them, one table per logged
step) and an nvidia-smi ``gpu`` snapshot. ``fires`` says whether the rule must find something; ``severity`` and
``message_has`` / ``fix_has`` (substrings) what it must say. Every expected value is read from the case's input by
a person, never copied from the tool's output. Pattern rules keep their one-line ``examples`` in their own TOML
(test_catalog.py); this file holds what a line cannot show: commands, metric series and GPU snapshots.
"""
from __future__ import annotations

import sys

import pytest
from conftest import ROOT, feed_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from doctor.engine import Session
from doctor.registry import find_rule
from doctor.signals import GpuSnapshot, Metrics, Where
from doctor.sources import metrics as msrc
from doctor.sources.gpu import parse_text

CASE_KEYS = {"rule", "name", "with", "preflight", "command", "log", "metrics", "gpu", "fires", "severity",
             "message_has", "fix_has"}


def _cases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "rules").glob("*/cases.toml")):
        for i, case in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("case", []), 1):
            out.append((f"{path.parent.name}/{case.get('rule', '?')}/{i}-{case.get('name', '')}", case))
    return out


CASES = _cases()


def run_case(case: dict):
    unknown = set(case) - CASE_KEYS
    assert not unknown, f"unknown keys {sorted(unknown)} (known: {sorted(CASE_KEYS)})"
    metas = [find_rule(r) for r in [case["rule"], *case.get("with", [])]]
    assert all(metas), f"unknown rule in {case['rule']} / {case.get('with')}"
    s = Session(metas, preflight=bool(case.get("preflight")))
    if "command" in case:
        s.run.add_command(case["command"])
    if "log" in case:
        feed_text(s, case["log"], "log.txt")
    for i, row in enumerate(case.get("metrics", []), 1):
        s.emit(Metrics({k: msrc.to_number(v) for k, v in row.items()}, Where("logging.jsonl", i), i, "jsonl"))
    if "gpu" in case:
        s.emit(GpuSnapshot("nvidia-smi.txt", parse_text(case["gpu"], "nvidia-smi.txt")))
    return [f for f in s.finish() if f.rule_id == case["rule"]]


def test_there_are_cases_for_check_rules():
    assert len(CASES) >= 10
    assert len({c["rule"] for _, c in CASES}) >= 6


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_case(case):
    found = run_case(case)
    if not case.get("fires", True):
        assert found == [], [f.message for f in found]
        return
    assert found, f"{case['rule']} did not fire"
    f = found[0]
    if "severity" in case:
        assert f.severity.name == case["severity"], f.severity.name
    for text in case.get("message_has", []):
        assert text in f.message, f.message
    fixes = " ".join(f.fix)
    for text in case.get("fix_has", []):
        assert text in fixes, fixes


def test_a_wrong_expectation_fails():
    """The collector can fail: a case that expects the wrong thing is caught."""
    case = next(c for _, c in CASES if c.get("fires", True) and c.get("message_has"))
    with pytest.raises(AssertionError):
        test_case({**case, "message_has": ["no such words in any message"]})
    with pytest.raises(AssertionError):
        test_case({**case, "fires": False})
    with pytest.raises(AssertionError):
        run_case({**case, "typo_key": 1})
