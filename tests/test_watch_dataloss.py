"""Issue 18 points 9-13: watch never loses output: an analysis error, a full disk, a later launch, a process of the
group that prints after the leader exits, an analysis that falls behind. Real child processes throughout."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from conftest import FIXTURES, ROOT
from watchutil import CHILD, run_watch

from doctor.live import supervisor

CRASH_LOG = FIXTURES / "real-batch-div-train" / "log.txt"
HEALTHY = FIXTURES / "real-grpo-lora-healthy" / "log.txt"


def test_analysis_error_keeps_console_log_complete_and_findings(tmp_path, monkeypatch):
    """Point 9: an error in the live analysis (in the issue an OverflowError from a logging.jsonl row with a 401-digit
    integer; here injected into the run-folder scan, so that the test does not depend on which parser raises) must not
    stop the tee, and later input is still analysed."""
    real_scan = supervisor.Watch._scan
    calls = []

    def scan_once_broken(self):
        calls.append(1)
        if len(calls) == 1:
            raise OverflowError("int too large to convert to float")
        return real_scan(self)
    monkeypatch.setattr(supervisor.Watch, "_scan", scan_once_broken)
    r = run_watch(tmp_path, ["--pause", "2", "--log2", str(CRASH_LOG), "--then", "exit:1"], poll=0.2)
    assert calls and r.code == 1
    assert Path(r.watch.console_path).read_bytes() == CRASH_LOG.read_bytes()
    assert "GD101" in [f["rule_id"] for f in r.report["findings"]]
    assert r.doc.count(b"internal error in the live analysis") == 1


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs (needs mount rights: root in a container); skipped where it cannot be mounted."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, check=False)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.decode(errors='replace').strip()[:100]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


def test_full_disk_says_where_the_console_log_stops_and_leaves_no_tmp(tmp_path, full_disk):
    """Point 10: on a full disk the output and the status survive, stderr names the byte where the console log stops,
    and no temporary report file is left behind."""
    hashes = tmp_path / "hashes"
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                        "--run-dir", str(full_disk), "--", sys.executable, CHILD, "--flood", "3", "--hashes",
                        str(hashes), "--then", "exit:7"], capture_output=True, cwd=ROOT, timeout=300, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 7, err[-2000:]
    assert hashlib.sha256(p.stdout).hexdigest() == hashes.read_text().split()[0]
    assert "cannot write the console log" in err and "incomplete from byte" in err
    size = (full_disk / "grpo-doctor-console.log").stat().st_size
    assert f"incomplete from byte {size} on" in err
    assert not [n for n in os.listdir(full_disk) if ".tmp" in n], os.listdir(full_disk)
    assert "Traceback" not in err


def test_file_size_limit_says_where_the_console_log_stops(tmp_path):
    """Point 10 where no tmpfs can be mounted: RLIMIT_FSIZE (1 MiB) on the watch process makes its console log
    writes fail with EFBIG at byte 1048576, as a full disk fails them with ENOSPC (SIGXFSZ ignored, as a shell's
    `ulimit -f` run would need)."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    hashes = tmp_path / "hashes"
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                        "--run-dir", str(tmp_path / "run"), "--", sys.executable, CHILD, "--flood", "3", "--hashes",
                        str(hashes), "--then", "exit:7"], capture_output=True, cwd=ROOT, timeout=300, check=False,
                       preexec_fn=limit)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 7, err[-2000:]
    assert hashlib.sha256(p.stdout).hexdigest() == hashes.read_text().split()[0]
    assert "incomplete from byte 1048576 on" in err
    assert (tmp_path / "run" / "grpo-doctor-console.log").stat().st_size == 1 << 20
    assert not [n for n in os.listdir(tmp_path / "run") if ".tmp" in n]


def test_every_launch_keeps_its_console_log_and_report(tmp_path):
    """Point 11: three launches in one run folder keep three console logs and three reports."""
    texts = []
    for i in range(3):
        log = tmp_path / f"log{i}.txt"
        log.write_bytes(f"launch {i}\n".encode())
        texts.append(log.read_bytes())
        r = run_watch(tmp_path / f"w{i}", ["--log", str(log)], run_dir=str(tmp_path / "run"))
        assert r.code == 0
    run = tmp_path / "run"
    assert (run / "grpo-doctor-console.log").read_bytes() == texts[2]
    assert (run / "grpo-doctor-console.log.1").read_bytes() == texts[0]
    assert (run / "grpo-doctor-console.log.2").read_bytes() == texts[1]
    assert (run / "grpo-doctor-report.json.1").exists() and (run / "grpo-doctor-report.json.2").exists()
    # rotation only when asked: keep the newest archive of each name
    r = run_watch(tmp_path / "w3", ["--log", str(tmp_path / "log0.txt")], run_dir=str(run), keep_launches=1)
    assert r.code == 0
    assert sorted(n for n in os.listdir(run) if n.startswith("grpo-doctor-console")) == [
        "grpo-doctor-console.log", "grpo-doctor-console.log.3"]


def test_late_output_of_the_group_is_kept(tmp_path):
    """Point 12: a process of the group that prints 4 s after the leader exited (watch used to stop after 2 s)."""
    r = run_watch(tmp_path, ["--late", "4:late line", "--then", "exit:0"], drain=120)
    assert r.code == 0
    assert b"late line\n" in r.out and b"late line on stderr\n" in r.err
    assert b"late line\n" in Path(r.watch.console_path).read_bytes()


def test_survivors_reported_by_pid_and_stopped(tmp_path):
    """Point 12: an orphan of the group (not holding the output) is named by pid and stopped, not left unseen."""
    pid_file = tmp_path / "orphan.pid"
    r = run_watch(tmp_path, ["--orphan", "quiet-ignore", "--orphan-pid", str(pid_file), "--then", "exit:0"], grace=1.0)
    pid = int(pid_file.read_text())
    assert r.code == 0
    doc = r.doc.decode()
    assert f"pid {pid}" in doc and "killed with SIGKILL" in doc
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert r.report["run"]["watch"]["survivors"][0]["pid"] == pid


def test_orphan_holding_the_output_bounded_wait(tmp_path):
    pid_file = tmp_path / "orphan.pid"
    r = run_watch(tmp_path, ["--orphan", "hold", "--orphan-pid", str(pid_file), "--then", "exit:0"], drain=1.0, grace=1.0)
    pid = int(pid_file.read_text())
    assert r.code == 0
    assert b"still hold its output open" in r.doc and f"pid {pid}".encode() in r.doc
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("limits", [{"backlog_max": 1 << 20}, {"lag_max": 0.5}], ids=["bytes", "seconds"])
def test_pass_through_never_waits_for_a_stalled_analysis(tmp_path, monkeypatch, limits):
    """Point 13: with the analysis stalled, the child still writes everything (the reader skips the analysis ahead
    instead of waiting), the output is byte-exact and watch says what it skipped. Before the fix the reader waited
    once the backlog passed its limit, the child blocked on the pipe and never finished."""
    hashes = tmp_path / "hashes"
    gate = threading.Event()
    child_done = threading.Event()
    real_chunk = supervisor.Watch._chunk

    def stalled(self, st, data):
        gate.wait(300)
        return real_chunk(self, st, data)
    monkeypatch.setattr(supervisor.Watch, "_chunk", stalled)

    def release():
        # the child writes the hashes file after its last write returned: the pass-through has taken the output
        while not gate.is_set():
            if hashes.exists():
                child_done.set()
                break
            child_done.wait(0.05)
        gate.set()
    t = threading.Thread(target=release, daemon=True)
    t.start()
    try:
        r = run_watch(tmp_path, ["--flood", "20", "--final-log", str(CRASH_LOG), "--hashes", str(hashes), "--then",
                                 "exit:1"], **limits)
    finally:
        gate.set()
        t.join(10)
    assert child_done.is_set()
    assert r.code == 1
    # the last bytes skipped are analysed at the end: the final traceback is still diagnosed
    assert "GD101" in [f["rule_id"] for f in r.report["findings"]]
    h_out, h_err = hashes.read_text().split()
    assert hashlib.sha256(r.out).hexdigest() == h_out and hashlib.sha256(r.err).hexdigest() == h_err
    assert b"skipped" in r.doc
    assert r.report["run"]["watch"]["analysis_skipped_bytes"] > 0
    size = Path(r.watch.console_path).stat().st_size
    total = 20 * 1024 * 1024 + CRASH_LOG.stat().st_size
    assert total <= size <= total + 2
