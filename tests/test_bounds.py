"""Issue 18 points 7, 14, 15, 16: numbers and names from inputs never hang, crash or break a report."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from doctor.swift.batch import divisors


def cli(*args: str, env: dict | None = None, stdin: bytes | None = None, timeout: float = 60):
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], input=stdin, capture_output=True, cwd=ROOT,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=timeout, check=False)


# ------------------------------------------------------------------------------------------------- point 7

def test_divisors_are_bounded_and_right():
    for n in (1, 2, 12, 64, 97, 360, 1_000_003):
        assert divisors(n) == [d for d in range(2, n + 1) if n % d == 0]
    big = 10 ** 22
    got = divisors(big)
    assert got and all(big % d == 0 for d in got) and big in got


def test_preflight_with_23_digit_batch_size_finishes():
    p = cli("preflight", "--", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-0.5B",
            "--per_device_train_batch_size", "10000000000000000000000", "--num_generations", "7", "--dataset", "x",
            timeout=60)  # before: the divisor list was O(n) and never finished
    assert p.returncode == 1, p.stderr
    assert b"num_generations" in p.stdout


# ------------------------------------------------------------------------------------------------ point 14

FORMATS = ("text", "json", "markdown", "sarif")
BATCH = b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"


def _strict_json(text: bytes):
    def no_constant(c):
        raise AssertionError(f"non-standard JSON constant {c}")
    return json.loads(text, parse_constant=no_constant)


@pytest.mark.parametrize("where", ["args.json", "command.txt", "run sh"])
def test_non_finite_argument_gives_valid_json(tmp_path, where):
    run = tmp_path / "run"
    run.mkdir()
    log = BATCH
    if where == "args.json":
        (run / "args.json").write_text('{"rlhf_type": "grpo", "learning_rate": NaN, "max_grad_norm": Infinity, '
                                       '"temperature": -Infinity, "num_generations": 8}')
    elif where == "command.txt":
        (run / "command.txt").write_text("swift rlhf --rlhf_type grpo --learning_rate nan --max_grad_norm inf "
                                         "--temperature -inf --num_generations 8\n")
    else:
        log = (b"run sh: `swift rlhf --rlhf_type grpo --learning_rate nan --temperature -inf --num_generations 8`\n"
               + log)
    (run / "train.log").write_bytes(log)
    for fmt in ("json", "sarif"):
        p = cli("analyze", str(run), "-f", fmt)
        assert p.returncode == 1 and b"Traceback" not in p.stderr, p.stderr.decode()[-600:]
        doc = _strict_json(p.stdout)
        if fmt == "json":
            args = doc["run"].get("args", {})
            assert args.get("temperature") == "-inf", args


def test_json_renderer_values():
    from doctor.render.safe import json_dumps
    assert _strict_json(json_dumps({"a": float("nan"), "b": [float("inf"), -float("inf")], "c": "x\udcff"}).encode()) \
        == {"a": "nan", "b": ["inf", "-inf"], "c": "x\\xff"}


# ------------------------------------------------------------------------------------------------ point 15

@pytest.mark.parametrize("fmt", FORMATS)
def test_non_utf8_file_name_every_format(tmp_path, fmt):
    run = tmp_path / "run"
    run.mkdir()
    with open(os.path.join(os.fsencode(run), b"log\xff\xfe.txt"), "wb") as f:
        f.write(BATCH)
    p = cli("analyze", str(run), "-f", fmt, env={"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"})
    assert p.returncode == 1 and b"Traceback" not in p.stderr, p.stderr.decode()[-600:]
    want = "log\\xff\\xfe.txt"  # the undecodable bytes, shown escaped
    if fmt in ("json", "sarif"):
        _strict_json(p.stdout)
        want = json.dumps(want)[1:-1]
    if fmt == "sarif":  # a relative URI: the bytes percent-encoded (issue 17.12)
        want = "log%FF%FE.txt"
    assert want in p.stdout.decode()
    out = tmp_path / f"report.{fmt}"
    p = cli("analyze", str(run), "-f", fmt, "-o", str(out))
    assert p.returncode == 1 and b"Traceback" not in p.stderr, p.stderr.decode()[-600:]
    out.read_text(encoding="utf-8")
    if fmt in ("json", "sarif"):
        _strict_json(out.read_bytes())


def test_ascii_stdout_never_crashes(tmp_path):
    f = tmp_path / "x.log"
    f.write_text("显存 ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    p = cli("analyze", str(f), env={"PYTHONIOENCODING": "ascii:strict"})
    assert p.returncode == 1 and b"Traceback" not in p.stderr, p.stderr.decode()[-600:]


# ------------------------------------------------------------------------------------------------ point 16

FUZZ = ROOT / "fixtures" / "fuzz"


@pytest.mark.parametrize("name", ["overflow-float-vllm-util.log", "nccl-timeout-huge-ms.log",
                                  "huge-rank-missing-list.log"])
def test_fuzz_findings_are_reports_not_internal_errors(name):
    # found by the fuzzer: float() of a 400-digit value, a NCCL timeout of 10**30 ms, a [rank10**25] prefix
    # (the missing-rank list was O(rank): a hang, then out of memory)
    p = cli("analyze", str(FUZZ / name), "-f", "json", timeout=60)
    assert p.returncode in (0, 1) and b"internal error" not in p.stderr, p.stderr.decode()[-400:]
    _strict_json(p.stdout)


def test_one_bad_field_costs_the_field(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "args.json").write_text('{"rlhf_type": "grpo", "num_generations": 8, "model": ' + "[" * 5000 + "]" * 5000
                                   + "}")
    big = "9" * 401
    (run / "logging.jsonl").write_text(f'{{"loss": {big}, "grad_norm": 1.0, "global_step/max_steps": "1/10"}}\n'
                                       '{"loss": ' + "[" * 3000 + "]" * 3000 + '}\n')
    (run / "train.log").write_bytes(BATCH)
    p = cli("analyze", str(run), "-f", "json")
    assert p.returncode == 1 and b"internal error" not in p.stderr, p.stderr.decode()[-400:]
    doc = _strict_json(p.stdout)
    # the report survives the bad fields (a 401-digit loss is beyond float: read as inf, as float("1e401") is)
    assert {"batch-divisibility", "loss-nan-or-inf"} <= {f["category"] for f in doc["findings"]}


def test_a_new_reward_function_per_row_costs_no_column_per_row(tmp_path):
    """A logging.jsonl naming a new reward function on every row (6,000 rows): each new name used to get a column as
    long as the run, so memory grew as rows x names (0.9 MB: 708 MB and 1:54 on this machine). The series keeps the
    first 64 functions and counts the rest; the run is still read (GD-free healthy rows: exit 0)."""
    from doctor.checks._series import MAX_REWARD_FUNCS, Series
    from doctor.signals import Metrics, Where

    s = Series()
    for i in range(3 * MAX_REWARD_FUNCS):
        s.add(Metrics({"loss": 0.1, "reward": 0.5, "reward_std": 0.1, "global_step/max_steps": f"{i + 1}/1000",
                       f"rewards/f{i}/mean": 0.5, f"rewards/f{i}/std": 0.1}, Where("x", i + 1), i, "jsonl", True))
    assert len(s.rmean) == MAX_REWARD_FUNCS == len(s.rstd)
    assert all(len(col) == s.n == 3 * MAX_REWARD_FUNCS for col in s.rmean.values())
    assert len(s.dropped_rewards) == MAX_REWARD_FUNCS   # counted up to the same bound
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "logging.jsonl", "w") as f:
        for i in range(6000):
            f.write(json.dumps({"loss": 0.1, "reward": 0.5, "reward_std": 0.1, "global_step/max_steps": f"{i + 1}/6000",
                                f"rewards/func_{i}/mean": 0.5, f"rewards/func_{i}/std": 0.1}) + "\n")
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(run), "-q"], capture_output=True,
                       timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_huge_args_json_is_named_not_read(tmp_path):
    """json.loads takes ~25x a file's size (a 20 MB args.json: 224 MB peak); an args.json is tens of kB, so one over
    4 MiB is skipped with its size said, and the log beside it is still analysed."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.txt").write_bytes((ROOT / "fixtures" / "logs" / "real-dataset-missing-solution-column" /
                                   "log.txt").read_bytes())
    (run / "args.json").write_text(json.dumps({"tuner_type": "full", "junk": ["x" * 100] * 60_000}))
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(run), "--format", "json"],
                       capture_output=True, timeout=300, cwd=ROOT)
    rep = json.loads(p.stdout)
    skipped = [i for i in rep["inputs"] if i["kind"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["path"].endswith("args.json")
    assert "larger than such a file takes: not read" in skipped[0]["note"]
    assert rep["findings"][0]["rule_id"] == "GD606"


def test_a_huge_checkpoint_config_is_named_not_read(tmp_path):
    from doctor.sources.checkpoint import _read_json
    big = tmp_path / "config.json"
    big.write_text(json.dumps({"junk": ["x" * 100] * 50_000}))
    got = _read_json(big, big.stat().st_size)
    assert got.data is None and "larger than the 4 MiB such a file takes: not read" in got.error


def test_a_sparse_log_is_read_without_its_holes(tmp_path):
    """A log with a 1 GiB hole (apparent size 1 GiB + 28 kB, a few blocks on disk): the holes hold no line, only NUL
    bytes, and reading them cost 65 s for 20 GiB; now what the file holds is read (the bytes the reader returns are
    the data, not the apparent size) and the report is the plain log's."""
    from doctor.sources.sparse import is_sparse, skipping_holes
    data = (ROOT / "fixtures" / "logs" / "real-dataset-missing-solution-column" / "log.txt").read_bytes()
    log = tmp_path / "train.log"
    with open(log, "wb") as f:
        f.write(data[:20000])
        f.seek(1 << 30, 1)
        f.write(data[20000:])
    if not is_sparse(str(log)):
        pytest.skip("this filesystem keeps no holes")
    with open(log, "rb") as f:
        read = skipping_holes(f).read()
    assert read.replace(b"\0", b"") == data and len(read) < len(data) + (1 << 20)
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(log), "-q"], capture_output=True,
                       timeout=300, cwd=ROOT)
    assert p.stdout.decode().startswith(f"{log}:775: GD606 error")


def test_a_folder_of_thousands_of_files_reads_the_largest_logs(tmp_path, monkeypatch):
    """A run folder of thousands of small .txt files beside the real log (30,000 took 2:45 and listed every name):
    at most MAX_LOGS logs are read, the largest, the rest counted in one skipped entry; the text report names 20
    inputs and the count."""
    from doctor.analyze import analyze
    from doctor.render.text import render
    from doctor.sources import inputs as inputs_mod
    monkeypatch.setattr(inputs_mod, "MAX_LOGS", 50)
    run = tmp_path / "run"
    run.mkdir()
    for i in range(120):
        (run / f"note{i}.txt").write_text("hello\n")
    (run / "train.log").write_bytes((ROOT / "fixtures" / "logs" / "real-dataset-missing-solution-column" /
                                     "log.txt").read_bytes())
    rep = analyze([str(run)])
    logs = [i for i in rep.inputs if i.kind == "log"]
    skipped = [i for i in rep.inputs if i.kind == "skipped"]
    assert len(logs) == 50 and any(i.path.endswith("train.log") for i in logs)
    assert len(skipped) == 1 and skipped[0].path.startswith("71 more log file(s) under")
    assert rep.findings[0].rule_id == "GD606"
    line = next(ln for ln in render(rep).splitlines() if ln.startswith("inputs:"))
    assert line.endswith("... and 31 more (all in --format json)")


def test_a_big_log_without_a_candidate_line_in_a_chunk(tmp_path):
    """The scanning child (logs of 32 MB and more) sends an empty batch for a stretch with no candidate line; the
    progress meter read the batch's last offset and ended the run in 'internal error: IndexError' (a 47 MB log of
    plain lines)."""
    log = tmp_path / "plain.log"
    line = b"just a plain line of text with nothing special in it, number %d\n"
    with open(log, "wb") as f:
        for i in range(560_000):
            f.write(line % i)
    assert log.stat().st_size >= 32 << 20
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(log), "-q"], capture_output=True,
                       timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr


def test_check_ckpt_lists_a_run_folder_once(tmp_path, monkeypatch):
    """Each checkpoint listed its run folder again (stat of every sibling, args.json, the command): check-ckpt of
    1,000 checkpoints took 82 s, quadratic; the run folder is read once per call (12.6 s)."""
    import ckpt_util

    from doctor.ckpt import check_paths
    from doctor.sources import checkpoint as ck
    run = tmp_path / "v0"
    for s in range(1, 21):
        ckpt_util.full_checkpoint(run / f"checkpoint-{s}", optimizer_factor=0)
    calls = []
    real = os.listdir
    monkeypatch.setattr(ck.os, "listdir", lambda p=".": calls.append(str(p)) or real(p))
    rep = check_paths([str(run)])
    assert calls.count(str(run)) <= 2   # finding the checkpoints, and their run's facts (was 1 + one per checkpoint)
    assert len([i for i in rep.inputs if i.kind == "checkpoint"]) == 20


def _tf_record(data: bytes) -> bytes:
    import struct

    from doctor.sources.tfevents import masked_crc
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked_crc(head)) + data + struct.pack("<I", masked_crc(data))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _tf_scalar_event(step: int, tags: list[str]) -> bytes:
    """An Event proto (step, summary of simple_value scalars), encoded by hand as tensorboard writes it."""
    import struct
    values = b""
    for tag in tags:
        t = tag.encode()
        v = b"\x0a" + _varint(len(t)) + t + b"\x15" + struct.pack("<f", 0.5)
        values += b"\x0a" + _varint(len(v)) + v
    return b"\x10" + _varint(step) + b"\x2a" + _varint(len(values)) + values


def test_a_tensorboard_file_adding_tags_at_one_step_is_bounded(tmp_path):
    """20,000 scalar tags logged at one step made one row of them all (333 MiB for a larger file); a row keeps
    MAX_ROW_KEYS scalars and the rest are said to be skipped."""
    import io

    from doctor.sources.tfevents import MAX_ROW_KEYS, rows
    tags = [f"train/metric_{i}" for i in range(20_000)]
    data = b"".join(_tf_record(_tf_scalar_event(1, tags[i:i + 500])) for i in range(0, len(tags), 500))
    skipped: set[str] = set()
    got = list(rows(io.BytesIO(data), skipped))
    assert len(got) == 1 and len(got[0][1]) == MAX_ROW_KEYS   # the step and 4,095 scalars
    assert skipped == {f"tags past {MAX_ROW_KEYS} in one step"}
