"""logging.jsonl read in blocks and fed in batches (issue 19) gives what one row at a time gives.

The reference is the path before batching: every physical line through ``metrics.parse_jsonl`` and
``jsonl_finite``, every Metrics signal through ``Session.emit``. The batched path runs with random block and
part sizes, on every golden case that has a logging.jsonl and on hostile rows (NaN, no step, steps out of order,
ints, nested values, lines that only parse when joined, NUL, a BOM, broken UTF-8, an over-long line, a cut last
line), and must give the same rows and the same report.
"""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.engine import columns
from doctor.engine.session import Session
from doctor.signals import console_row
from doctor.sources import jsonl_layouts, jsonl_rows
from doctor.sources import metrics as msrc
from doctor.sources.logtext import decode, physical_lines

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p.parent for p in (ROOT / "fixtures" / "logs").glob("*/logging.jsonl"))


def _reference_rows(data: bytes) -> list:
    out = []
    for lineno, line in physical_lines(io.BytesIO(data)):
        values = msrc.parse_jsonl(decode(line))
        if values is not None:
            out.append((lineno, values, msrc.jsonl_finite(values)))
    return out


def _block_rows(data: bytes) -> list:
    return [row for block in jsonl_rows.rows(io.BytesIO(data)) for row in block]


def _one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path before batching: rows one line at a time, signals one at a time."""
    def rows(stream):
        for lineno, line in physical_lines(stream):
            values = msrc.parse_jsonl(decode(line))
            if values is not None:
                yield [(lineno, values, msrc.jsonl_finite(values))]

    def emit_many(self, signals):
        for s in signals:
            self.emit(s)

    monkeypatch.setattr(jsonl_rows, "rows", rows)
    monkeypatch.setattr(jsonl_rows, "row_tables", lambda stream: ((block, None) for block in rows(stream)))
    monkeypatch.setattr(Session, "emit_many", emit_many)


def _random_sizes(monkeypatch: pytest.MonkeyPatch, rng: random.Random) -> None:
    monkeypatch.setattr(jsonl_rows, "BLOCK", rng.choice([1, 7, 100, 700, 4096, 65536]) + rng.randrange(300))
    monkeypatch.setattr(jsonl_rows, "PART", rng.choice([1, 2, 3, 17, 256]))
    monkeypatch.setattr(jsonl_layouts, "RUN_MIN", rng.choice([1, 2, jsonl_layouts.RUN_MIN]))   # short runs too


def _report(case: Path) -> str:
    return json.dumps(analyze([str(case)]).to_json(), sort_keys=True, default=str)


def _assert_blocks_same(run_dir: Path, rng: random.Random, tries: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows and the report of run_dir's logging.jsonl, in blocks of random sizes ``tries`` times, are those of
    the one-row-at-a-time path."""
    data = (run_dir / "logging.jsonl").read_bytes()
    with monkeypatch.context() as m:
        _one_by_one(m)
        want = _report(run_dir)
    for _ in range(tries):
        with monkeypatch.context() as m:
            _random_sizes(m, rng)
            assert repr(_block_rows(data)) == repr(_reference_rows(data))
            assert _report(run_dir) == want


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_jsonl_cases_same_report(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_blocks_same(case, random.Random(case.name), 2, monkeypatch)


def _row(gstep: int | None, **over) -> dict:
    row = {"loss": 0.1 * (gstep or 1), "grad_norm": 0.5, "learning_rate": 1e-6, "reward": 0.25, "reward_std": 0.1,
           "rewards/Format/mean": 0.5, "rewards/Format/std": 0.2, "kl": 0.01, "completions/mean_length": 40.0,
           "epoch": 0.1, "elapsed_time": "3m", "remaining_time": "1h 2m"}
    if gstep is not None:
        row["global_step/max_steps"] = f"{gstep}/400"
    row.update(over)
    return row


def _hostile_log(rng: random.Random) -> bytes:
    lines: list[bytes] = []
    for i in range(1, 400):
        kind = rng.random()
        if kind < 0.55:
            row = _row(i)
        elif kind < 0.62:
            row = _row(i, loss=float("nan"), grad_norm=float("inf"))
        elif kind < 0.67:
            row = _row(None, step=i)
        elif kind < 0.70:
            row = _row(None)
        elif kind < 0.74:
            row = _row(rng.randrange(1, 400))   # out of order
        elif kind < 0.77:
            row = _row(i, loss=0, grad_norm=12345678901234567890123, reward="0.5", kl="nan")   # ints, texts
        elif kind < 0.79:
            row = _row(i, extra=[1, 2], nested={"a": 1})
        elif kind < 0.81:
            row = {"eval_loss": 0.5, "eval_reward": 0.1, "epoch": 1.0}
        else:
            row = _row(i, memory=float(i))
        lines.append(json.dumps(row).encode())
        if rng.random() < 0.03:
            lines.append(rng.choice([
                b"", b"   ", b"not json", b'{"loss": 0.5, "grad_norm"', b"[1, 2]", b"{}", b'{"loss": 1e400, "reward": 1}',
                b'{"a": 1', b'"b": 2}', b'{"x": 1},{"y": 2}', b'{"a": [{"b": 1}', b"{}]}",   # lines that join
                b'{"loss": 0.5, "reward": "\xff"}', b'{"loss": 0.5,\x00 "reward": 1}', b'\xef\xbb\xbf{"loss": 1, "reward": 2}',
                b'{"loss": 0.5, "reward": 1}\r', b' {"loss": 0.5, "reward": 1}', b'{"loss": 0.5, "k": "' + b"x" * 70000 + b'"}',
                b'{"loss": NaN, "reward": Infinity, "kl": -Infinity}', b'{"loss": 0.5, "reward": "NaN is a word"}',
            ]))
    data = b"\n".join(lines)
    return data + (b"\n" if rng.random() < 0.5 else b'\n{"loss": 0.5, "rew')   # a cut last line or none


@pytest.mark.parametrize("seed", range(6))
def test_hostile_rows_same_rows_and_report(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    (tmp_path / "logging.jsonl").write_bytes(_hostile_log(rng))
    _assert_blocks_same(tmp_path, rng, 3, monkeypatch)


@pytest.mark.parametrize("max_rows", [8, 20_000])
def test_emit_many_random_batches_same_findings(max_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session.emit_many with random batch sizes leaves the rules as emit() of each signal does (also where the
    series thins itself, with a small MAX_ROWS)."""
    from doctor.checks import _series
    from doctor.signals import Metrics, Where

    monkeypatch.setattr(_series, "MAX_ROWS", max_rows)
    rng = random.Random(7)
    data = _hostile_log(rng)
    rows = _reference_rows(data)

    def findings(batched: bool) -> str:
        s = Session()
        signals = [Metrics(v, Where("logging.jsonl", n), i, "jsonl", f) for i, (n, v, f) in enumerate(rows, 1)]
        if batched:
            at = 0
            while at < len(signals):
                k = rng.choice([1, 2, 5, 64, 1000])
                s.emit_many(signals[at:at + k])
                at += k
        else:
            for sig in signals:
                s.emit(sig)
        series = s.rules[[r.meta.id for r in s.rules].index("GD610")].s
        return repr([(f.rule_id, f.message, f.evidence, f.count) for f in s.finish()]) + repr(
            (series.n, series.stride, series.steps, series.where, series.cols, series.rmean, series.rstd))

    want = findings(False)
    assert "GD620" in want   # the NaN rows were seen
    for _ in range(3):
        assert findings(True) == want


def test_lines_that_join_are_read_alone() -> None:
    """Lines that parse only when joined ([a, b] of '{"a": 1' and '"b": 2}') are never taken for one row."""
    data = b'{"a": 1\n"b": 2}\n{"x": 1},{"y": 2}\n{"loss": 0.5, "reward": 1.0, "k": "v", "t": "w"}\n'
    for block in (1, 10, 1000):
        jsonl_rows.BLOCK, old = block, jsonl_rows.BLOCK
        try:
            assert repr(_block_rows(data)) == repr(_reference_rows(data))
        finally:
            jsonl_rows.BLOCK = old


def _decoder(name: str):
    if name == "json":
        return None
    if name == "msgspec":
        return pytest.importorskip("msgspec.json").decode
    return pytest.importorskip("orjson").loads


@pytest.mark.parametrize("decoder", ["json", "msgspec", "orjson"])
def test_every_decoder_gives_the_rows_of_the_plain_json_path(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a plain install may have neither orjson (the `full` extra) nor msgspec (ms-swift's): the block reader then
    # reads line by line with json, and each fast decoder must give exactly what that gives
    data = b"".join(_hostile_log(random.Random(seed)) for seed in range(3))
    monkeypatch.setattr(msrc, "_fast_loads", None)
    want = repr(_reference_rows(data))
    monkeypatch.setattr(msrc, "_fast_loads", _decoder(decoder))
    for size in (1, 700, 65536):
        monkeypatch.setattr(jsonl_rows, "BLOCK", size)
        assert repr(_block_rows(data)) == want


@pytest.mark.parametrize("seed", range(4))
def test_nan_found_by_its_n_as_by_the_three_byte_search(seed: int) -> None:
    """_find_nan (memchr for the "N", each one checked) gives what bytes.find(b"NaN") gives, also on texts full of
    "N"s (more than NAN_TRIES before a NaN: the three-byte search takes over) and a NaN at either end."""
    rng = random.Random(seed)
    pieces = [b"N", b"Na", b"aN", b"NaN", b"NN", b'{"loss": 0.5}', b"x", b"\n", b"NaNa"]
    for _ in range(200):
        data = b"".join(rng.choices(pieces, weights=[30, 5, 5, 1, 5, 20, 20, 5, 1], k=rng.randrange(0, 300)))
        for at in (0, 1, len(data) // 2, len(data)):
            assert jsonl_rows._find_nan(data, at) == data.find(b"NaN", at)
    many = b"N" * (3 * jsonl_rows.NAN_TRIES) + b"NaN"
    assert jsonl_rows._find_nan(many, 0) == many.find(b"NaN")


@pytest.mark.parametrize("seed", range(4))
def test_columns_taken_when_decoded_are_the_rows_columns(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block read by runs of one layout (``row_tables``) gives the rows ``parse_block`` gives, and its columns
    (every key a row holds, and one none holds), step and summary rows are those ``columns.Block`` reads off the rows'
    dicts; so is its step counter column. Runs of every length are read so (RUN_MIN 1), rows of several key sets of
    one width among them."""
    rng = random.Random(seed)
    monkeypatch.setattr(jsonl_layouts, "RUN_MIN", 1)
    columns.load_numpy()
    lines = _hostile_log(rng).split(b"\n")
    for i in range(0, len(lines), 7):   # a key set of the same width as _row's: cut where the keys change
        lines.insert(i, json.dumps({("other" if k == "kl" else k): v for k, v in _row(i).items()}).encode())
    # then a run of one layout (each block's columns those of one run), a text read as a number in some rows
    lines += [json.dumps(_row(i, reward=f"{i % 3}.5") if i % 50 == 0 else _row(i)).encode() for i in range(1, 900)]
    data = b"\n".join(lines) + b"\n"
    monkeypatch.setattr(jsonl_rows, "BLOCK", rng.choice([700, 4096, 65536]))
    tabled = 0
    want = [b for b in jsonl_rows.rows(io.BytesIO(data))]
    got = list(jsonl_rows.row_tables(io.BytesIO(data)))
    assert repr([b for b, _ in got]) == repr(want)
    for block, table in got:
        if table is None:
            continue
        tabled += 1
        rows = _rows_block([v for _, v, _ in block])
        for key in {k for _, v, _ in block for k in v} | {"absent"}:
            a, b = table.floats(key), rows.floats(key)
            assert (a is None) == (b is None), key
            if a is not None:
                assert a[0].tobytes() == b[0].tobytes() and (a[1] == b[1]).all(), key
        assert (table.steps() == rows.steps()).all() and (table.summary() == rows.summary()).all()
        keys = sorted({k for _, v, _ in block for k in v} | {"absent"})
        some = sorted(rng.sample(range(len(block)), max(1, len(block) // 2)))
        for at in (slice(0, len(block)), columns.load_numpy().array(some)):   # every column at once, as floats gives
            lists = table.lists(keys, at)
            for key in keys:
                col = rows.floats(key)
                assert (key in lists) == (col is not None), key
                if col is not None:
                    want = [x if p else None for x, p in zip(col[0][at].tolist(), col[1][at].tolist())]
                    assert repr(lists[key]) == repr(want), key
        texts = table.texts("global_step/max_steps")
        if texts is not None:
            assert list(texts) == [v.get("global_step/max_steps") for _, v, _ in block]
    assert tabled


def _rows_block(values: list[dict]) -> columns.Block:
    """A Block over these rows' dicts, its columns read off them."""
    return columns.Block([console_row(v, "logging.jsonl", i, i, None, "jsonl") for i, v in enumerate(values)])
