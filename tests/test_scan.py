"""The chunk scanner (analyze's fast path) gives exactly what feeding every line gives.

Every fixture is analysed both ways (and with tiny chunks, and with each matching engine); hostile
inputs (chunk boundaries inside a line, a \\r\\n, a multibyte character; GBK; NUL; ANSI inside a word;
interleaved tracebacks; an args dump; huge lines; no final newline) are compared on the session's
state too: findings, tails, exceptions, the last seq and the parsed arguments.
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden import FIXTURES, cases
from doctor.analyze import analyze
from doctor.engine import Session
from doctor.gate import WordGate, engine
from doctor.sources import scan
from doctor.sources.logtext import MAX_LINE, LineReader

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
    assert _report(case, chunk=7, matcher=scan.Matcher(words)) == ref
    if HAVE_HS:
        assert _report(case, chunk=61, matcher=scan.HyperscanMatcher(words)) == ref


def _both(data: bytes, tmp_path: Path, **opts) -> tuple[Session, Session, list[int], list[int]]:
    p = tmp_path / "log.txt"
    p.write_bytes(data)
    a, ca = Session(), [0]
    a.begin_log("log.txt")
    for line in LineReader("log.txt", ca).lines(io.BytesIO(data)):
        a.feed_line(line)
    b, cb = Session(), [0]
    with open(p, "rb") as f:
        scan.scan_file(b, "log.txt", f, cb, **opts)
    return a, b, ca, cb


def _assert_same(data: bytes, tmp_path: Path, **opts) -> None:
    a, b, ca, cb = _both(data, tmp_path, **opts)
    assert ca == cb, "seq counters differ"
    assert list(a.tails["log.txt"]) == list(b.tails["log.txt"])
    assert a.exceptions == b.exceptions
    assert a.tracker.open_tracebacks() == b.tracker.open_tracebacks()
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
    _assert_same(HOSTILE, tmp_path, chunk=chunk, matcher=scan.matcher_for(words, use))


@pytest.mark.parametrize("tail", [b"", b"no newline at the end", b"w" * (2 * MAX_LINE)])
def test_end_of_file_shapes(tail, tmp_path):
    _assert_same(HOSTILE * 3 + tail, tmp_path, chunk=4096)


def test_tail_is_rebuilt_from_a_long_quiet_end(tmp_path):
    # the last 60 lines hold no trigger word: only the rebuilt tail knows them, with their numbers
    body = HOSTILE + b"".join(b"quiet line %d\n" % i for i in range(500)) + b"\n\n" + b"q" * (5 * MAX_LINE) + b"\n"
    a, b, _, _ = _both(body, tmp_path, chunk=1000)
    assert list(b.tails["log.txt"]) == list(a.tails["log.txt"])
    assert b.tails["log.txt"][-2].text == "quiet line 499"
    assert b.tails["log.txt"][-2].where.line == HOSTILE.count(b"\n") + 500


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
    _assert_same(b"".join(parts), tmp_path, chunk=chunk, matcher=scan.Matcher(Session().gate_words))


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
