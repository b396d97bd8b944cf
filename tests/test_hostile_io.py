"""Issue 30: hostile files and folders around every reader and writer (watch's HTML report, links out of a checkpoint
or a watched run folder, configuration from the analysed tree, deep folders and overflowing numbers, unreadable
logs, nonsense --gpu-mem)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

BATCH = b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"
HEALTHY = ("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-0.5B-Instruct --tuner_type lora --num_generations 4 "
           "--per_device_train_batch_size 4 --reward_funcs accuracy --dataset d.jsonl --save_total_limit 2").split()


def cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real command, run from ``cwd`` (the worktree's package first on the path, wherever cwd is)."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=cwd or ROOT,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": path, **(env or {})}, timeout=timeout,
                          check=False)


def one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> str:
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2 and "Traceback" not in err and "internal error" not in err, (p.returncode, err)
    assert len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


# ------------------------------------------------------------------------------------------------- point 12

@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9"])
def test_gpu_mem_out_of_range_is_refused(value):
    # before: accepted; nan gave "nan GiB more than the nan GiB of one GPU", -1 a plan against -1 GiB (exit 0/1)
    one_line_exit_2(cli("preflight", "--swift-version", "4.6.0", "--gpu-mem", value, "--", *HEALTHY), "--gpu-mem",
                    "between")


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_gpu_mem_out_of_range_in_config_is_refused(tmp_path, value):
    cfg = tmp_path / "grpo-doctor.toml"
    cfg.write_text(f"gpu-mem = {value}\n")
    one_line_exit_2(cli("preflight", "--config", str(cfg), "--swift-version", "4.6.0", "--", *HEALTHY),
                    str(cfg), "gpu-mem", "between")
