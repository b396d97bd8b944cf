"""Issue 18 points 6 and 8: watch with hostile arguments and under a terminal."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_non_utf8_argument_and_run_dir_keep_status_and_report(tmp_path):
    run_dir = os.path.join(os.fsencode(tmp_path), b"run\xff")
    child = b"import sys; sys.exit(3)"
    argv = [os.fsencode(sys.executable), b"-m", b"doctor.cli", b"watch", b"--no-preflight", b"--gpu-interval", b"0",
            b"--run-dir", run_dir, b"--", os.fsencode(sys.executable), b"-c", child, b"arg\xfe\xff"]
    p = subprocess.run(argv, capture_output=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, timeout=120,
                       check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 3, err  # the child's own status, not 2 ("internal error in watch")
    assert "internal error" not in err and "Traceback" not in err
    names = os.listdir(run_dir)
    assert not [n for n in names if b".tmp" in n], names
    report = [n for n in names if n.startswith(b"grpo-doctor-report") and n.endswith(b".json")]
    assert report, names
    with open(os.path.join(run_dir, report[0]), "rb") as f:
        doc = json.loads(f.read())
    assert any("run\\xff" in i["path"] for i in doc["inputs"]), doc["inputs"]


def _run_under_pty(argv: list[str], answer: bytes, timeout: float = 30) -> tuple[int | None, bytes]:
    """Run argv with a pseudo-terminal as its controlling terminal (stdin/stdout/stderr), type ``answer`` once the
    prompt shows, and return (exit status or None if it did not finish in time, everything it printed)."""
    import pty
    import select
    import signal
    import time
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(ROOT)
        os.environ["NO_COLOR"] = "1"
        os.execv(argv[0], argv)
    out = b""
    typed = False
    deadline = time.monotonic() + timeout
    status = None
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                out += chunk
            if not typed and b"name?" in out:
                os.write(master, answer)
                typed = True
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                break
    finally:
        if status is None:
            os.killpg(pid, signal.SIGKILL)  # the session the test made (pty.fork: setsid), nothing else
            os.waitpid(pid, 0)
        os.close(master)
    return status, out


def test_child_can_read_the_terminal(tmp_path):
    child = "import sys; n = input('name? '); print('hello ' + n); sys.exit(5)"
    status, out = _run_under_pty([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                                  "--run-dir", str(tmp_path / "run"), "--", sys.executable, "-c", child], b"alice\n")
    # before: the child ran in a background process group, its read from the terminal stopped it (SIGTTIN)
    assert status == 5, out.decode("utf-8", "replace")
    assert b"hello alice" in out and b"the run exited with status 5" in out  # watch got the terminal back


def test_a_step_number_of_hundreds_of_digits_is_no_internal_error():
    """Found by the watch fuzz (tests/fuzz/): a logged "global_step/max_steps" of 400 digits overflowed the hang
    watchdog's time per step and the HTML curves' step (OverflowError: said as an internal error of the live analysis,
    whose findings stopped there)."""
    from doctor.curves import _step
    from doctor.live.watchdogs import HangWatchdog, Limits
    dog = HangWatchdog(Limits(), lambda: 0.0)
    dog.step(1, now=1.0)
    dog.step(10 ** 400, now=2.0)
    assert dog.steps == 10 ** 400
    assert _step({"global_step/max_steps": "1" + "0" * 400 + "/5"}) is None
