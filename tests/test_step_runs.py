"""Runs of step lines read at once (doctor/sources/step_runs.py): on dense console logs with hostile bars and rows
among the plain ones (every kind of line a run must refuse), the state before every line fed whole, the state at the
end and the findings are those of the per-line short cuts, in this process and through the scanning child, with
runs cut by small chunks and by small blocks of rows."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conftest import line_and_scan
from test_columns_equivalence import _bar, _snapshot, snapshotting_session

from doctor.engine import Session
from doctor.gate import engine
from doctor.sources import bars, console_rows, scan, step_runs

pytest.importorskip("numpy")
needs_hs = pytest.mark.skipif(engine() != "hyperscan", reason="runs are read at once with Hyperscan only")

ROW = {"loss": "0.1", "grad_norm": "0.5", "learning_rate": "1e-06", "reward": "0.25", "reward_std": "0.1",
       "kl": "0", "epoch": "0.5", "global_step/max_steps": "1/9", "elapsed_time": "3s"}
# rows a run refuses (each sends its run line by line), and rows it takes
ODD_ROWS = [
    lambda r: {**r, "loss": "nan"}, lambda r: {**r, "loss": "inf"}, lambda r: {**r, "kl": "-Infinity"},
    lambda r: {**r, "note": "llm"}, lambda r: {**r, "note": "vLLM"}, lambda r: {**r, "note": 'a"b'},
    lambda r: {**r, "note": "a/s]"}, lambda r: {**r, "note": "x/it]"}, lambda r: {**r, "note": "\x07"},
    lambda r: {**r, "note": "é"}, lambda r: {**r, ": ": "1"}, lambda r: {**r, "note": "Traceback"},
    lambda r: {**r, "note": "critic/score/mean:"}, lambda r: {**r, "note": "elapsed time per iteration"},
    lambda r: {"train/loss": "0.1", "train/grad_norm": "0.2", "train/reward": "1"},   # aliases
    lambda r: {"loss": "0.1", "foo": "1"},   # one trainer key: no row
    lambda r: {"grad_norm": "0.1", "epoch": "1"},   # no key that is a metric literal but grad_norm
    lambda r: {"eval_loss": "0.5", "eval_reward": "0.1", "epoch": "1"},
    lambda r: {k: v for k, v in r.items() if k != "kl"},   # another layout
    lambda r: {**r, "x" * 121: "1"}, lambda r: {**r, "": "1"}, lambda r: {**r, "note": ""},
    lambda r: {**r, "note": "a\\b"}, lambda r: {**r, "note": "%|"}, lambda r: {**r, "note": "Train:"},
    lambda r: {**r, "loss": 0.1},   # a number (transformers 4)
    lambda r: {**r, "global_step/max_steps": "x/9"},
]
ODD_LINES = [
    "{'loss': '0.1', 'grad_norm': '0.5'} trailing", "{'loss': '0.1', 'grad_norm': '0.5'}  ", "[rank0]: {'loss': '0.1'}",
    "{'loss': '0.1','grad_norm': '0.5'}", "plain text", "[INFO:swift] Saving model checkpoint to out/checkpoint-3",
    _bar(3, 9) + "[INFO:swift] Saving model checkpoint to out/checkpoint-3", "[WARNING:swift] something else",
    _bar(3, 9, "Processed prompts"), _bar(3, 9, "Val"), _bar(3, 9, "Loading weights"), _bar(3, 9, "Map"),
    _bar(3, 9) + "\r" + _bar(4, 9), _bar(3, 9) + " more", _bar(3, 9, "Thread 1 (idle)"), _bar(3, 9, "run sh"),
    "Train:  50%|#####     | 3/9 [00:01<00:01,  2.00it/s]", "Train: 50%|| 3/9 [00:01<00:01, ? examples/s]",
    "{'loss': '0.1', 'grad_norm': '0.5', 'reward': '" + "9" * 70000 + "'}", "x" * 70000 + " %| " + "]",
]


def _text(rng: random.Random, steps: int) -> str:
    """A dense log: per step bars and a printed row, now and then an odd row or line, a traceback (sticky), an args
    dump, bars of many descriptions (past MAX_KEYS when it is patched low)."""
    out = ["[INFO:swift] args: RLHFArguments(", "    output_dir='out')", "***** Running training *****"]
    for i in range(1, steps + 1):
        for _ in range(rng.choice([0, 1, 1, 1, 1, 2, 3])):
            k = rng.choice([i, i, i, i - 1, 0, i + 40, i // 2])
            desc = rng.choice(["Train"] * 20 + ["Val", "Map", f"D{i % 7}"])
            bar = _bar(k, rng.choice([steps, steps, 0, 9]), desc)
            out.append(bar + ("\r" if rng.random() < 0.3 else ""))
        row = dict(ROW, **{"global_step/max_steps": f"{rng.choice([i, i, i, i - 1, 0])}/{steps}",
                           "loss": rng.choice(["0.1", "0", "2e-08", "-0.5", "1", "0.25"]),
                           "elapsed_time": f"{i}s"})
        if i > 10 and rng.random() < 0.04:
            row = rng.choice(ODD_ROWS)(row)
        out.append(repr(row))
        r = rng.random()
        if i > 10 and r < 0.03:
            out.append(rng.choice(ODD_LINES))
        elif r < 0.035:
            out += ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', repr(ROW),
                    _bar(i, steps), "ValueError: x"]
    out += ["[INFO:swift] End time of running main: 1"]
    return "\n".join(out) + "\n"


def _state(path: Path, monkeypatch: pytest.MonkeyPatch, on: bool, **opts: Any) -> list[Any]:
    """The state before each line fed whole, after the log, and the findings."""
    with monkeypatch.context() as m:
        m.setattr(step_runs, "ON", on)
        s, tracker, seen = snapshotting_session(path, m)
        counter = [0]
        with path.open("rb") as f:
            stats = scan.scan_file(s, str(path), f, counter, **opts)
        found = [(f.rule_id, f.message, f.evidence, f.count, f.severity) for f in s.finish()]
        return [stats.lineno, counter, s.state.metrics_steps, seen, _snapshot(s, tracker), repr(found)]


@needs_hs
def test_on_with_the_catalog() -> None:
    assert step_runs.StepRuns.of(bars.BarStretch(Session())) is not None


@needs_hs
@pytest.mark.parametrize("seed", range(6))
def test_dense_hostile_runs_same_state(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    log = tmp_path / "dense.log"
    log.write_text(_text(rng, 500))
    if seed % 3 == 1:
        monkeypatch.setattr(bars, "MAX_KEYS", 4)   # bars past the keys' bound are fed whole
    if seed % 2:
        monkeypatch.setattr(step_runs, "RUN_MAX", 5)
    taken = [0]
    take = step_runs.StepRuns.take

    def counted(self: Any, lines: list[bytes], *a: Any) -> bool:
        got = take(self, lines, *a)
        taken[0] += got
        return got

    monkeypatch.setattr(step_runs.StepRuns, "take", counted)
    want = _state(log, monkeypatch, False, fork=False)
    assert want[2] > 250 and taken[0] == 0
    for opts, rows_max in (({"fork": False}, 256), ({"fork": False, "chunk": 4096}, 256), ({"fork": False}, 3),
                           ({"fork": True}, 256), ({"fork": True, "chunk": 8192}, 7)):
        with monkeypatch.context() as m:
            m.setattr(console_rows, "ROWS_MAX", rows_max)
            assert _state(log, monkeypatch, True, **opts) == want, (opts, rows_max)
    assert taken[0] > 40
    a, b, ca, cb, _ = line_and_scan(log.read_bytes(), tmp_path)   # and the line-by-line path
    assert ca == cb
    assert [(f.rule_id, f.message, f.evidence) for f in a.finish()] == [(f.rule_id, f.message, f.evidence)
                                                                        for f in b.finish()]


@needs_hs
@pytest.mark.parametrize("line", [ODD_LINES[i] for i in (0, 1, 2, 3, 8, 12, 13, 14, 15)])
def test_refused_lines(line: str, tmp_path: Path) -> None:
    """A run is read up to such a line (it is not what the per-line short cuts take as a step line)."""
    s = Session()
    runs = step_runs.StepRuns.of(bars.BarStretch(s))
    assert runs is not None
    good = [_bar(1, 9).encode(), repr(ROW).encode()]
    assert runs.take(good * 2, 1, 1, "x")
    assert runs.take(good + [line.encode()] + good, 10, 10, "x") == 2   # the lines before it


@needs_hs
@pytest.mark.parametrize("line", ["{'loss': 0.1, 'grad_norm': 0.5, 'global_step/max_steps': '3/9', 'elapsed_time': '7s'}",
                                  "{'loss': '0.1', 'grad_norm': '0.5'}\r", "{}", "{'loss': '0.1', 'grad_norm': 0.5}",
                                  "{'loss': '0.1'; 'grad_norm': '0.5'}", "{'loss': '0.1', 'grad_norm': '0.5'} "])
def test_no_layout_asked_of_a_row_no_layout_reads(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row whose keys and values are not all quoted (transformers 4 prints numbers bare) is not read by a run, as
    before, without a layout asked of its pieces: those hold its values (a step counter new on every row), and each
    layout asked is a pattern compiled (~1 ms a row of ms-swift 3's logs)."""
    s = Session()
    runs = step_runs.StepRuns.of(bars.BarStretch(s))
    assert runs is not None
    asked: list[Any] = []
    monkeypatch.setattr(runs, "_layout", lambda printed: asked.append(printed))
    assert runs.take([line.encode(), _bar(1, 9).encode()], 1, 1, "x") == 0
    assert asked == []


@needs_hs
@pytest.mark.parametrize("make", ODD_ROWS)
def test_odd_rows_same_as_the_short_cut(make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [dict(ROW, **{"global_step/max_steps": f"{i}/40"}) for i in range(1, 41)]
    rows[20] = make(rows[20])
    log = tmp_path / "odd.log"
    log.write_text("\n".join(f"{_bar(i, 40)}\n{row!r}" for i, row in enumerate(rows, 1)) + "\n")
    assert _state(log, monkeypatch, True, fork=False) == _state(log, monkeypatch, False, fork=False)


@needs_hs
def test_dense_log_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's DENSE mix (real bars, rows and glued save lines of the fixtures' healthy runs), 3 MB: the same
    report with runs read at once (and their blocks' columns handed over) and line by line."""
    import json
    import sys

    from doctor.analyze import analyze
    from doctor.engine import columns
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_real_mix
    log = tmp_path / "dense.log"
    bench_real_mix.build_dense(log, 3_000_000)
    seeded = [0]
    seed = columns.Block.seed

    def counted(self: Any, cols: Any) -> None:
        seeded[0] += 1
        seed(self, cols)

    monkeypatch.setattr(columns.Block, "seed", counted)
    report = lambda: json.dumps(analyze([str(log)]).to_json(), sort_keys=True, default=str)  # noqa: E731
    with monkeypatch.context() as m:
        m.setattr(step_runs, "ON", False)
        want = report()
    assert seeded[0] == 0
    assert report() == want
    assert seeded[0] > 10
