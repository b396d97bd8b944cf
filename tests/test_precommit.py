"""The pre-commit hook, run by the real `pre-commit` tool: `pre-commit try-repo <this repo> grpo-doctor-checkpoint
--all-files` in a temporary git repository holding a good and a bad checkpoint fails with the finding on the bad
one, and passes once only the good one is left.

pre-commit builds the hook's own virtualenv from this repository (pip install of grpo-doctor and its
dependencies through the machine's normal pip configuration), so the first run takes a minute or two.
try-repo uses this repository's HEAD plus its uncommitted changes (a shadow commit), so the test checks the
working tree as it is.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

CKPT = ROOT / "fixtures" / "ckpt"
GOOD = CKPT / "real-lora-healthy"
BAD = CKPT / "edge-truncated-safetensors" / "checkpoint-2"


def _ckpt_of(case_dir: Path) -> Path:
    return sorted(p for p in case_dir.rglob("checkpoint-*") if p.is_dir())[-1]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.slow
def test_pre_commit_try_repo_good_and_bad(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("this checkout is not a git repository: pre-commit try-repo needs one")
    repo = tmp_path / "models"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(_ckpt_of(GOOD), repo / "good" / "checkpoint-2")
    shutil.copytree(BAD, repo / "bad" / "checkpoint-2")
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "NO_COLOR": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "grpo-doctor-checkpoint", "--all-files",
           "--color", "never"]
    p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, timeout=900)
    out = p.stdout.decode() + p.stderr.decode()
    assert p.returncode == 1, out
    assert "grpo-doctor checkpoint gate" in out and "Failed" in out
    assert "GD802" in out and "bad/checkpoint-2/model.safetensors" in out and "truncated" in out
    assert "good/checkpoint-2:" not in out.replace("good/checkpoint-2, ", "")  # no finding on the good one

    _git(repo, "rm", "-r", "-q", "--cached", "bad")
    shutil.rmtree(repo / "bad")
    p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, timeout=900)
    out = p.stdout.decode() + p.stderr.decode()
    assert p.returncode == 0, out
    assert "grpo-doctor checkpoint gate" in out and "Passed" in out
