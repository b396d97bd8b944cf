"""The chunk scanner (analyze's fast path) gives exactly what feeding every line gives.

Every fixture is analysed both ways (and with tiny chunks, and with each matching engine); hostile
inputs (chunk boundaries inside a line, a \\r\\n, a multibyte character; GBK; NUL; ANSI inside a word;
interleaved tracebacks; an args dump; huge lines; no final newline) are compared on the session's
state too: findings, tails, exceptions, the last seq and the parsed arguments.
"""
from __future__ import annotations

import io
import os
import signal
from pathlib import Path

import pytest
from conftest import line_and_scan
from golden import FIXTURES, cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.analyze import analyze
from doctor.engine import Session
from doctor.gate import WordGate, engine
from doctor.sources import matchers, scan
from doctor.sources.logtext import MAX_LINE, LineReader
from doctor.sources.reflow import MAX_REFLOW, needs_reflow

try:
    import hyperscan  # noqa: F401
    HAVE_HS = True
except Exception:  # pragma: no cover - platforms without the wheel
    HAVE_HS = False

ENGINES = ["re"] + (["hyperscan"] if HAVE_HS else [])


def _report(case: str, **opts) -> dict:
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        return analyze([case], scan_options=opts).to_json()
    finally:
        os.chdir(old)


@pytest.mark.parametrize("case", cases())
def test_fixture_same_report_both_paths(case, monkeypatch):
    ref = _report(case, lines=True)
    assert _report(case) == ref
    # tiny chunks: every boundary lands inside lines, \r\n pairs and multibyte characters
    monkeypatch.setenv("GRPO_DOCTOR_MATCHER", "re")
    words = Session().gate_words
    assert _report(case, chunk=7, matcher=matchers.Matcher(words)) == ref
    if HAVE_HS:
        assert _report(case, chunk=61, matcher=matchers.HyperscanMatcher(words)) == ref


def _both(data: bytes, tmp_path: Path, **opts) -> tuple[Session, Session, list[int], list[int]]:
    a, b, ca, cb, _ = line_and_scan(data, tmp_path, **opts)
    return a, b, ca, cb


def _assert_same(data: bytes, tmp_path: Path, **opts) -> None:
    a, b, ca, cb = _both(data, tmp_path, **opts)
    assert ca == cb, "seq counters differ"
    assert list(a.state.tails["log.txt"]) == list(b.state.tails["log.txt"])
    assert a.state.exceptions == b.state.exceptions
    assert a.state.open_tracebacks == b.state.open_tracebacks
    assert a.run.args == b.run.args
    assert a.finish() == b.finish()


HOSTILE = b"".join([
    b"run sh: `swift rlhf --rlhf_type grpo --num_generations 8 --per_device_train_batch_size 3`\r\n",
    b"[INFO:swift] args: RLHFArguments(\nnum_generations=8,\nper_device_train_batch_size=3,\n"
    b"  indented_key=1,\n)\n",
    "中文日志 说明 ééé 🙂 no trigger here\n".encode(),
    "GBK 行: 显存不足".encode("gb18030") + b"\n",
    b"broken utf8 \xff\xfe\xc3 end\n",
    b"Err\x00or hidden by a NUL byte\n",
    b"\x1b[31mTrace\x1b[0mback (most recent call last):\n",
    b"[rank1]: Traceback (most recent call last):\n",
    b"[rank0]: Traceback (most recent call last):\n",
    b'[rank1]:   File "/x/swift/trainers/a.py", line 10, in f\n',
    b'[rank0]:   File "/x/swift/trainers/a.py", line 11, in g\n',
    b"[rank0]:     return compute(x)\n",
    b"[rank1]:     loss = self.step()\n",
    b"[rank1]:            ^^^^^^^^^^^\n",
    b"[rank1]: ValueError: generation_batch_size (6) must be evenly divisible by num_generations (4).\n",
    b"    StopIteration\n",
    b"Train:  50%|#####     | 3/6 [00:00<00:00,  6.33it/s]\rTrain:  67%|######6   | 4/6 [00:01<00:00, 6.1it/s]"
    b"{'loss': '0', 'grad_norm': '0', 'reward': '1', 'reward_std': '0'}\n",
    b"```\n",
    b"Downloading: 5.2MB [00:01, 3.4MB/s]   next message glued\n",
    # a trainer_state.json log_history entry as the file holds it (json.dumps(indent=2, sort_keys=True))
    b'  "log_history": [\n    {\n      "epoch": 0.5,\n      "grad_norm": NaN,\n      "loss": 1.5,\n'
    b'      "step": 5\n    },\n',
    b"\n   \n",
    b"y" * (MAX_LINE + 100) + b" Traceback beyond the cap\n",
    b"z" * (3 * MAX_LINE) + b"\n",
    b'  File "/x/trl/trainer/grpo_trainer.py", line 5, in _prepare_inputs\n',
    b"plain line after a frame, no indent\n",
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
])


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 13, 64, 4096, scan.CHUNK])
@pytest.mark.parametrize("use", ENGINES)
def test_hostile_chunk_boundaries(chunk, use, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_DOCTOR_MATCHER", use)
    words = Session().gate_words
    _assert_same(HOSTILE, tmp_path, chunk=chunk, matcher=matchers.matcher_for(words, use))


@pytest.mark.parametrize("tail", [b"", b"no newline at the end", b"w" * (2 * MAX_LINE)])
def test_end_of_file_shapes(tail, tmp_path):
    _assert_same(HOSTILE * 3 + tail, tmp_path, chunk=4096)


def test_tail_is_rebuilt_from_a_long_quiet_end(tmp_path):
    # the last 60 lines hold no trigger word: only the rebuilt tail knows them, with their numbers
    body = HOSTILE + b"".join(b"quiet line %d\n" % i for i in range(500)) + b"\n\n" + b"q" * (5 * MAX_LINE) + b"\n"
    a, b, _, _ = _both(body, tmp_path, chunk=1000)
    assert list(b.state.tails["log.txt"]) == list(a.state.tails["log.txt"])
    assert b.state.tails["log.txt"][-2].text == "quiet line 499"
    assert b.state.tails["log.txt"][-2].where.line == HOSTILE.count(b"\n") + 500


def test_skipped_lines_are_not_decoded(tmp_path):
    data = HOSTILE + b"".join(b"completion text %d\n" % i for i in range(5000))
    p = tmp_path / "log.txt"
    p.write_bytes(data)
    with open(p, "rb") as f:
        sc = scan.scan_file(Session(), "log.txt", f, [0], chunk=1 << 16)
    assert sc.lineno == data.count(b"\n")
    assert sc.fed < 60, "quiet lines must be skipped, not fed"


_FRAGMENTS = [b"Traceback (most recent call last):", b'  File "a.py", line 3, in f', b"    x = 1", b"   ^^^",
              b"ValueError: bad", b"StopIteration", b"[rank1]: ", b"[rank0]: ", b"args: RLHFArguments(", b")",
              b"x=1,", b"\r", b"\r\n", b"\n", b"\n", b"\n", b" ", b"\t", b"\x00", b"\x1b[0m", "é中".encode(),
              "中".encode("gb18030"), b"\xff", b"```", b"3.4it/s]", b"{'loss': '0', 'reward': '1'}", b"vllm",
              b"[INFO:swift] ", b"Error", b"ok", b"Saving model checkpoint to /x", b"End time of running main"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(_FRAGMENTS), max_size=80), chunk=st.integers(1, 40))
def test_random_logs_same_both_paths(parts, chunk, tmp_path):
    _assert_same(b"".join(parts), tmp_path, chunk=chunk, matcher=matchers.Matcher(Session().gate_words))


def test_a_line_that_starts_a_new_run_goes_to_the_new_runs_rules(tmp_path):
    # hypothesis found it: the line that opens a second run's argument dump holds gate words ("args:"), whose rules
    # the new run had just replaced, so the hits named rules no longer in the session
    parts = [b"args: RLHFArguments(", b"[rank1]: ", b"Traceback (most recent call last):", b"[rank1]: ",
             b"Saving model checkpoint to /x", b"args: RLHFArguments("]
    _assert_same(b"".join(parts), tmp_path, chunk=1, matcher=matchers.Matcher(Session().gate_words))


@pytest.mark.parametrize("use", ENGINES)
def test_word_gate_engines_agree(use):
    words = {"vllm": ("a",), "vllm_mode is required": ("b",), "Error": ("c",), "r: soc": ("d",), "it/s]": ()}
    gate = WordGate(words, use=use)
    got = lambda t: sorted({x for h in gate.hits(t) for x in h})  # noqa: E731
    assert got("use vllm_mode is required now") == ["a", "b"]
    assert got("Error: socket") == ["c", "d"]
    assert got("nothing here") == []
    assert gate.hits("3.4it/s]") == [()]  # a word with no rule still opens the gate


def test_engine_env(monkeypatch):
    monkeypatch.setenv("GRPO_DOCTOR_MATCHER", "re")
    assert engine() == "re"


# ---------------------------------------------------------------------------- the forked scanning child
# the scanning child runs Hyperscan: GRPO_DOCTOR_MATCHER=re (the pure-Python matcher) never forks it
needs_fork = pytest.mark.skipif(not (HAVE_HS and hasattr(os, "fork")) or os.environ.get("GRPO_DOCTOR_MATCHER") == "re",
                                reason="the parallel path needs Hyperscan (not GRPO_DOCTOR_MATCHER=re) and fork")


def _forks(monkeypatch) -> list[int]:
    """Counts the children forked by the scanner (the parent's side of os.fork)."""
    calls: list[int] = []
    real = os.fork

    def counting_fork():
        pid = real()
        if pid:
            calls.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    return calls


@needs_fork
@pytest.mark.parametrize("case", cases())
def test_fixture_same_report_forked(case, monkeypatch):
    forks = _forks(monkeypatch)
    ref = _report(case, lines=True)
    assert _report(case, fork=True) == ref
    assert _report(case, fork=True, chunk=61) == ref  # pieces cut inside lines and words
    logs = [i for i in ref["inputs"] if i["kind"] == "log" and i["path"] != "-"]
    # a child per log file, each time; a paste put back in its lines (sources/reflow.py) is read whole, no child
    scanned = [i for i in logs if needs_reflow((FIXTURES / i["path"]).read_bytes()[:MAX_REFLOW + 1]) is None]
    assert len(forks) == 2 * len(scanned)


@needs_fork
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 13, 64, 4096, scan.CHUNK])
def test_hostile_forked(chunk, tmp_path, monkeypatch):
    forks = _forks(monkeypatch)
    _assert_same(HOSTILE, tmp_path, chunk=chunk, fork=True)
    assert len(forks) == 1


@needs_fork
@pytest.mark.parametrize("tail", [b"", b"no newline at the end", b"w" * (2 * MAX_LINE), b"Error" + b"w" * (2 * MAX_LINE)])
@pytest.mark.parametrize("chunk", [100, 4096])
def test_end_of_file_shapes_forked(tail, chunk, tmp_path):
    _assert_same(HOSTILE * 3 + tail, tmp_path, chunk=chunk, fork=True)


@needs_fork
def test_sticky_run_over_long_lines_forked(tmp_path):
    # an args dump holding an over-long line, then a traceback frame awaiting its code line: the parent reads
    # these lines itself (pread), capped like the line-by-line path
    data = (b"[INFO:swift] args: RLHFArguments(\nnum_generations=8,\nsystem='" + b"s" * (3 * MAX_LINE) + b"',\n"
            b"per_device_train_batch_size=3,\n)\n" + HOSTILE +
            b'  File "/x/trl/trainer/grpo_trainer.py", line 5, in f\n' + b"    " + b"c" * (MAX_LINE + 7) + b"\n")
    _assert_same(data, tmp_path, chunk=1000, fork=True)


@needs_fork
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(_FRAGMENTS), max_size=80), chunk=st.integers(1, 40))
def test_random_logs_same_forked(parts, chunk, tmp_path):
    _assert_same(b"".join(parts), tmp_path, chunk=chunk, fork=True)


def _lines_of(n: int, width: int = 64) -> bytes:
    """n lines of exactly ``width`` bytes, every 8th with a trigger word."""
    out = []
    for i in range(n):
        body = (b"Error at step %d" % i) if i % 8 == 0 else (b"quiet %d" % i)
        out.append(body.ljust(width - 1, b".") + b"\n")
    return b"".join(out)


@needs_fork
def test_child_killed_parent_reads_the_rest(tmp_path, monkeypatch):
    # the child sends one batch and dies: the parent goes on from the last line it fed, same findings
    from doctor.sources import scanchild

    real = scanchild.MappedScan.batches

    def one_batch_then_die(self):
        for batch in real(self):
            yield batch
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(scanchild.MappedScan, "batches", one_batch_then_die)
    data = HOSTILE + _lines_of(2000) + HOSTILE
    a, b, ca, cb = _both(data, tmp_path, chunk=4096, fork=True)
    p = tmp_path / "log.txt"
    with open(p, "rb") as f:
        sc = scan.ChunkScanner(Session(), "log.txt", [0], chunk=4096, fork=True)
        sc.run(f)
    assert sc.child_exit == -signal.SIGKILL
    assert sc.lineno == data.count(b"\n")
    assert ca == cb and a.finish() == b.finish() and list(a.state.tails["log.txt"]) == list(b.state.tails["log.txt"])


@needs_fork
def test_log_truncated_under_the_child_sigbus(tmp_path, monkeypatch):
    # logrotate's copytruncate shrinks the file while the child has it mapped: the child dies of SIGBUS on
    # the first page past the new end; the parent reads what is left itself and reports on that
    from doctor.sources import scanchild

    data = _lines_of(8192)            # 512 KiB, lines of 64 bytes: 64 lines a page
    cut = 64 * 1024                   # a page boundary and a line boundary
    p = tmp_path / "log.txt"
    p.write_bytes(data)
    real = scanchild.MappedScan.batches

    def truncate_after_first(self):
        for i, batch in enumerate(real(self)):
            yield batch
            if i == 0:
                os.truncate(p, cut)

    monkeypatch.setattr(scanchild.MappedScan, "batches", truncate_after_first)
    b, cb = Session(), [0]
    with open(p, "rb") as f:
        sc = scan.ChunkScanner(b, "log.txt", cb, chunk=4096, fork=True)
        sc.run(f)
    assert sc.child_exit == -signal.SIGBUS
    a, ca = Session(), [0]
    a.begin_log("log.txt")
    for line in LineReader("log.txt", ca).lines(io.BytesIO(data[:cut])):
        a.feed_line(line)
    assert sc.lineno == 1024 and ca == cb
    assert list(a.state.tails["log.txt"]) == list(b.state.tails["log.txt"])
    assert a.finish() == b.finish()


@needs_fork
def test_parent_error_kills_and_reaps_the_child(tmp_path):
    p = tmp_path / "log.txt"
    p.write_bytes(_lines_of(50000))   # ~3 MB: the child is still scanning when the parent fails

    class Boom(Exception):
        pass

    sess = Session()
    fed = [0]
    real = sess.feed_line

    def feed(line):
        fed[0] += 1
        if fed[0] == 3:
            raise Boom
        real(line)

    sess.feed_line = feed
    with open(p, "rb") as f, pytest.raises(Boom):
        scan.ChunkScanner(sess, "log.txt", [0], chunk=4096, fork=True).run(f)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)   # no child left behind, not even a zombie


@needs_fork
def test_fork_only_when_it_pays(tmp_path, monkeypatch):
    forks = _forks(monkeypatch)
    p = tmp_path / "log.txt"
    p.write_bytes(HOSTILE)
    with open(p, "rb") as f:
        scan.scan_file(Session(), "log.txt", f, [0])
    assert forks == []                  # a small log: scanned in this process
    monkeypatch.setenv("GRPO_DOCTOR_SCAN", "fork")
    with open(p, "rb") as f:
        scan.scan_file(Session(), "log.txt", f, [0])
    assert len(forks) == 1
    monkeypatch.setenv("GRPO_DOCTOR_SCAN", "inproc")
    with open(p, "rb") as f:
        scan.scan_file(Session(), "log.txt", f, [0], fork=True)
    assert len(forks) == 1


# ---------------------------------------------------------------------------- the early start (analyze)
@needs_fork
def test_early_child_is_adopted_and_reports_the_same(tmp_path, monkeypatch):
    from doctor import gate

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(scan, "FORK_MIN", 1000)
    log = tmp_path / "run.log"
    log.write_bytes(HOSTILE * 3 + _lines_of(3000))
    assert gate.cached_words() is None
    ref = analyze([str(log)], scan_options={"lines": True}).to_json()
    assert gate.cached_words() == Session().gate_words  # stored by any run on a big log, for the next one
    for f in (tmp_path / "cache" / "grpo-doctor").glob("words-*.json"):
        f.unlink()
    forks = _forks(monkeypatch)
    started = []
    real_start = scan.start_early
    monkeypatch.setattr(scan, "start_early", lambda p: started.append(real_start(p)) or started[-1])
    assert analyze([str(log)]).to_json() == ref      # no cached words: forked when the log is reached
    assert gate.cached_words() == Session().gate_words
    assert analyze([str(log)]).to_json() == ref      # forked before the catalog loaded, then adopted
    assert analyze([str(log)], select={"gd101"}).to_json() == analyze(
        [str(log)], select={"gd101"}, scan_options={"lines": True}).to_json()  # a selection's words are fewer
    assert [c is not None for c in started] == [False, True, True]  # (the line-path run starts none)
    assert len(forks) == 3                           # one child per run: an early one is adopted, not doubled
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@needs_fork
def test_early_child_for_another_file_is_stopped(tmp_path, monkeypatch):
    from doctor import gate

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(scan, "FORK_MIN", 1000)
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(_lines_of(3000))
    b.write_bytes(HOSTILE + _lines_of(2000))
    gate.store_words(Session().gate_words)
    early = scan.start_early(str(a))
    assert early is not None
    y, cy = Session(), [0]
    with open(b, "rb") as f:
        sc = scan.ChunkScanner(y, "log.txt", cy, early=early)
        sc.run(f)
    assert early.exit == -signal.SIGKILL or early.exit == 0   # stopped (or already done), and reaped
    assert sc.child_exit == 0                                  # b got a child of its own
    ref, _, cref, _ = _both(HOSTILE + _lines_of(2000), tmp_path)
    assert cref == cy and ref.finish() == y.finish()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_words_cache_round_trip_and_bad_files(tmp_path, monkeypatch):
    from doctor import gate

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gate.cached_words() is None
    gate.store_words({"b", "a"})
    assert gate.cached_words() == {"a", "b"}
    (path,) = (tmp_path / "grpo-doctor").glob("words-*.json")
    path.write_text('{"not": "a list"}')
    assert gate.cached_words() is None
    path.write_text("[1, 2")
    assert gate.cached_words() is None
    monkeypatch.setenv("GRPO_DOCTOR_SCAN", "lines")
    monkeypatch.setattr(scan, "FORK_MIN", 10)
    log = tmp_path / "x.log"
    log.write_bytes(HOSTILE)
    gate.store_words(Session().gate_words)
    assert scan.start_early(str(log)) is None  # the line path was asked for: no child


@pytest.mark.skipif(not HAVE_HS, reason="the scanning child runs Hyperscan")
@pytest.mark.parametrize("seed", range(4))
def test_child_counts_small_spans_by_copy_as_numpy_does(seed, tmp_path):
    """MappedScan counts the newlines between near candidates by a copy (SMALL), longer spans with numpy or in
    steps: the same candidates and line numbers whichever way each span is counted."""
    import mmap
    import random

    from doctor.sources import scanchild
    rnd = random.Random(seed)
    lines = []
    for _ in range(3000):   # runs of candidates, and quiet stretches of every length around SMALL
        gap = rnd.choice([0, 0, 1, 2, 30, 60, 70, 200])
        lines += [b"quiet line"] * gap + [rnd.choice([b"Error here", b"{'loss': '0.1', 'reward': '1'}", b"x" * 5000])]
    data = b"\n".join(lines) + (b"\n" if seed % 2 else b" no newline at the end")
    p = tmp_path / "log.txt"
    p.write_bytes(data)
    m = matchers.matcher_for(Session().gate_words, "hyperscan")
    got = []
    chunk = rnd.choice([4096, 65536, 8 << 20])
    for small, numpy in ((-1, True), (scanchild.MappedScan.SMALL, True), (-1, False), (1 << 40, True)):
        with p.open("rb") as f:
            mm = mmap.mmap(f.fileno(), len(data), access=mmap.ACCESS_READ)
            sc = scanchild.MappedScan(mm, len(data), m._db, m._scratch, chunk, m.max_len - 1)
            sc.SMALL = small
            if not numpy:
                sc.arr = None
            got.append(([b.tolist() for b in sc.batches()], sc.lines))
            sc.close()
            mm.close()
    assert got[0][1] == data.count(b"\n") + (seed % 2 == 0)
    assert got[1] == got[0] and got[2] == got[0] and got[3] == got[0]
