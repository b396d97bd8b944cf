"""Issue 17 points 18-19: a failed run is never 'No problem found'; one hang diagnosis; preflight messages on one
line; estimates warn, certain failures block; where the default run folder goes. Real child processes."""
from __future__ import annotations

import signal
import sys

from watchutil import run_watch

from doctor.live import integrations
from doctor.live.rundir import default_run_dir
from doctor.live.watchdogs import Limits
from doctor.model import Finding, Report, Severity


def test_exit_3_without_a_finding_is_a_finding(tmp_path):
    r = run_watch(tmp_path, [], argv=[sys.executable, "-c", "print('step 1 done'); print('bye'); raise SystemExit(3)"])
    assert r.code == 3
    f = r.report["findings"][0]
    assert f["rule_id"] == "GD995" and f["severity"] == "error"
    assert "exited with status 3" in f["message"]
    assert any("bye" in e["text"] for e in f["evidence"])
    assert b"No problem found" not in r.doc and b"GD995" in r.doc


def test_sigkill_names_the_signal_and_the_oom_killer(tmp_path):
    r = run_watch(tmp_path, ["--then", f"kill:{int(signal.SIGKILL)}"])
    assert r.code == 128 + 9
    ids = [f["rule_id"] for f in r.report["findings"]]
    # GD310 as for torchrun's exit code -9: a SIGKILL watch did not send; likely (not proven) without the kernel's line
    assert ids and ids[0] == "GD310", ids
    f = r.report["findings"][0]
    assert "SIGKILL" in f["message"] and "OOM killer" in f["message"] and "kernel log" in f["message"]
    assert f["confidence"] in ("likely", "certain") and "GD995" not in ids
    assert f["evidence"][0]["path"] == "<watch>" and "signal 9 (SIGKILL)" in f["evidence"][0]["text"]
    assert b"(SIGKILL)" in r.doc


def test_clean_exit_still_no_error(tmp_path):
    r = run_watch(tmp_path, ["--then", "exit:0"])
    assert r.code == 0 and not [f for f in r.report["findings"] if f["severity"] == "error"]


def test_hang_diagnosis_printed_once(tmp_path):
    from conftest import FIXTURES
    log = FIXTURES / "real-hang-cut-after-step-3" / "log.txt"
    r = run_watch(tmp_path, ["--log", str(log), "--then", "hang"], limits=Limits(steady=1.0, startup=60.0),
                  on_hang="stop", grace=1.0, poll=0.2)
    doc = r.doc.decode()
    assert doc.count("GD321 ") >= 1
    assert doc.count("Diagnosis") + doc.count("diagnosis:") <= 2, doc  # the render's header once, the end's line once
    assert "as in the hang report above" in doc


def test_preflight_skipped_is_one_line(tmp_path, monkeypatch):
    import importlib
    pf = importlib.import_module("doctor.preflight")

    def bad(argv, env=None, gpu_mem_gib=None):
        raise ValueError("preflight: not a swift rlhf command: python -c 'import os\nprint(1)\nprint(2)\n'; use: ...")
    monkeypatch.setattr(pf, "preflight_command", bad)
    r = run_watch(tmp_path, ["--then", "exit:0"], preflight=True)
    lines = [ln for ln in r.doc.decode().splitlines() if "preflight skipped" in ln]
    assert len(lines) == 1 and "print(2)" not in r.doc.decode()


def test_estimate_warns_certain_error_blocks(tmp_path, monkeypatch):
    est = Finding("GD470", "memory-plan", "cuda-oom", Severity.error, "Memory plan", "estimated 90 GiB > 80 GiB")
    monkeypatch.setattr(integrations, "preflight", lambda argv, env=None, gpu_mem_gib=None: Report("X", [], {}, [est]))
    r = run_watch(tmp_path / "a", ["--then", "exit:0"], preflight=True)
    assert r.code == 0 and b"(estimate)" in r.doc


def test_default_run_dir_beside_output_dir():
    assert default_run_dir(["swift", "rlhf", "--output_dir", "out/x"]) == "out/x"
    assert default_run_dir(["swift", "rlhf", "--output_dir=out/y"]) == "out/y"
    assert default_run_dir(["bash", "train.sh"]) == "output"


def test_refused_launch_says_the_one_command_that_passes(tmp_path):
    """A launch preflight refuses (a misspelt flag and a batch of 3 completions for num_generations 4) ends with the
    one command carrying every fix, as watch would run it; nothing is launched."""
    import subprocess
    import sys
    argv = ["swift", "rlhf", "--rlhf_type", "grpo", "--model", "m", "--reward_funcs", "accuracy",
            "--num_generation", "4", "--per_device_train_batch_size", "3"]
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--gpu-interval", "0", "--run-dir",
                        str(tmp_path / "run"), "--", *argv], capture_output=True, text=True, timeout=180)
    assert p.returncode == 2, p.stderr[-2000:]
    line = next(ln for ln in p.stderr.splitlines() if "relaunch with every fix" in ln)
    cmd = line.split("grpo-doctor watch -- ", 1)[1]
    assert "--num_generations 4" in cmd and "--num_generation " not in cmd + " "
    accum = int(cmd.split("--gradient_accumulation_steps ", 1)[1].split()[0])
    assert (1 * 3 * accum) % 4 == 0   # world 1 x batch 3 x accumulation: whole groups of 4 (8 here: 24)
