"""The fast paths of issue 19 give what the plain paths give: a logging.jsonl record decoded with orjson (when
installed) has json's values, the launcher-line cache gives shlex's words, and the scanning child that stops a
Hyperscan scan on a long candidate line and jumps past it finds the same lines with the same numbers."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_scan import _assert_same  # the scanner and the line-by-line path agree on every count, tail, exception

from doctor.sources import argv as sc
from doctor.sources import metrics
from doctor.sources.logtext import MAX_LINE

FIX = Path(__file__).resolve().parent.parent / "fixtures"

try:
    import hyperscan  # noqa: F401
    HAVE_HS = True
except ImportError:  # pragma: no cover
    HAVE_HS = False

RECORDS = [
    '{"a": 1, "b": 2, "a": 3}', '{"x": 1e400}', '{"x": NaN, "y": 2, "z": -Infinity}', '{"x": [1, 2], "y": "0.5"}',
    '{"x": true, "y": "nan", "z": null, "w": "inf", "v": "4s", "u": "-Infinity"}', "[1]", '{"loss": 0.1',
    '{"x": 12345678901234567890123}', '{"x": 18446744073709551615, "y": -9223372036854775808}',
    '{"x": {"k": 123456789012345678901234567890}}', '{"s": "\\ud800"}', '{"e": ""}', "  {} ", '{"q": "0.25"}',
    '{"x": ' + "[" * 3000 + "]" * 3000 + "}", '{"x": 1, "y": ' + "[" * 200 + "]" * 200 + "}",
]


def test_jsonl_fast_decoder_gives_json_values(monkeypatch):
    real = [ln for p in sorted(FIX.glob("**/logging.jsonl")) for ln in p.read_text().splitlines()]
    cases = real + RECORDS
    fast = [repr(metrics.parse_jsonl(c)) for c in cases]
    again = [repr(metrics.parse_jsonl(c)) for c in cases]  # with the value cache warm
    assert [repr(metrics.parse_jsonl(c, False)) for c in cases] == fast   # watch's first rows: json alone
    monkeypatch.setattr(metrics, "_fast_loads", None)
    metrics._CONVERTED.clear()
    plain = [repr(metrics.parse_jsonl(c)) for c in cases]
    assert fast == plain == again
    # the plain path's conversion loop gives what converting every value with to_number gives
    import json

    for c in cases:
        try:
            obj = json.loads(c.strip())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            ref = {k: metrics.to_number(v) for k, v in obj.items() if not isinstance(v, (dict, list))} | {
                k: v for k, v in obj.items() if isinstance(v, (dict, list))}
            assert repr(metrics.parse_jsonl(c)) == repr(ref)


def test_split_shell_cache_returns_fresh_lists():
    text = "swift rlhf --rlhf_type grpo --model 'a b' --dataset AI-MO/x#5000  # comment"
    first = sc.split_shell(text)
    first.append("mutated")
    assert sc.split_shell(text) == sc._split_shell(text)
    long = "--a " * 10_000
    assert sc.split_shell(long) == sc._split_shell(long)


@pytest.mark.skipif(not HAVE_HS, reason="the scanning child needs Hyperscan")
@pytest.mark.parametrize("chunk", [1000, 4096, 1 << 16])
@pytest.mark.parametrize("end", [b"\n", b""])
def test_child_jumps_over_long_trigger_lines(chunk, end, tmp_path):
    trig = b"Error 'loss' %| Train: it/s] NCCL Traceback "
    body = (b"[INFO:swift] rank: 0, local_rank: 0, world_size: 2, local_world_size: 2\n"
            + trig * (3 * MAX_LINE // len(trig)) + b"\n"
            + b"quiet line\n" * 50
            + b"x" * 5000 + trig + b"\n"  # a candidate line across a piece boundary
            + b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            + trig * (2 * MAX_LINE // len(trig)) + end)
    _assert_same(body, tmp_path, chunk=chunk, fork=True)
