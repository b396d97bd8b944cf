"""`watch` with real child processes: pass-through, tee, crash diagnosis and exit codes, hangs (detected
within the limit plus one poll), stop with SIGTERM then SIGKILL, forwarded signals, a 50 MB flood."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from watchutil import CHILD, run_watch

from doctor.live import integrations
from doctor.live.supervisor import EXIT_STOPPED
from doctor.live.watchdogs import Limits

HANG_LOG = FIXTURES / "real-hang-cut-after-step-3" / "log.txt"
CRASH_LOG = FIXTURES / "real-batch-div-train" / "log.txt"
HEALTHY = FIXTURES / "real-grpo-lora-healthy"


def _rules(rep):
    return [f["rule_id"] for f in rep["findings"]]


def test_healthy_replay_exit_0_console_log_and_report(tmp_path):
    r = run_watch(tmp_path, ["--log", str(HEALTHY / "log.txt"), "--chunks"])
    assert r.code == 0
    assert r.out == (HEALTHY / "log.txt").read_bytes()
    console = Path(r.watch.console_path)
    assert console.read_bytes() == (HEALTHY / "log.txt").read_bytes()
    assert r.report["schema_version"] == 1
    assert r.report["run"]["watch"]["status"] == "exited" and r.report["run"]["watch"]["exit_code"] == 0
    assert "host" in r.report["run"] and "node_rank" in r.report["run"]
    assert not [f for f in r.report["findings"] if f["severity"] == "error"]
    assert b"[grpo-doctor] the run exited with status 0" in r.doc
    # doctor messages never reach stdout
    assert b"[grpo-doctor]" not in r.out


def test_crash_diagnosis_printed_and_exit_code_kept(tmp_path):
    r = run_watch(tmp_path, ["--stderr-log", str(CRASH_LOG), "--then", "exit:1"])
    assert r.code == 1
    assert r.report["findings"][0]["category"] == "batch-divisibility"
    err = r.doc.decode()
    diag = err[err.index("[grpo-doctor] the run exited with status 1; diagnosis:"):]
    assert "GD101" in diag and "batch-divisibility" in diag
    assert r.report["run"]["watch"]["status"] == "failed"


def test_child_killed_by_signal_exit_128_plus_signum(tmp_path):
    r = run_watch(tmp_path, ["--then", f"kill:{int(signal.SIGSEGV)}"])
    assert r.code == 128 + signal.SIGSEGV
    assert "killed by signal" in r.doc.decode()


def test_hang_detected_within_limit_plus_one_poll_and_stopped(tmp_path):
    poll, limit = 0.2, 1.5
    t0 = time.monotonic()
    r = run_watch(tmp_path, ["--log", str(HANG_LOG), "--then", "hang"], limits=Limits(steady=limit, startup=limit),
                  on_hang="stop", grace=2.0, poll=poll)
    took = time.monotonic() - t0
    assert r.code == EXIT_STOPPED
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD321")
    assert f["severity"] == "error" and "after training step 3" in f["message"]
    silent = float(f["message"].split("No progress for ")[1].split(" s")[0])
    assert limit <= silent <= limit + poll + 1.0  # +1 s: scheduling slack on a loaded 2-core machine
    assert took < 30
    assert r.report["run"]["watch"]["status"] == "stopped-by-watch"
    # the stacks file lies in the run folder, with the child's stack (py-spy) or the reason it is missing
    text = Path(r.watch.run_dir, "grpo-doctor-hang-1.txt").read_text()
    assert "== process states ==" in text
    if shutil.which("py-spy"):
        # the child's own frames, or (where ptrace is not permitted) the reason, never silence
        assert ("child.py" in text and "main" in text) or "py-spy dump of pid" in text
    else:
        assert "py-spy is not installed" in text
    # analyze of the watched run folder says the hang once: watch's hang report file is read for its stacks, its
    # words ("no progress for 1.5 s") are not a second, prose-level hang (GD327) beside the report's GD321
    from doctor.analyze import analyze
    rep = analyze([r.watch.run_dir])
    hangs = [x.rule_id for x in rep.findings if x.category.startswith("hang") or x.rule_id == "GD327"]
    assert hangs.count("GD321") == 1 and "GD327" not in hangs, hangs


def test_hang_warn_keeps_waiting_then_child_status(tmp_path):
    r = run_watch(tmp_path, ["--log", str(HANG_LOG), "--then", "sleep:3"], limits=Limits(steady=1.0), poll=0.2)
    assert r.code == 0
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD321")
    assert f["severity"] == "error"  # silent past the limit to the end: a hang, not a stall
    assert b"no progress for" in r.doc


def test_startup_hang_phase_named(tmp_path):
    log = tmp_path / "start.log"
    lines = HANG_LOG.read_text().splitlines(keepends=True)
    cut = next(i for i, l in enumerate(lines) if "model_parameter_info" in l)
    log.write_text("".join(lines[:cut + 1]))
    r = run_watch(tmp_path, ["--log", str(log), "--then", "hang"], limits=Limits(startup=60.0, vllm_init=1.0),
                  on_hang="stop", grace=1.0, poll=0.2)
    assert r.code == EXIT_STOPPED
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD320")
    assert "trainer init" in f["message"]


def test_stop_escalates_to_sigkill_after_grace(tmp_path):
    r = run_watch(tmp_path, ["--log", str(HANG_LOG), "--ignore-term", "--then", "hang"],
                  limits=Limits(steady=0.5), on_hang="stop", grace=1.0, poll=0.2)
    assert r.code == EXIT_STOPPED
    assert b"sending SIGKILL" in r.doc


def test_flood_50mb_byte_exact(tmp_path):
    hashes = tmp_path / "hashes"
    r = run_watch(tmp_path, ["--flood", "50", "--hashes", str(hashes)])
    assert r.code == 0
    h_out, h_err = hashes.read_text().split()
    assert hashlib.sha256(r.out).hexdigest() == h_out
    assert hashlib.sha256(r.err).hexdigest() == h_err
    assert len(r.out) + len(r.err) == 50 * 1024 * 1024
    # the console log holds every byte of both streams (interleaved at line boundaries; a final newline may be added)
    size = Path(r.watch.console_path).stat().st_size
    assert 50 * 1024 * 1024 <= size <= 50 * 1024 * 1024 + 2


def test_flood_through_cli_stdout_byte_exact(tmp_path):
    """The real CLI in a subprocess: the child's stdout arrives byte for byte on ours."""
    hashes = tmp_path / "hashes"
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0", "--run-dir",
                        str(tmp_path / "run"), "--", sys.executable, CHILD, "--flood", "10", "--hashes", str(hashes)],
                       capture_output=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    h_out, _ = hashes.read_text().split()
    assert hashlib.sha256(p.stdout).hexdigest() == h_out
    assert b"[grpo-doctor] the run exited with status 0" in p.stderr


def test_sigint_and_sigterm_forwarded_to_the_child(tmp_path):
    for sig in (signal.SIGINT, signal.SIGTERM):
        marker = tmp_path / f"got-{int(sig)}"
        if sig == signal.SIGINT:
            child = [sys.executable, CHILD, "--handle-int", str(marker), "--then", "hang"]
        else:
            child = [sys.executable, CHILD, "--then", "hang"]
        p = subprocess.Popen([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                              "--run-dir", str(tmp_path / f"run{int(sig)}"), "--", *child],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        console = tmp_path / f"run{int(sig)}" / "grpo-doctor-console.log"
        deadline = time.monotonic() + 30
        while not console.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.5)  # the child installs its handler right after it starts
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        if sig == signal.SIGINT:
            assert marker.read_text() == str(int(signal.SIGINT))
            assert p.returncode == 130
        else:
            assert p.returncode == 128 + signal.SIGTERM, err[-1500:]


def test_preflight_error_blocks_launch_force_launches(tmp_path, monkeypatch):
    from doctor.model import Finding, Report, Severity
    bad = Finding("GD101", "train-batch-not-divisible", "batch-divisibility", Severity.error, "Batch not divisible",
                  "4 completions per step are not divisible by num_generations 3", fix=("use --num_generations 4",))
    calls = []

    def fake(argv, env=None, gpu_mem_gib=None):
        calls.append(list(argv))
        return Report("X", [], {}, [bad])
    monkeypatch.setattr(integrations, "preflight", fake)
    marker = tmp_path / "ran"
    r = run_watch(tmp_path / "a", [], argv=[sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], preflight=True)
    assert r.code == 2 and not marker.exists() and calls
    assert b"not launching" in r.doc and b"GD101" in r.doc
    assert r.report["run"]["watch"]["status"] == "blocked-by-preflight"
    assert r.report["findings"][0]["rule_id"] == "GD101"
    r = run_watch(tmp_path / "b", [], argv=[sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], preflight=True,
                  force=True)
    assert r.code == 0 and marker.exists()


def test_preflight_missing_is_said_once_and_launch_goes_on(tmp_path, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_preflight(name, *a, **k):
        if name.endswith("preflight") and "doctor" in (a[0] or {}).get("__name__", "") if a else False:
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(integrations, "_warned", set())
    monkeypatch.setattr(builtins, "__import__", no_preflight)
    r = run_watch(tmp_path, ["--then", "exit:0"], preflight=True)
    assert r.code == 0
    assert r.doc.count(b"preflight not available") <= 1


def test_new_checkpoint_checked_after_save(tmp_path, monkeypatch):
    from doctor.model import Finding, Severity
    seen = []

    def fake(dirs, run=None, facts=None):
        seen.extend(dirs)
        return [Finding("GD999", "x", "checkpoint-bloat", Severity.warning, "Checkpoint too big", "43 GB instead of 15 GB")]
    monkeypatch.setattr(integrations, "check_checkpoint", fake)
    r = run_watch(tmp_path, ["--out", str(tmp_path / "run"), "--ckpt", "2", "--then", "sleep:7"], poll=0.2)
    assert r.code == 0
    assert [os.path.basename(d) for d in seen] == ["checkpoint-2"]
    assert b"checkpoint-2: warning" in r.doc
    assert "checkpoint-bloat" in [f["category"] for f in r.report["findings"]]


def test_command_not_found_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--run-dir", str(tmp_path),
                        "--", "no-such-command-xyz"], capture_output=True, cwd=ROOT)
    assert p.returncode == 2
    assert b"cannot start 'no-such-command-xyz'" in p.stderr
    assert b"Traceback" not in p.stderr


def test_bad_phase_timeout_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--phase-timeout", "nap=3", "--", "true"],
                       capture_output=True, cwd=ROOT)
    assert p.returncode == 2 and b"unknown phase" in p.stderr


def test_reports_carry_node_rank_and_analyze_merges_nodes_first_failure_first(tmp_path):
    """Two nodes, one watch each (NODE_RANK / SLURM_NODEID): node 1 hits CUDA OOM first, node 0 fails later with
    a batch error. analyze over both reports puts node 1's OOM first, as the root cause."""
    from doctor.analyze import analyze
    oom = FIXTURES / "edge-oom-8-ranks-zero2-colocate" / "log.txt"
    r1 = run_watch(tmp_path / "n1", ["--stderr-log", str(oom), "--then", "exit:1"],
                   env={**os.environ, "SLURM_NODEID": "1"})
    time.sleep(0.05)
    r0 = run_watch(tmp_path / "n0", ["--stderr-log", str(CRASH_LOG), "--then", "exit:1"],
                   env={**os.environ, "NODE_RANK": "0"})
    assert r1.report["run"]["node_rank"] == 1 and r0.report["run"]["node_rank"] == 0
    assert r1.watch.report_path.endswith("grpo-doctor-report.node1.json")
    assert r1.report["run"]["watch"]["first_error_time"] < r0.report["run"]["watch"]["first_error_time"]
    rep = analyze([r0.watch.report_path, r1.watch.report_path]).to_json()
    first = rep["findings"][0]
    assert first["category"] == "cuda-oom" and first["role"] == "root" and first["message"].startswith("[node 1 (")
    assert any(f["category"] == "batch-divisibility" and f["message"].startswith("[node 0 (") for f in rep["findings"])
    assert [n["node_rank"] for n in rep["run"]["nodes"]] == [0, 1]
    # the same with the run folders (console logs + reports): no duplicates, same root cause
    rep2 = analyze([r0.watch.run_dir, r1.watch.run_dir]).to_json()
    assert rep2["findings"][0]["category"] == "cuda-oom" and rep2["findings"][0]["role"] == "root"
    assert len([f for f in rep2["findings"] if f["category"] == "batch-divisibility"]) == 1


def test_hang_warn_then_progress_resumes(tmp_path):
    lines = HANG_LOG.read_bytes().splitlines(keepends=True)
    step3 = next(i for i, l in enumerate(lines) if b"'global_step/max_steps': '3/" in l)
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"".join(lines[:step3]))   # up to step 2
    b.write_bytes(b"".join(lines[step3:]))   # step 3 arrives after the pause
    # step 2 ends with `Saving model checkpoint to ...` (save_steps 2): the checkpoint-save limit applies
    r = run_watch(tmp_path, ["--log", str(a), "--pause", "5", "--log2", str(b)],
                  limits=Limits(steady=100, checkpoint_save=1.0), poll=0.2)
    assert r.code == 0
    doc = r.doc.decode()
    # the last bytes before the pause are a tqdm redraw of `3/6` without a newline: whether that partial line counts
    # as step 3 depends on how the pipe cut the bytes, so the step that resumes is 3 or 4
    assert "no progress for" in doc and re.search(r"progress resumed \(training step [34]\)", doc)
    assert doc.index("no progress for") < doc.index("progress resumed")
    assert "checkpoint save (limit 1.0 s" in doc
    # the run came out of it: a stall, at the rule's own level (warning), not a failure for --fail-on error
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD321")
    assert f["severity"] == "warning" and "Progress resumed afterwards" in f["message"]


def test_error_printed_while_running_and_report_refreshed(tmp_path):
    """An error in the log is said at once, while the command still runs, and the report on disk shows it with
    status running; the command's own exit status 0 still wins at the end."""
    import json
    import threading
    seen = []
    report = tmp_path / "run" / "grpo-doctor-report.json"
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            try:
                rep = json.loads(report.read_text())
            except (OSError, ValueError):
                rep = None
            if rep and rep["run"]["watch"]["status"] == "running":
                seen.append([f["rule_id"] for f in rep["findings"]])
            time.sleep(0.1)
    th = threading.Thread(target=poll)
    th.start()
    try:
        r = run_watch(tmp_path, ["--stderr-log", str(CRASH_LOG), "--then", "sleep:7"], poll=0.2, eval_interval=0.5)
    finally:
        stop.set()
        th.join()
    assert r.code == 0
    assert any("GD101" in ids for ids in seen), seen
    doc = r.doc.decode()
    assert doc.index("error GD101") < doc.index("the run exited with status 0")


@pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy is not installed")
def test_outlier_rank_named_from_real_stacks(tmp_path):
    """Four real rank processes (RANK env) under a launcher: ranks 0, 1, 3 wait in a collective, rank 2 is stuck in
    its reward function. The hang report names rank 2 and the function."""
    launcher = str(Path(CHILD).parent / "fakedist" / "ranks.py")
    r = run_watch(tmp_path, [], argv=[sys.executable, launcher, "4", "2"], limits=Limits(startup=1.5), on_hang="stop",
                  grace=1.0, poll=0.2)
    assert r.code == EXIT_STOPPED
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD320")
    if "ptrace is not permitted" in f["message"]:
        pytest.skip("py-spy may not attach here (ptrace)")
    assert "Rank 2 is the outlier: it is inside a reward function (my_reward_func (rank.py:" in f["message"]
    assert "while ranks 0, 1, 3 are waiting in an NCCL / distributed collective" in f["message"]
    assert "It stopped inside a reward function: my_reward_func" in f["message"]


def test_new_checkpoint_real_rules_after_merge(tmp_path):
    """No fake: the checkpoint rules of issue 4 run on the folder the child saved (1000 NUL bytes as
    adapter_model.safetensors: a header length of 0 cannot be a safetensors file), so GD802 is reported live."""
    r = run_watch(tmp_path, ["--out", str(tmp_path / "run"), "--ckpt", "2", "--then", "sleep:7"], poll=0.2)
    assert r.code == 0
    assert b"checkpoint rules not available" not in r.doc
    corrupt = [f for f in r.report["findings"] if f["rule_id"] == "GD802"]
    assert corrupt and corrupt[0]["category"] == "checkpoint-corrupt", r.report["findings"]
    assert "adapter_model.safetensors" in " ".join(e["text"] + e["path"] for e in corrupt[0]["evidence"])


def test_live_gpu_samples_reach_the_json_report(tmp_path, monkeypatch):
    """watch's NVML samples went to the HTML charts only: run.gpus of the JSON report holds them too (two GPUs
    sampled every 0.2 s while the child sleeps; GPU 1 at 40 GiB of 80, 75 %)."""
    from doctor.signals_live import Gpu
    gib = 2 ** 30
    monkeypatch.setattr(integrations, "gpu_samples",
                        lambda: [Gpu(0, 0.0, 1 * gib, 80 * gib), Gpu(1, 75.0, 40 * gib, 80 * gib)])
    r = run_watch(tmp_path, ["--then", "sleep:2"], gpu_interval=0.2, poll=0.2)
    assert r.code == 0
    gpus = r.report["run"]["gpus"]
    assert [g["index"] for g in gpus] == [0, 1] and gpus[0]["samples"] >= 2
    assert gpus[1]["mem_used_max_mib"] == 40 * 1024 and gpus[1]["mem_total_mib"] == 80 * 1024
    assert gpus[1]["util_mean_pct"] == 75.0
