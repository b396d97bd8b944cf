"""Small things users type or read: --no-color, suggestions for a name explain does not know, completion of rule
names, a folder without a log, and the pre-commit `rev` the README shows."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from ckpt_util import full_checkpoint
from conftest import ROOT
from test_cli import BATCH_LOG


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=ROOT, text=True,
                          env={**base, **env}, timeout=120)


def test_no_color_is_accepted(tmp_path):
    p = cli("analyze", str(BATCH_LOG), "--no-color", FORCE_COLOR="1")
    assert p.returncode == 1 and "GD101" in p.stdout and "\x1b[" not in p.stdout, p.stderr
    assert "\x1b[" in cli("analyze", str(BATCH_LOG), FORCE_COLOR="1").stdout  # what --no-color turned off
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=0)
    assert cli("check-ckpt", str(d), "--no-color").returncode == 0
    p = cli("preflight", "--no-color", "--swift-version", "4.6.0", "--gpu-mem", "80", "--", "swift", "rlhf",
            "--rlhf_type", "grpo", "--num_generations", "3", "--per_device_train_batch_size", "2")
    assert p.returncode == 1 and "GD101" in p.stdout and "\x1b[" not in p.stdout, p.stderr


def test_explain_suggests_the_nearest_names():
    p = cli("explain", "oom")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "did you mean" in p.stderr and "cuda-oom" in p.stderr, p.stderr
    p = cli("explain", "GD8O2")  # a letter O for a zero
    assert p.returncode == 2 and "GD802" in p.stderr, p.stderr


def _complete(*words: str) -> list[str]:
    line = "grpo-doctor " + " ".join(words)
    p = cli(_GRPO_DOCTOR_COMPLETE="complete_bash", COMP_WORDS=line, COMP_CWORD=str(len(words)))
    return p.stdout.split()


def test_completion_offers_rule_ids_and_slugs():
    got = _complete("explain", "GD80")
    assert "GD802" in got and "GD801" in got and "GD101" not in got, got
    assert "checkpoint-corrupt" in _complete("explain", "checkpoint-c")
    assert "cuda-oom" in _complete("analyze", "x", "--select", "cuda")
    assert "GD610" in _complete("check-ckpt", "x", "--ignore", "GD61")


@pytest.mark.parametrize("name", ["README.txt", "readme.md", "README", "CHANGELOG.txt", "LICENSE.txt"])
def test_folder_without_a_log_is_said_so(tmp_path, name):
    (tmp_path / name).write_text("# My run\n\nNotes: loss went down. CUDA out of memory is what I fear.\n")
    p = cli("analyze", str(tmp_path))
    assert p.returncode == 2 and p.stderr.startswith(f"grpo-doctor: no log found in {tmp_path}"), p.stdout + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_readme_pre_commit_rev_is_something_that_exists():
    text = (ROOT / "README.md").read_text()
    block = text.split("### pre-commit hook", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    rev = re.search(r"^\s*rev:\s*(\S+)", block, re.M).group(1)
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    # a release tag only when it exists; else a branch (main) or a commit placeholder the text explains
    assert rev in tags or rev == "main" or rev.startswith("<"), rev
    assert "pre-commit autoupdate --freeze" in text
