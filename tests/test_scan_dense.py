"""When not to use a scanning child (doctor/sources/scanread.py): a log whose first MiB holds a candidate per 2 KiB or more
is read in this process, and a child's batch that dense hands the rest of the log back to it; the report and the state
are the line-by-line path's either way."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import line_and_scan

from doctor.engine import Session
from doctor.gate import engine
from doctor.sources import scan, scanread

needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or engine() != "hyperscan",
                                reason="the scanning child needs fork and Hyperscan")


def _sparse(n: int) -> bytes:
    """n lines of 64 bytes, one in 64 with a trigger word: ~1 candidate per 4 KiB."""
    return b"".join(((b"Error at line %d" % i) if i % 64 == 0 else (b"quiet %d" % i)).ljust(63, b".") + b"\n"
                    for i in range(n))


def _dense(n: int) -> bytes:
    """n steps of a tqdm bar and a printed metrics dict: every line a candidate."""
    return b"".join(b"Train:  %d%%|#   | %d/%d [00:01<00:02,  1.50s/it]\r\n{'loss': '0.%d', 'grad_norm': '0.5', "
                    b"'reward': '0.25', 'global_step/max_steps': '%d/%d'}\n" % (i * 100 // n, i, n, i % 10, i, n)
                    for i in range(1, n + 1))


def _same(data: bytes, tmp_path: Path, **opts) -> scan.ChunkScanner:
    a, b, ca, cb, stats = line_and_scan(data, tmp_path, **opts)
    assert ca == cb and stats.lineno == data.count(b"\n")
    assert list(a.state.tails["log.txt"]) == list(b.state.tails["log.txt"])
    assert a.state.metrics_steps == b.state.metrics_steps > 0
    assert [(f.rule_id, f.message, f.evidence) for f in a.finish()] == [(f.rule_id, f.message, f.evidence)
                                                                        for f in b.finish()]
    return stats


@needs_fork
def test_a_dense_start_forks_no_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "FORK_MIN", 1000)
    forked: list[int] = []
    real = scanread.CandidateReader.read_forked

    def run_forked(self, stream, size):   # type: ignore[no-untyped-def]
        forked.append(size)
        return real(self, stream, size)

    monkeypatch.setattr(scanread.CandidateReader, "read_forked", run_forked)
    data = _dense(6000) + _sparse(20000)
    assert len(data) > scanread.SAMPLE
    stats = _same(data, tmp_path)
    assert not forked and stats.child_exit is None
    _same(_sparse(20000) + _dense(6000), tmp_path, chunk=scanread.SAMPLE)   # a sparse start forks
    assert forked


@needs_fork
@pytest.mark.parametrize("tail", [b"", b"Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x\n"])
def test_a_child_hands_a_dense_stretch_back(tail: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sparse first MiB (a child is forked), then steps: the batch of the first dense chunk is fed from the child's
    records, the rest is read here, from the line after the last one fed."""
    monkeypatch.setattr(scan, "FORK_MIN", 1000)
    data = _sparse(20000) + _dense(9000) + _sparse(3000) + tail
    stats = _same(data, tmp_path, chunk=scanread.SAMPLE)
    # stopped once it handed the rest back: by the SIGKILL, or, when the parent's closed pipe reaches it first (a
    # loaded machine), by its failed write (BrokenPipeError: exit 1); never run to its end (0)
    assert stats.child_exit in (-signal.SIGKILL, 1)
    # asked for, the child goes on to the end
    stats = _same(data, tmp_path, chunk=scanread.SAMPLE, fork=True)
    assert stats.child_exit == 0


def test_sample_reads_a_whole_mib_only(tmp_path: Path) -> None:
    p = tmp_path / "small.log"
    p.write_bytes(_dense(100))
    fd = os.open(p, os.O_RDONLY)
    try:
        assert not scanread.dense_start(fd, scan.matcher_for(Session().gate_words))   # shorter than SAMPLE: not judged
    finally:
        os.close(fd)
