"""Issue 30 point 8: under a flood of child output the analysis backlog is small and bounded in memory (chunk
overhead counted, not only the bytes), the pass-through stays byte-exact and the skipping is said once.
Peak RSS under a 1 GB flood is measured by bench/bench_watch_flood.py, not here."""
from __future__ import annotations

import hashlib
import time

from watchutil import run_watch

from doctor.live import supervisor
from doctor.live.tee import CHUNK_COST, Feed, Stream


def test_backlog_bound_is_small():
    # 256 MiB of queued output put watch at 341-446 MiB peak RSS; 16 MiB keeps it near 100 MiB
    assert supervisor.BACKLOG_MAX <= 32 << 20
    assert supervisor.WatchOptions().backlog_max == supervisor.BACKLOG_MAX


def test_tiny_chunks_count_their_overhead():
    """A child writing a byte at a time queues one tuple per byte: the bound counts each chunk's own cost."""
    feed = Feed(1 << 20, lag=1e9, clock=lambda: 0.0)
    st = Stream(-1, -1)
    for _ in range(100_000):
        feed.put(st, b"x")
    assert feed.q.qsize() <= (1 << 20) // CHUNK_COST + 1
    assert feed.skipped > 0


def test_skipping_said_once_and_pass_through_exact(tmp_path, monkeypatch):
    real_chunk = supervisor.Watch._chunk

    def slow(self, st, data):
        time.sleep(0.02)  # an analysis slower than the flood: it falls behind, catches up, falls behind again
        return real_chunk(self, st, data)
    monkeypatch.setattr(supervisor.Watch, "_chunk", slow)
    hashes = tmp_path / "hashes"
    r = run_watch(tmp_path, ["--flood", "24", "--hashes", str(hashes), "--then", "exit:0"], backlog_max=1 << 20)
    assert r.code == 0
    h_out, h_err = hashes.read_text().split()
    assert hashlib.sha256(r.out).hexdigest() == h_out and hashlib.sha256(r.err).hexdigest() == h_err
    assert r.doc.count(b"fell behind") == 1, r.doc.decode(errors="replace")
    assert r.report["run"]["watch"]["analysis_skipped_bytes"] > 0


def test_long_lines_of_words_at_the_end_are_read_in_linear_time():
    """A flood's last lines are read for the log's ending at the end of watch (and by analyze): tqdm's bar pattern
    tried every blank of a long line with no bar, quadratic (a 16 KB line of words: 4.8 s; the 24 MB flood test
    above once took 8 minutes there). Every bar has '%|': lines without it are not searched."""
    from doctor.checks.hang.endings import ending_of
    from doctor.signals import LogLine, Where
    text = "flood " * 8000 + "x"
    lines = [LogLine(text, text, Where("x.log", i + 1), None, i) for i in range(4)]
    t = time.perf_counter()
    ending_of(lines, 0)
    assert time.perf_counter() - t < 5
