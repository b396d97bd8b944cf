"""Issue 30 points 2/6: a checkpoint's JSON side files within their size caps stay within 150 MiB peak RSS.

json.loads costs ~25x a file of small containers: an 8 MiB trainer_state.json whose log_history holds `{}` entries
took 240 MiB peak in check-ckpt and 245 MiB in analyze; a 16 MiB weight index of `[]` 454 MiB. The estimate of
sources/jsoncost.py stops those before decoding: a trainer_state.json over it is streamed for the top-level numbers
the rules read, any other side file is named as not read. Peak RSS is the command's own and its children's (wait4 in a fresh parent: see _MEASURE)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc

import pytest
from conftest import ROOT

from doctor.sources.jsoncost import BUDGET, decode_cost
from doctor.sources.trainer_state import top_scalars

PEAK_MAX = 150 << 20

SHAPES = {
    "empty dicts": b"[" + b"{}," * 100_000 + b"{}]",
    "empty lists": b"[" + b"[]," * 100_000 + b"[]]",
    "small ints": b"[" + b"1," * 100_000 + b"1]",
    "floats": b"[" + b"1.5," * 100_000 + b"1]",
    "short strings": b"[" + b'"ab",' * 100_000 + b'"a"]',
    "keys": b"{" + b",".join(b'"k%d":"v%d"' % (i, i) for i in range(100_000)) + b"}",
    "nested": b"[" + b'{"a":[]},' * 100_000 + b"1]",
    "non-ASCII": b'["' + "\u663e".encode() * 300_000 + b'"]',
}


@pytest.mark.parametrize("name", SHAPES)
def test_the_estimate_bounds_what_json_loads_takes(name):
    raw = SHAPES[name]
    tracemalloc.start()
    try:
        obj = json.loads(raw.decode("utf-8"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del obj
    assert peak <= decode_cost(raw), (name, peak, decode_cost(raw))


def test_a_real_trainer_state_is_decoded_whole():
    """transformers' own layout (indent=2, sort_keys) with 8,700 logged steps of 20 metrics: ~8 MiB, well under the
    budget, so the fast path (json.loads) reads it."""
    row = {f"metric_{k}": 0.123456789 for k in range(20)}
    state = {"global_step": 8700, "log_history": [dict(row, step=i) for i in range(8700)]}
    raw = json.dumps(state, indent=2, sort_keys=True).encode()
    assert decode_cost(raw) < BUDGET


def test_top_scalars_reads_the_numbers_and_tells_a_cut_file():
    raw = json.dumps({"global_step": 7, "log_history": [{}, [], {"loss": [1, {"a": "x,]"}]}] * 5000,
                      "max_steps": 10, "save_steps": 2, "stateful_callbacks": {"a": {"b": [1, 2]}}},
                     indent=2).encode()
    assert top_scalars(io.BytesIO(raw)) == ({"global_step": 7, "max_steps": 10, "save_steps": 2}, None)
    values, why = top_scalars(io.BytesIO(raw[:len(raw) // 2]))
    assert why is not None and why.startswith("not valid JSON: cut or broken at line")
    assert top_scalars(io.BytesIO(raw + b"x"))[1] is not None  # text after the object, as json.loads says


# Linux carries the spawning process's peak RSS into the child's ru_maxrss at exec (a pytest process that once held
# 300 MB hands every child a 311 MB peak): a small process started fresh forks the command and reports wait4's figure
_MEASURE = ("import os, sys\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.execv(sys.executable, [sys.executable, '-m', 'doctor.cli', *sys.argv[2:]])\n"
            "_, status, ru = os.wait4(pid, 0)\n"
            "open(sys.argv[1], 'w').write(str(ru.ru_maxrss))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def _peak(args: list[str], tmp) -> tuple[int, bytes]:
    """(peak RSS in bytes of the command and the children it waited for, its stdout)."""
    with open(tmp / "out", "wb+") as out, open(tmp / "err", "wb+") as err:
        p = subprocess.run([sys.executable, "-c", _MEASURE, str(tmp / "peak"), *args], stdout=out, stderr=err,
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600, check=False)
        out.seek(0)
        err.seek(0)
        assert p.returncode in (0, 1), err.read().decode(errors="replace")[-2000:]
        return int((tmp / "peak").read_text()) * 1024, out.read()


def _bomb(run, name: str, raw: bytes) -> None:
    ck = run / "checkpoint-3"
    ck.mkdir(parents=True)
    (ck / name).write_bytes(raw)
    if name != "trainer_state.json":
        (ck / "trainer_state.json").write_text('{"global_step": 3}')


def test_an_8_mib_trainer_state_of_empty_entries_stays_under_150_mib(tmp_path):
    run = tmp_path / "run"
    head = b'{"global_step": 7, "max_steps": 9, "save_steps": 3, "log_history": ['
    n = ((8 << 20) - len(head) - 2) // 3
    _bomb(run, "trainer_state.json", head + b"{}," * (n - 1) + b"{}]}")
    assert (run / "checkpoint-3" / "trainer_state.json").stat().st_size <= 8 << 20  # within its cap
    peak, out = _peak(["check-ckpt", str(run), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"check-ckpt peak RSS {peak >> 20} MiB"
    rep = json.loads(out)
    assert rep["run"]["vitals"]["checkpoints"][0]["step"] == 7  # global_step still read
    assert not [f for f in rep["findings"] if "trainer_state.json is broken" in f["message"]]
    peak, _ = _peak(["analyze", str(run), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"analyze peak RSS {peak >> 20} MiB"


def test_a_16_mib_weight_index_of_empty_lists_is_named_not_read(tmp_path):
    run = tmp_path / "run"
    head, tail = b'{"metadata": {"total_size": 10, "x": [', b']}, "weight_map": {}}'
    n = ((16 << 20) - len(head) - len(tail)) // 3
    _bomb(run, "model.safetensors.index.json", head + b"[]," * (n - 1) + b"[]" + tail)
    peak, out = _peak(["check-ckpt", str(run), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"check-ckpt peak RSS {peak >> 20} MiB"
    said = [f["message"] for f in json.loads(out)["findings"]]
    assert any("model.safetensors.index.json" in m and "not read" in m for m in said), said


def test_a_16_mib_safetensors_header_of_empty_lists_is_named_not_read(tmp_path):
    """The safetensors library allows a 100 MB header: 16 MiB of `[]` took 443 MiB (json.loads), then 245 MiB (the
    library's own parser of the `full` extra)."""
    import struct
    run = tmp_path / "run"
    hdr = (b'{"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}, "z": [' + b"[]," * ((16 << 20) // 3)
           + b"[]]}")
    _bomb(run, "model.safetensors", struct.pack("<Q", len(hdr)) + hdr + b"\0\0")
    peak, out = _peak(["check-ckpt", str(run), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"check-ckpt peak RSS {peak >> 20} MiB"
    said = [f["message"] for f in json.loads(out)["findings"]]
    assert any("model.safetensors is broken: the header: decoding" in m and "not read" in m for m in said), said


def test_watch_names_an_args_json_too_costly_to_decode(tmp_path):
    """watch read up to 32 MiB of args.json whole: 30 MiB of `{}` took 818 MiB beside the training."""
    big = tmp_path / "args.json"
    big.write_bytes(b'{"model": "x", "junk": [' + b"{}," * ((30 << 20) // 3) + b"{}]}")
    run = tmp_path / "run"
    child = f"import os, shutil, time; os.makedirs({str(run / 'v0')!r}); shutil.copy({str(big)!r}, {str(run / 'v0')!r}); time.sleep(3)"
    peak, _ = _peak(["watch", "--no-preflight", "--gpu-interval", "0", "--run-dir", str(run), "--", sys.executable, "-c",
                     child], tmp_path)
    assert peak < PEAK_MAX, f"watch peak RSS {peak >> 20} MiB"
    said = (tmp_path / "err").read_text(errors="replace")
    assert "args.json: skipped (decoding its" in said, said[-2000:]


def test_an_args_json_within_its_cap_but_costly_is_named_not_read(tmp_path):
    """4 MiB is args.json's cap, and 4 MiB of `{"a":[]}` took 158 MiB to decode: named as skipped, the log still read."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "args.json").write_bytes(b'{"model": "x", "junk": [' + b'{"a":[]},' * (((4 << 20) - 100) // 9) + b"{}]}")
    (run / "train.log").write_text("ValueError: generation_batch_size (3) must be divisible by num_generations (2).\n")
    peak, out = _peak(["analyze", str(run), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"analyze peak RSS {peak >> 20} MiB"
    rep = json.loads(out)
    skipped = [i for i in rep["inputs"] if i["kind"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["path"].endswith("args.json") and "not read" in skipped[0]["note"]
    assert rep["findings"][0]["rule_id"] == "GD101"


def test_an_explicit_json_file_is_not_decoded_whole_to_tell_a_report(tmp_path):
    """A .json file given by name is decoded to see whether it is a grpo-doctor report (up to 32 MiB): 30 MiB of `{}`."""
    big = tmp_path / "x.json"
    big.write_bytes(b"[" + b"{}," * ((30 << 20) // 3) + b"{}]")
    peak, _ = _peak(["analyze", str(big), "--format", "json"], tmp_path)
    assert peak < PEAK_MAX, f"analyze peak RSS {peak >> 20} MiB"


def test_preflight_refuses_an_args_json_too_costly_to_decode_in_one_line(tmp_path):
    """preflight ARGS.json (and swift's --config FILE.json) read up to 4 MiB whole: 4 MiB of `{"a":[]}` took 326 MiB
    and 26 s. Now exit 2 with one line."""
    args = tmp_path / "args.json"
    args.write_bytes(b'{"model": "x", "junk": [' + b'{"a":[]},' * (((4 << 20) - 100) // 9) + b"{}]}")
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "preflight", str(args)], capture_output=True, timeout=300,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2 and "would take about" in err and "Traceback" not in err, err[-2000:]
    assert len([ln for ln in err.splitlines() if ln.startswith("grpo-doctor: ")]) == 1, err
