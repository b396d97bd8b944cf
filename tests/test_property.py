"""Property tests: random bytes and mutated real logs never crash the analyzer."""
from __future__ import annotations

import json

from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.analyze import analyze
from doctor.render import jsonr, markdown, text
from doctor.sources.inputs import InputError

REAL = sorted((ROOT / "fixtures" / "logs").glob("*/log.txt"))[:8]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _analyze_bytes(tmp_path, data: bytes) -> None:
    f = tmp_path / "x.log"
    f.write_bytes(data)
    try:
        rep = analyze([str(f)])
    except InputError as e:
        assert str(e).startswith(str(f)), "an input error names the file"
        return
    json.loads(jsonr.render(rep))
    markdown.render(rep)
    text.render(rep)


@SETTINGS
@given(st.binary(max_size=4096))
def test_random_bytes(tmp_path, data):
    _analyze_bytes(tmp_path, data)


_MUTATIONS = [b"\r", b"\x00", b"\x1b[31m", b"\n", b"[rank7]: ", b"\xff\xfe", b"```\n", b"Traceback (most recent call last):\n",
              b'  File "x.py", line 1, in <module>\n', "显存".encode("gbk"), b"{'loss': 'nan', 'grad_norm': "]


@SETTINGS
@given(st.integers(min_value=0, max_value=max(0, len(REAL) - 1)),
       st.lists(st.tuples(st.floats(0, 1), st.sampled_from(_MUTATIONS), st.booleans()), max_size=20),
       st.floats(0.05, 1.0))
def test_mutated_real_logs(tmp_path, idx, edits, keep):
    data = bytearray(REAL[idx].read_bytes())
    data = data[: max(1, int(len(data) * keep))]  # a truncated ending
    for pos, insert, delete in edits:
        i = int(pos * len(data))
        if delete:
            del data[i:i + 7]
        data[i:i] = insert
    _analyze_bytes(tmp_path, bytes(data))
