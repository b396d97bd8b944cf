"""Exit 1 says what it means: the text report ends with one line naming the --fail-on threshold that was
reached. Only the text format; json/sarif/markdown stay byte-for-byte what they were."""
from __future__ import annotations

import json

import pytest
from conftest import ROOT
from test_cli import BATCH_LOG, run

BAD_CKPT = ROOT / "fixtures" / "ckpt" / "edge-truncated-safetensors"


@pytest.mark.parametrize("args", [
    ("analyze", str(BATCH_LOG)),
    ("check-ckpt", str(BAD_CKPT)),
    ("preflight", "--", "swift", "rlhf", "--rlhf_type", "grpo", "--per_device_train_batch_size", "1",
     "--num_generations", "8", "--gradient_accumulation_steps", "3", "--model", "Qwen/Qwen2.5-0.5B"),
])
def test_text_ends_with_the_meaning_of_exit_1(args):
    p = run(*args)
    assert p.returncode == 1, p.stderr
    last = p.stdout.decode().rstrip("\n").splitlines()[-1]
    assert last.startswith("exit 1: ") and "--fail-on error" in last, last


def test_threshold_named_and_no_note_on_exit_0(tmp_path):
    p = run("analyze", str(BATCH_LOG), "--fail-on", "warning")
    assert "--fail-on warning" in p.stdout.decode().splitlines()[-1]
    ok = tmp_path / "ok.log"
    ok.write_text("[INFO:swift] Global seed set to 42\n[INFO:swift] End time of running main: 2025-01-01 00:00:00\n")
    p = run("analyze", str(ok))
    assert p.returncode == 0 and "exit 0" not in p.stdout.decode() and "exit 1" not in p.stdout.decode()


@pytest.mark.parametrize("fmt", ["json", "markdown", "sarif"])
def test_other_formats_have_no_note(fmt):
    p = run("analyze", str(BATCH_LOG), "--format", fmt)
    assert p.returncode == 1 and b"exit 1:" not in p.stdout
    if fmt != "markdown":
        json.loads(p.stdout)
