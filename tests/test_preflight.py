"""preflight on real commands (fixtures/preflight/<case>/command.txt): for real runs, the ms-swift error line is
predicted word for word. Goldens and expected rules: test_golden.py, with every other kind."""
from __future__ import annotations

import pytest
from golden import KINDS, report_for

PRE = KINDS["preflight"].root
CASES = KINDS["preflight"].cases()


def test_there_are_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", [c for c in CASES if (PRE / c / "real-error.txt").exists()])
def test_predicts_the_real_error_line(case):
    real = (PRE / case / "real-error.txt").read_text(encoding="utf-8").strip()
    real = real.split("]: ", 1)[1] if real.startswith("[rank") else real
    texts = [e["text"] for f in report_for(case, "preflight")["findings"] for e in f["evidence"]]
    assert real in texts, f"{case}: predicted {texts}, the real run printed {real!r}"


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
