"""Issue 30 point 11: watch with a closed stdout/stderr, a --notify endpoint that does not speak HTTP, a signal while
alerts are still out, a full disk, a planted archive name. Real processes, real loopback servers."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from conftest import FIXTURES, ROOT
from watchutil import CHILD, run_watch

CRASH_LOG = FIXTURES / "real-batch-div-train" / "log.txt"
HEALTHY = FIXTURES / "real-grpo-lora-healthy" / "log.txt"
WATCH = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0"]


@pytest.mark.parametrize("closed", ["1", "2"], ids=["stdout", "stderr"])
def test_closed_std_stream_does_not_duplicate_into_console_log(tmp_path, closed):
    """Started with fd 1 (or 2) closed, watch's console log took that fd: every line of the child went into the
    console log twice (once by the pass-through, once by the tee)."""
    run = tmp_path / "run"
    flag = "--log" if closed == "1" else "--stderr-log"
    p = subprocess.run(["bash", "-c", f'exec "$@" {closed}>&-', "_", *WATCH, "--run-dir", str(run), "--",
                        sys.executable, CHILD, flag, str(HEALTHY)], capture_output=True, cwd=ROOT, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (run / "grpo-doctor-console.log").read_bytes() == HEALTHY.read_bytes()


@pytest.fixture
def raw_server():
    """A loopback TCP server that answers every connection with ``raw_server.reply`` (no HTTP) and closes;
    ``reply = None``: accepts and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    state = {"reply": b"\x1b]0;pwned\x07\x1b[31mNOT HTTP AT ALL\r\n\r\n"}

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            if state["reply"] is None:
                held.append(c)
                continue
            try:
                c.recv(65536)
                c.sendall(state["reply"])
            except OSError:
                pass
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{srv.getsockname()[1]}/hook", state=state)
    srv.close()
    for c in held:
        c.close()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_notify_endpoint_not_speaking_http(tmp_path, raw_server):
    """The alert thread died with a traceback (http.client.BadStatusLine is no OSError) whose message carried the
    server's raw bytes, escape sequences included, to the terminal."""
    r = run_watch(tmp_path, ["--stderr-log", str(CRASH_LOG), "--pause", "1", "--then", "exit:1"], poll=0.2,
                  eval_interval=0.3, notify_url=raw_server.url, notify_backoff=0.05)
    assert r.code == 1
    assert b"Traceback" not in r.doc and b"\x1b" not in r.doc and b"\x07" not in r.doc, r.doc
    assert b"--notify: the alert could not be sent" in r.doc
    assert r.watch.notifier.failed


def test_signal_while_alerts_are_out_ends_watch_and_says_undelivered(tmp_path, raw_server):
    """After the child exited watch waited up to 30 s for a webhook that never answers, ignoring SIGINT/SIGTERM, and
    never said the alert was not delivered."""
    raw_server.state["reply"] = None
    p = subprocess.Popen([*WATCH, "--run-dir", str(tmp_path / "run"), "--notify", raw_server.url, "--",
                          sys.executable, CHILD, "--log", str(HEALTHY), "--then", "exit:0"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd=ROOT)
    err = b""
    assert p.stderr is not None
    while b"report" not in err.splitlines()[-1:][0] if err else True:
        chunk = p.stderr.readline()
        assert chunk, err
        err += chunk
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, rest = p.communicate(timeout=60)
    finally:
        p.kill()
    took = time.monotonic() - t0
    err += rest
    assert took < 5, (took, err[-1500:])
    assert p.returncode == 0
    assert b"end alert was not delivered" in err, err[-1500:]
    assert b"Traceback" not in err


@pytest.fixture
def small_disk(tmp_path):
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


def test_full_disk_last_lines_say_what_is_missing(tmp_path, small_disk):
    """On a full disk watch still ended with 'the console log has them all' and 'report: PATH' for a report it
    never wrote."""
    big = tmp_path / "big.log"  # log text (not --flood's random bytes) that the analysis cannot keep up with
    text = HEALTHY.read_bytes()
    big.write_bytes(text * (40 * 2**20 // len(text) + 1))
    p = subprocess.run([*WATCH, "--run-dir", str(small_disk), "--", sys.executable, CHILD, "--log", str(big), "--then",
                        "exit:0"], capture_output=True, cwd=ROOT, timeout=300, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err[-2000:]
    assert "incomplete from byte" in err and "skipped" in err
    assert p.stdout == big.read_bytes()
    assert "has them all" not in err and "has all of it" not in err and "has everything" not in err, err
    assert not (small_disk / "grpo-doctor-report.json").exists()
    assert "report: " not in err, err[-1500:]
    assert "final report was not written" in err, err[-1500:]
    assert "Traceback" not in err


def test_full_disk_report_unit(tmp_path, monkeypatch):
    """The same without mount rights: every write of the report fails with ENOSPC (the atomic writer that the JSON
    and HTML reports go through, doctor/live/atomic.py, monkeypatched)."""
    import errno

    from doctor.live import atomic, reporting
    real_write = atomic.write_atomic

    def no_space(path, data):
        if "grpo-doctor-report" in os.fsdecode(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(path, data)
    monkeypatch.setattr(atomic, "write_atomic", no_space)
    monkeypatch.setattr(reporting, "write_atomic", no_space)
    r = run_watch(tmp_path, ["--log", str(HEALTHY), "--then", "exit:0"])
    assert r.code == 0
    assert b"report: " not in r.doc and b"final report was not written" in r.doc, r.doc


def test_planted_archive_name_does_not_stop_the_launch(tmp_path):
    """grpo-doctor-console.log.<231 digits>: the next archive number's name was too long for the file system, and
    watch refused to launch the training."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "grpo-doctor-console.log").write_bytes(b"previous launch\n")
    (run / ("grpo-doctor-console.log." + "9" * 231)).write_bytes(b"planted\n")
    r = run_watch(tmp_path, ["--log", str(HEALTHY), "--then", "exit:0"], run_dir=str(run))
    assert r.code == 0, r.doc
    assert r.out == HEALTHY.read_bytes()
    assert (run / "grpo-doctor-console.log").read_bytes() == HEALTHY.read_bytes()
    assert (run / "grpo-doctor-console.log.1").read_bytes() == b"previous launch\n"
    assert (run / ("grpo-doctor-console.log." + "9" * 231)).read_bytes() == b"planted\n"
