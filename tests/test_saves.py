"""Checkpoint save lines among console metric rows (doctor/sources/saves.py): a block of rows goes on over such a line,
and every reader ends where it ends when the line ends the block (the rows emitted before it) and where the
line-by-line path leaves it, on hostile rows and on save lines of every shape (glued to a bar, alone, with a word or a
character that some reader acts on)."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import line_and_scan
from test_columns_equivalence import BIG, _bar, _hostile_rows, _snapshot, snapshotting_session

from doctor.analyze import analyze
from doctor.engine import Session
from doctor.gate import engine
from doctor.sources import console_rows, saves, scan, step_runs
from doctor.sources.logtext import EVIDENCE_MAX, LineReader

pytest.importorskip("numpy")
needs_hs = pytest.mark.skipif(engine() != "hyperscan", reason="the save short cut runs with Hyperscan only")

SAVE = "[INFO:swift] Saving model checkpoint to "
TAKEN = [SAVE + "out/checkpoint-7", _bar(7, 9) + SAVE + "<work>/runs/v0-20261122-203249/checkpoint-7",
         _bar(0, 9) + SAVE + "/o/x.y_z+1-2/checkpoint-0\r"]
REFUSED = [SAVE + "out/vllm/checkpoint-7", SAVE + "out/VLLM/checkpoint-7", SAVE + "/swift/out/checkpoint-7",
           SAVE + "out/Error/checkpoint-7", SAVE + "out/__version__/c", SAVE + "out dir/checkpoint-7",
           SAVE + "out/(x)/checkpoint-7", SAVE + "out/a=b/checkpoint-7", SAVE + "out/Traceback/c",
           "[rank0]: " + SAVE + "out/checkpoint-7", _bar(7, 9, "Val") + SAVE + "out/checkpoint-7",
           _bar(7, 9) + "[INFO:swift] x " + SAVE + "o", SAVE + "out/checkpoint-7 and more", SAVE + "out/'loss'/c",
           SAVE + "out/checkpoint-7\x1b[0m", SAVE + "o/last_model_checkpoint:/c", SAVE]


@needs_hs
def test_on_with_the_catalog() -> None:
    assert saves.SaveLines.of(Session()) is not None


@needs_hs
@pytest.mark.parametrize("line", TAKEN)
def test_taken(line: str) -> None:
    assert saves.SaveLines.of(Session()).among_rows(line.encode())   # type: ignore[union-attr]


@needs_hs
@pytest.mark.parametrize("line", REFUSED)
def test_refused(line: str) -> None:
    assert not saves.SaveLines.of(Session()).among_rows(line.encode())   # type: ignore[union-attr]


@needs_hs
@pytest.mark.parametrize("line", TAKEN + [_bar(3, 9) + SAVE + "o/" + "x" * EVIDENCE_MAX, SAVE + "o/" + "y" * EVIDENCE_MAX,
                                  "Train: 100%|██████████| 9/9 [00:31<00:00,  5.87it/s]" + SAVE + "a/b"])
def test_in_run_as_the_line_reader(line: str) -> None:
    """A save line a run reads gives the rules and the state the message the line reader gives, after its bar."""
    s = Session()
    got = saves.SaveLines.of(s).in_run(line.encode())   # type: ignore[union-attr]
    if line.endswith("\r"):
        assert got is None   # two messages and an empty one: fed as before
        return
    assert got is not None
    want = LineReader("log", [10]).line(7, line.encode())
    held: list[Any] = []
    rules = saves.SaveLines.feed_in_run(s, lambda ln, r: held.append((ln, r)), got[1], "log", 7, 10 + len(want), None)
    assert [ln.text for ln in want] == ([got[0].decode()] if got[0] else []) + [got[1]]
    assert held and all(ln == want[-1] for ln, _ in held)
    assert list(s.state.saves) == [line.rsplit(" ", 1)[-1]]
    assert {type(r).__name__ for r in rules} == {type(r).__name__ for _, r in held} | {"ForcedLora"}


def _console_text(rows: list[dict], rng: random.Random) -> str:
    """The rows printed between bars, with save lines of every shape among them (taken or not), now and then a line
    fed whole, an args dump and a traceback with a save line inside (sticky: fed whole)."""
    out = ["[INFO:swift] args: RLHFArguments(", "    output_dir='out')", "[INFO:swift] model_parameter_info: x"]
    for i, row in enumerate(rows, 1):
        for _ in range(rng.choice([0, 1, 1, 2])):
            out.append(_bar(rng.choice([i, i - 1, 0, i + 40]), len(rows)))
        out.append(repr({k: str(v) if not isinstance(v, str) else v for k, v in row.items()}) if rng.random() < 0.5
                   else repr(row))
        r = rng.random()
        if r < 0.15:
            out.append(rng.choice(TAKEN).replace("checkpoint-7", f"checkpoint-{i}"))
        elif r < 0.2:
            out.append(_bar(i, len(rows)) + SAVE + f"out/checkpoint-{i}")
        elif r < 0.23:
            out.append(rng.choice(REFUSED))
        elif r < 0.24:
            out.append("[WARNING:swift] something else")
        elif r < 0.245:
            out += ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', SAVE + "in/traceback",
                    "ValueError: x"]
    out += ["[INFO:swift] End time of running main: 1"]
    return "\n".join(out) + "\n"


def _scan_state(path: Path, monkeypatch: pytest.MonkeyPatch, on: bool, rows_max: int, rows_min: int) -> list[Any]:
    """The state before each line fed whole but on a save line's physical line, and after the log; the findings."""
    with monkeypatch.context() as m:
        m.setattr(saves, "ON", on)
        m.setattr(console_rows, "ROWS_MAX", rows_max)
        m.setattr(console_rows, "ROWS_MIN", rows_min)
        s, tracker, seen = snapshotting_session(path, m)
        among = s.feed_line_among

        def count_among(line: Any, hold: Any) -> None:
            AMONG[0] += 1
            among(line, hold)

        m.setattr(s, "feed_line_among", count_among)
        take = step_runs.StepRuns.take

        def count_in_run(self: Any, *args: Any) -> int:
            got = take(self, *args)
            IN_RUN[0] += self.saves_read
            return got

        m.setattr(step_runs.StepRuns, "take", count_in_run)
        with path.open("rb") as f:
            stats = scan.scan_file(s, str(path), f, [0], fork=False)
        found = [(f.rule_id, f.message, f.evidence, f.count, f.severity) for f in s.finish()]
        return [stats.lineno, s.state.metrics_steps, list(s.state.saves), s.state.exceptions, seen,
                _snapshot(s, tracker), repr(found)]


AMONG = [0]   # lines fed among rows (Session.feed_line_among) so far
IN_RUN = [0]  # save lines read inside a run of step lines so far


@pytest.mark.parametrize("seed", range(4))
def test_hostile_rows_same_state_with_saves_among_them(seed: int, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    rows = _hostile_rows(rng, 300)
    for i in range(40, 300, 53):
        rows[i]["grad_norm"] = BIG
    log = tmp_path / "console.log"
    log.write_text(_console_text(rows, rng))
    AMONG[0] = 0
    want = _scan_state(log, monkeypatch, False, 256, 16)
    assert want[1] > 200 and AMONG[0] == 0
    IN_RUN[0] = 0
    for size, least in ((256, 16), (256, 1), (3, 1), (40, 16)):
        assert _scan_state(log, monkeypatch, True, size, least) == want
    assert AMONG[0] + IN_RUN[0] > 40   # the save lines taken, glued ones (two lines each) among them
    assert IN_RUN[0] > 20   # most of them inside a run of step lines (sources/step_runs.py)
    with monkeypatch.context() as m:   # and with the runs ending at each save line, as before they read them
        m.setattr(saves, "IN_RUNS", False)
        assert _scan_state(log, monkeypatch, True, 256, 16) == want
    a, b, ca, cb, _ = line_and_scan(log.read_bytes(), tmp_path)   # and the line-by-line path
    assert ca == cb
    assert [(f.rule_id, f.message, f.evidence) for f in a.finish()] == [(f.rule_id, f.message, f.evidence)
                                                                        for f in b.finish()]


def _report(path: Path) -> str:
    return json.dumps(analyze([str(path)]).to_json(), sort_keys=True, default=str)


def test_dense_log_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's DENSE mix (real bars, rows and glued save lines of the fixtures' healthy runs), 3 MB: the same
    report with the short cut on and off."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_real_mix
    log = tmp_path / "dense.log"
    bench_real_mix.build_dense(log, 3_000_000)
    assert b"s/it][INFO:swift] Saving model checkpoint to" in log.read_bytes()
    with monkeypatch.context() as m:
        m.setattr(saves, "ON", False)
        want = _report(log)
    assert _report(log) == want
