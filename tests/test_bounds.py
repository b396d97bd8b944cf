"""Issue 18 points 7, 14, 15, 16: numbers and names from inputs never hang, crash or break a report."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from doctor.checks.batch import divisors


def cli(*args: str, env: dict | None = None, stdin: bytes | None = None, timeout: float = 60):
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], input=stdin, capture_output=True, cwd=ROOT,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=timeout, check=False)


# ------------------------------------------------------------------------------------------------- point 7

def test_divisors_are_bounded_and_right():
    for n in (1, 2, 12, 64, 97, 360, 1_000_003):
        assert divisors(n) == [d for d in range(2, n + 1) if n % d == 0]
    big = 10 ** 22
    got = divisors(big)
    assert got and all(big % d == 0 for d in got) and big in got


def test_preflight_with_23_digit_batch_size_finishes():
    p = cli("preflight", "--", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-0.5B",
            "--per_device_train_batch_size", "10000000000000000000000", "--num_generations", "7", "--dataset", "x",
            timeout=60)  # before: the divisor list was O(n) and never finished
    assert p.returncode == 1, p.stderr
    assert b"num_generations" in p.stdout
