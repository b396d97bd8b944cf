"""Issue 20 point 2: `watch --on-failure restart|resume` with real children that fail transiently (an NCCL
timeout, the real log of dev-003) and permanently (a batch-divisibility error, a configuration error)."""
from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, ROOT

from doctor.live.restart import last_checkpoint, resumed, verdict
from doctor.model import Finding, Severity

NCCL = FIXTURES / "dev-003-nccl-broadcast-timeout-seqnum4" / "log.txt"
BATCH = FIXTURES / "real-batch-div-train" / "log.txt"
# attempt counter in a file; fails (printing LOG to stderr) while the count is below FAILS
SCRIPT = """
import os, sys
count, log, fails = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
print("attempt", n + 1, "argv", " ".join(sys.argv[4:]), flush=True)
if n < fails:
    sys.stderr.buffer.write(open(log, "rb").read()); sys.exit(1)
"""


def _watch(tmp, log, fails, *extra, child_args=()):
    script = tmp / "child.py"
    script.write_text(SCRIPT)
    run = tmp / "run"
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                        "--run-dir", str(run), "--restart-backoff", "0", *extra, "--", sys.executable, str(script),
                        str(tmp / "count"), str(log), str(fails), *child_args],
                       capture_output=True, cwd=ROOT, timeout=300, check=False)
    return p, run, int((tmp / "count").read_text())


def test_transient_failure_restarted_once_and_every_log_kept(tmp_path):
    p, run, attempts = _watch(tmp_path, NCCL, 1, "--on-failure", "restart", "--max-restarts", "3")
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err[-2000:]
    assert attempts == 2 and "verdict restart" in err
    assert b"attempt 1" in (run / "grpo-doctor-console.log.1").read_bytes()
    assert b"attempt 2" in (run / "grpo-doctor-console.log").read_bytes()
    assert (run / "grpo-doctor-report.json.1").exists() and (run / "grpo-doctor-report.json").exists()


def test_transient_failure_stops_after_max_restarts(tmp_path):
    p, run, attempts = _watch(tmp_path, NCCL, 99, "--on-failure", "restart", "--max-restarts", "2")
    assert p.returncode == 1 and attempts == 3
    assert b"--max-restarts 2 spent" in p.stderr


def test_configuration_error_never_restarted(tmp_path):
    p, run, attempts = _watch(tmp_path, BATCH, 99, "--on-failure", "restart", "--max-restarts", "3")
    assert p.returncode == 1 and attempts == 1
    assert b"verdict relaunch" in p.stderr and b"not restarting" in p.stderr


def test_default_stop_never_restarts(tmp_path):
    p, run, attempts = _watch(tmp_path, NCCL, 99)
    assert p.returncode == 1 and attempts == 1


def test_resume_uses_the_last_checkpoint(tmp_path):
    out = tmp_path / "out" / "v0-1"
    for n in (2, 4):
        (out / f"checkpoint-{n}").mkdir(parents=True)
        (out / f"checkpoint-{n}" / "adapter_model.safetensors").write_bytes(b"x")
    (out / "checkpoint-9").mkdir()  # empty: not a checkpoint to resume from
    assert last_checkpoint(str(tmp_path / "out")) == str(out / "checkpoint-4")
    p, run, attempts = _watch(tmp_path, NCCL, 1, "--on-failure", "resume", child_args=("--output_dir",
                                                                                     str(tmp_path / "out")))
    assert p.returncode == 0 and attempts == 2
    assert f"--resume_from_checkpoint {out / 'checkpoint-4'}".encode() in (run / "grpo-doctor-console.log").read_bytes()


def test_verdict_is_the_finding_action_and_resumed_replaces_the_flag():
    from dataclasses import replace
    f = Finding("GD101", "x", "batch-divisibility", Severity.error, "t", "m")
    assert verdict([f])[0] == "stop"   # no action: no second table guesses one from the category (issue 13)
    assert verdict([replace(f, action="relaunch")])[0] == "relaunch"
    assert verdict([replace(f, action="restart")])[0] == "restart"
    assert verdict([])[0] == "stop"
    assert resumed(["a", "--resume_from_checkpoint", "old", "b"], "new") == ["a", "b", "--resume_from_checkpoint", "new"]
