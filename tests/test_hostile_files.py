"""Issue 18 points 3, 4, 5 and 17: links out of a run directory, FIFOs, devices, endless files, empty input."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT

from doctor.analyze import analyze
from doctor.sources.inputs import InputError
from doctor.sources.safeio import NotRegular, open_regular

BATCH = b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"
SECRET = b"ValueError: remaining_argv: ['--SECRET-TOKEN-abc123']\n"


def cli(*args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], input=stdin, capture_output=True, cwd=ROOT,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=timeout, check=False)


def _one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> str:
    err = p.stderr.decode()
    assert p.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


# ------------------------------------------------------------------------------------------------- point 3

def test_symlink_out_of_run_dir_is_not_followed(tmp_path):
    outside = tmp_path / "home" / "secret.log"
    outside.parent.mkdir()
    outside.write_bytes(SECRET)
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(BATCH)
    (run / "stolen.log").symlink_to(outside)
    (run / "cmd.txt").symlink_to(outside)
    (run / "linked").symlink_to(outside.parent, target_is_directory=True)
    rep = analyze([str(run)])
    js = rep.to_json()
    assert "SECRET" not in str(js)
    skipped = {Path(i["path"]).name: i["note"] for i in js["inputs"] if i["kind"] == "skipped"}
    assert "out of the run directory" in skipped["stolen.log"] and "linked" in skipped
    p = cli("analyze", str(run))
    assert b"SECRET" not in p.stdout and b"stolen.log (skipped: a symlink out of the run directory" in p.stdout


def test_symlink_inside_run_dir_is_read(tmp_path):
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "a.txt").write_bytes(BATCH)
    (run / "train.log").symlink_to(run / "logs" / "a.txt")
    rep = analyze([str(run)])
    assert rep.findings and not any(i.kind == "skipped" for i in rep.inputs)


def test_unreadable_log_in_run_dir_is_named(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(BATCH)
    (run / "node1.log").write_bytes(BATCH)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **k: False if str(p).endswith("node1.log") else real(p, m, **k))
    rep = analyze([str(run)])
    assert [(Path(i.path).name, i.note) for i in rep.inputs if i.kind == "skipped"] == [("node1.log", "permission denied")]


# ---------------------------------------------------------------------------------------------- points 4, 5

def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["command.txt", "cmd.txt", "launch.sh"])
@pytest.mark.parametrize("cmd", ["analyze", "check-ckpt"])
def test_fifo_next_to_checkpoint_does_not_hang(tmp_path, name, cmd):
    run = tmp_path / "run"
    ck = run / "checkpoint-5"
    ck.mkdir(parents=True)
    (ck / "trainer_state.json").write_text('{"global_step": 5}')
    (run / "train.log").write_bytes(BATCH)
    _fifo(run / name)
    p = cli(cmd, str(run), timeout=60)  # before: blocked forever in open()
    assert p.returncode in (0, 1), p.stderr
    if cmd == "analyze":
        assert f"{name} (skipped: a FIFO (named pipe), not a regular file)".encode() in p.stdout


@pytest.mark.parametrize("target", ["fifo", "/dev/urandom", "/dev/zero", "/dev/null"])
def test_explicit_non_regular_file_is_refused(tmp_path, target):
    path = str(_fifo(tmp_path / "pipe.log")) if target == "fifo" else target
    if not os.path.exists(path):
        pytest.skip(f"{path} missing")
    err = _one_line_exit_2(cli("analyze", path, timeout=60), path, "not a regular file")
    assert ("FIFO" if target == "fifo" else "character device") in err


def test_open_regular_never_blocks_and_is_bounded(tmp_path):
    fifo = _fifo(tmp_path / "f")
    done = threading.Event()

    def go():
        with pytest.raises(NotRegular):
            open_regular(fifo)
        done.set()
    t = threading.Thread(target=go, daemon=True)
    t.start()
    assert done.wait(10), "open_regular blocked on a FIFO"
    f = tmp_path / "grow.log"
    f.write_bytes(b"x" * 100)
    with open_regular(f) as r, open(f, "ab") as w:
        w.write(b"y" * 1000)  # the file grows after open: the read stops at the size it had
        w.flush()
        assert r.read() == b"x" * 100


def test_fifo_logging_jsonl_in_watch_tail(tmp_path):
    from doctor.live.rundir import JsonlTail
    tail = JsonlTail(str(_fifo(tmp_path / "logging.jsonl")))
    t = threading.Thread(target=lambda: list(tail.read()), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the live jsonl tail blocked on a FIFO"


def test_watch_tail_reads_a_big_logging_jsonl_a_piece_at_a_time(tmp_path):
    """A 100 MB logging.jsonl that appeared at once in the run folder was read whole with its rows in a list: 656 MiB
    peak beside the training (111 MiB now). Here 8 MB: the traced peak stays near one 1 MiB piece and its rows."""
    import json
    import tracemalloc

    from doctor.live.rundir import JsonlTail
    path = tmp_path / "logging.jsonl"
    row = {"loss": 0.1, "grad_norm": 0.5, "reward": 0.3, "reward_std": 0.1, "kl": 0.01, "learning_rate": 1e-6,
           "completions/mean_length": 300.5, "epoch": 0.1}
    with open(path, "w") as f:
        i = 0
        while f.tell() < 8 << 20:
            i += 1
            f.write(json.dumps({**row, "global_step/max_steps": f"{i}/1000000"}) + "\n")
    tail = JsonlTail(str(path))
    tracemalloc.start()
    try:
        n = sum(1 for _ in tail.read())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == i and tail.offset == path.stat().st_size
    assert peak < 24 << 20, f"traced peak {peak >> 20} MiB for an 8 MB file"
    with open(path, "a") as f:
        f.write(json.dumps({**row, "global_step/max_steps": "0/1"}) + "\n")
    assert len(list(tail.read())) == 1  # what grows after is read next time


# ------------------------------------------------------------------------------------------------- point 17

def test_empty_input_is_an_error_everywhere(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    _one_line_exit_2(cli("analyze", str(empty)), "empty")
    _one_line_exit_2(cli("analyze", "-", stdin=b""), "<stdin>", "empty")
    _one_line_exit_2(cli("analyze", "/dev/null"), "/dev/null")
    with pytest.raises(InputError):
        analyze([str(empty)])


@pytest.mark.parametrize("target", ["fifo", "/dev/urandom"])
def test_check_ckpt_refuses_non_regular_file(tmp_path, target):
    path = str(_fifo(tmp_path / "model.safetensors")) if target == "fifo" else target
    _one_line_exit_2(cli("check-ckpt", path, timeout=60), path, "not a regular file")


def test_output_to_a_pipe_or_a_device_writes_into_it_and_never_replaces_it(tmp_path):
    # the report is written atomically (a temporary file renamed over the name): over a FIFO or a character device
    # that rename would put a plain file in its place, /dev/null itself when root runs `-o /dev/null`
    import stat
    log = tmp_path / "train.log"
    log.write_bytes(BATCH)
    fifo = _fifo(tmp_path / "out.fifo")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    p = cli("analyze", str(log), "-f", "json", "-o", str(fifo), timeout=60)
    reader.join(30)
    assert p.returncode == 1, p.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and b'"rule_id": "GD101"' in got[0]
    if os.geteuid() == 0:   # a character device (mknod needs root): /dev/null's kind
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        p = cli("analyze", str(log), "-o", str(dev), timeout=60)
        assert p.returncode == 1, p.stderr
        assert stat.S_ISCHR(os.lstat(dev).st_mode)
