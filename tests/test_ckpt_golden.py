"""Checkpoint fixtures (fixtures/ckpt/<case>/): real and built cases, kept small. Their goldens and expected
findings are checked with every other kind's in test_golden.py (tests/golden.py says what provenance.toml holds)."""
from __future__ import annotations

from golden import KINDS

CKPT = KINDS["ckpt"].root
CASES = KINDS["ckpt"].cases()


def test_there_are_real_and_built_fixtures():
    real = [c for c in CASES if c.startswith("real-")]
    built = [c for c in CASES if c.startswith("edge-")]
    assert len(real) >= 4 and len(built) >= 5, (real, built)


def test_fixtures_stay_small():
    total = sum(p.stat().st_size for p in CKPT.rglob("*") if p.is_file() and not p.is_symlink())
    assert total < 10_000_000, total
