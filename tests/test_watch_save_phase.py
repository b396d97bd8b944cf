"""`watch --hang-timeout` around a checkpoint save, with a real child process and the real CLI.

ms-swift 4.6 logs `[INFO:swift] Saving model checkpoint to DIR` *after* transformers' `_save_checkpoint` returned
(swift/trainers/mixin.py), so the folder is complete, `trainer_state.json` included, before the line is printed. A run
that hangs in the next step (its reward function, say) therefore shows that line last. watch used to judge that
silence under the checkpoint-save phase limit (1800 s, whatever --hang-timeout said): the scoreboard's quick run was not
stopped in 17 minutes. The save's own evidence (trainer_state.json, written last by transformers) ends the phase.
transformers' own `Saving model checkpoint to` line (Trainer._save) comes *before* the files: a save stuck there is
judged under the save limit, which is a bounded multiple of the step limit (doctor/live/watchdogs.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import FIXTURES, ROOT

from doctor.live.supervisor import EXIT_STOPPED

LOG = FIXTURES / "real-grpo-full-bf16" / "log.txt"

# the child: the real console lines of a swift run up to its step-2 metrics, then a save done the way the trainer does
# it, then silence (a hang in the next step, or inside the save)
CHILD = r'''
import os, struct, sys, time
log, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
EMPTY_SAFETENSORS = struct.pack("<Q", 8) + b"{}      "   # a valid file with no tensors
for raw in open(log, "rb"):
    sys.stdout.buffer.write(raw)
    if b"'global_step/max_steps': '2/" in raw:
        break
sys.stdout.flush()
ck = os.path.join(out, "checkpoint-2")
if mode.startswith("teardown"):
    # the rest of the log: a finished run, through its end line ("teardown-end") or only its last step's row
    last = b"End time of running main" if mode == "teardown-end" else b"'global_step/max_steps': '4/4'"
    seen = False
    for raw in open(log, "rb"):
        if seen:
            sys.stdout.buffer.write(raw)
            if last in raw:
                break
        seen = seen or b"'global_step/max_steps': '2/" in raw
    sys.stdout.flush()
    time.sleep(float(sys.argv[4]))   # torchrun's agent and the ranks' exit under load: silent
    sys.exit(0)
if mode == "swift-after-save":
    os.makedirs(ck)
    with open(os.path.join(ck, "model.safetensors"), "wb") as f:
        f.write(EMPTY_SAFETENSORS)
    with open(os.path.join(ck, "trainer_state.json"), "w") as f:      # written last, as transformers does
        f.write('{"global_step": 2, "log_history": []}')
    time.sleep(2.0)        # the symlink update and barrier after the save: watch's scan sees the folder first
    print(f"[INFO:swift] Saving model checkpoint to {ck}", flush=True)
else:                      # transformers' Trainer._save: the line first, then the weights (stuck in this save)
    print(f"[INFO|trainer.py:4108] Saving model checkpoint to {ck}", flush=True)
    os.makedirs(ck)
    with open(os.path.join(ck, "model.safetensors"), "wb") as f:
        f.write(EMPTY_SAFETENSORS)
time.sleep(3600)
'''


def _watch(tmp: Path, mode: str, hang_timeout: float, budget: float, *extra: str) -> tuple[int, float, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    child = tmp / "child.py"
    child.write_text(CHILD)
    out = tmp / "run"
    out.mkdir()
    cmd = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0", "--on-hang", "stop",
           "--hang-timeout", str(hang_timeout), "--grace", "1", "--drain", "1", "--run-dir", str(out), "--",
           sys.executable, str(child), str(LOG), str(out), mode, *extra]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)   # watch and, in its own group, the child: found by its argv
        _, err = p.communicate()
        for line in subprocess.run(["pgrep", "-f", str(child)], capture_output=True, text=True).stdout.split():
            os.kill(int(line), signal.SIGKILL)
        return -1, time.monotonic() - t0, err.decode(errors="replace")
    return p.returncode, time.monotonic() - t0, err.decode(errors="replace")


def test_hang_after_a_finished_save_is_judged_by_hang_timeout(tmp_path):
    code, took, err = _watch(tmp_path, "swift-after-save", hang_timeout=4, budget=90)
    assert code == EXIT_STOPPED, (code, err[-3000:])
    assert "in training steps" in err and "--hang-timeout" in err, err[-3000:]
    assert took < 60


def test_a_save_that_never_ends_is_bounded_by_a_multiple_of_hang_timeout(tmp_path):
    code, took, err = _watch(tmp_path, "trainer-in-save", hang_timeout=4, budget=120)
    assert code == EXIT_STOPPED, (code, err[-3000:])
    assert "in checkpoint save" in err and "x --hang-timeout" in err, err[-3000:]
    assert took < 90


def test_a_finished_run_silent_while_its_processes_exit_is_not_a_hang(tmp_path):
    """After the last step (4/4) or swift's end line the run is in teardown: a finished 2-rank run whose torchrun took
    longer than --hang-timeout to exit under load was stopped as a hang (exit 124 instead of 0). The teardown limit is
    a save's (3 x --hang-timeout), so 4 s of silence at --hang-timeout 2 is not a hang, and the run's status is kept."""
    for mode in ("teardown-end", "teardown-last-step"):
        code, took, err = _watch(tmp_path / mode, mode, 2, 60, "4")
        assert code == 0, (mode, code, err[-3000:])


def test_watch_report_names_the_framework_of_the_run_not_ms_swift(tmp_path):
    """The live report's framework follows the command and the log (as analyze's does): a real TRL GRPO log replayed by
    a python child is trl; before, watch's report always said ms-swift (RunConfig's default)."""
    from watchutil import run_watch
    r = run_watch(tmp_path, ["--log", str(FIXTURES / "real-trl-grpo-killed-mid-training" / "log.txt")], poll=0.2)
    assert r.code == 0
    assert r.report["run"]["framework"] == "trl", r.report["run"]
    swift = run_watch(tmp_path / "swift", ["--log", str(LOG)], poll=0.2)
    assert swift.report["run"]["framework"] == "ms-swift"
