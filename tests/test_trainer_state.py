"""trainer_state.json (transformers' TrainerState: the log_history of trl and ms-swift runs) as a metrics source:
read streaming, found in a run directory (the last checkpoint's, or the run's own), no step counted twice.

Inputs: a real trl 0.29.1 run (fixtures/logs/real-trl-trainer-state-flat, its console log in
fixtures/metric-shapes/real-trl-console.log) and a real ms-swift 4.6.0 run (fixtures/ckpt/real-full-bf16)."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.sources import trainer_state
from doctor.sources.inputs import discover

ROOT = Path(__file__).resolve().parent.parent
TRL = ROOT / "fixtures" / "logs" / "real-trl-trainer-state-flat"
TRL_STATE = TRL / "out" / "checkpoint-3" / "trainer_state.json"
TRL_CONSOLE = ROOT / "fixtures" / "metric-shapes" / "real-trl-console.log"
SWIFT = ROOT / "fixtures" / "ckpt" / "real-full-bf16" / "v0-20261122-205526"
SWIFT_STATE = SWIFT / "checkpoint-4" / "trainer_state.json"


def entry_lines(path: Path) -> list[int]:
    """The line of each entry's opening brace in a file json.dumps(indent=2) wrote (4 spaces, then '{')."""
    return [i for i, line in enumerate(path.read_text().splitlines(), 1) if line == "    {"]


@pytest.mark.parametrize("path", [TRL_STATE, SWIFT_STATE], ids=["trl-0.29.1", "ms-swift-4.6.0"])
@pytest.mark.parametrize("read", [1, 7, 100, 1 << 20])
def test_rows_are_the_log_history_whatever_the_window(path, read, monkeypatch):
    """Every entry, in order, with the values json gives and the line of its brace, however the file is cut into
    reads (1 byte at a time cuts every number and key)."""
    monkeypatch.setattr(trainer_state, "READ", read)
    history = json.loads(path.read_text())["log_history"]
    notes: list[str] = []
    got = list(trainer_state.rows(io.BytesIO(path.read_bytes()), notes))
    assert [v for _, v, _ in got] == [{k: float(x) if isinstance(x, int) else x for k, x in h.items()}
                                      for h in history]
    assert [line for line, _, _ in got] == entry_lines(path)
    assert notes == []


@pytest.mark.parametrize("read", [4096, 1 << 20])
def test_many_small_entries_keep_their_lines(read, monkeypatch):
    """Entries read at C speed while they lie whole in the window, the careful path at each window's end: the same
    rows and lines either way (an entry per line here, so entry i is at line i + 2), odd entries skipped."""
    monkeypatch.setattr(trainer_state, "READ", read)
    entries = [{"loss": i / 7, "step": i} if i % 5 else ([] if i % 2 else 5) for i in range(20_000)]
    text = '{"global_step": 3, "log_history": [\n' + ",\n".join(json.dumps(e) for e in entries) + '\n], "x": 1}'
    got = list(trainer_state.rows(io.BytesIO(text.encode())))
    want = [(i + 2, {"loss": e["loss"], "step": float(e["step"])}) for i, e in enumerate(entries) if isinstance(e, dict)]
    assert [(line, v) for line, v, _ in got] == want


def test_real_trl_values_by_hand():
    (l1, r1, f1), (_, r2, _), (l3, r3, _) = trainer_state.rows(io.BytesIO(TRL_STATE.read_bytes()))
    assert (l1, l3) == (12, 72)
    assert r1["step"] == 1.0 and r3["step"] == 3.0 and f1 is True
    assert r1["grad_norm"] == 0.00109100341796875 and r2["completions/clipped_ratio"] == 0.75
    assert r3["reward_std"] == 0.0 and r3["frac_reward_zero_std"] == 1.0


def test_cut_file_gives_the_entries_before_the_cut():
    data = TRL_STATE.read_bytes()
    cut = data[:data.index(b'"step": 3')]   # inside the third entry
    notes: list[str] = []
    got = list(trainer_state.rows(io.BytesIO(cut), notes))
    assert [r["step"] for _, r, _ in got] == [1.0, 2.0]
    assert len(notes) == 1 and notes[0].startswith("cut or broken at line")


def test_an_entry_over_the_cap_ends_the_reading(monkeypatch):
    monkeypatch.setattr(trainer_state, "MAX_ENTRY", 400)   # an entry of the trl file is ~1 KB
    monkeypatch.setattr(trainer_state, "READ", 64)
    notes: list[str] = []
    assert list(trainer_state.rows(io.BytesIO(TRL_STATE.read_bytes()), notes)) == []
    assert len(notes) == 1 and "an entry larger than" in notes[0]


def test_nan_and_no_history():
    text = '{"global_step": 2, "log_history": [{"loss": NaN, "grad_norm": Infinity, "step": 2}], "max_steps": 4}'
    ((line, row, finite),) = trainer_state.rows(io.BytesIO(text.encode()))
    assert line == 1 and row["step"] == 2.0 and row["loss"] != row["loss"] and finite is None
    notes: list[str] = []
    assert list(trainer_state.rows(io.BytesIO(b'{"global_step": 0, "max_steps": 4}'), notes)) == []
    assert notes == ["no log_history in it: no metric rows"]
    assert list(trainer_state.rows(io.BytesIO(b"not json at all"), notes)) == []


def test_only_the_last_checkpoint_is_an_input(tmp_path):
    run = tmp_path / "out"
    shutil.copytree(TRL / "out", run)
    kinds = [(i.display, i.kind) for i in discover([str(run)])]
    assert (f"{run}/checkpoint-3/trainer_state.json", "trainer-state") in kinds
    assert not any(d.endswith("checkpoint-2/trainer_state.json") for d, _ in kinds)
    # the run's own trainer_state.json (trainer.save_state()) is the one read
    shutil.copyfile(TRL_STATE, run / "trainer_state.json")
    states = [i.display for i in discover([str(run)]) if i.kind == "trainer-state"]
    assert states == [f"{run}/trainer_state.json"]


def test_trl_run_dir_and_file_give_flat_rewards_in_three_steps():
    for path in (TRL, TRL_STATE):
        rep = analyze([str(path)])
        f = rep.findings[0]
        assert (f.rule_id, f.severity.name, f.count) == ("GD610", "error", 3)
        assert "in all 3 logged steps (steps 1-3)" in f.message
        assert f.evidence[0].path.endswith("checkpoint-3/trainer_state.json") and f.evidence[0].line == 12


def test_console_dicts_without_steps_leave_the_trainer_state_unread(tmp_path):
    """trl prints the same rows without a step number: the trainer_state.json beside them is not read (3 steps, not
    6), and the report says why."""
    run = tmp_path / "run"
    shutil.copytree(TRL / "out", run)
    shutil.copyfile(TRL_CONSOLE, run / "console.log")
    rep = analyze([str(run)])
    f = next(f for f in rep.findings if f.rule_id == "GD610")
    assert f.count == 3 and "in all 3 logged steps" in f.message
    note = next(i.note for i in rep.inputs if i.kind == "trainer-state")
    assert note.startswith("not read: the 3 metric row(s) of the console log")


def test_swift_run_steps_in_logging_jsonl_are_not_counted_twice(tmp_path):
    """ms-swift writes the same steps to logging.jsonl: every row of checkpoint-4/trainer_state.json is left out, and
    the findings are those of the run without it."""
    with_state = tmp_path / "with"
    shutil.copytree(SWIFT, with_state, symlinks=True)
    without = tmp_path / "without"
    shutil.copytree(SWIFT, without, symlinks=True)
    for ck in ("checkpoint-2", "checkpoint-4"):
        (without / ck / "trainer_state.json").unlink()
    a, b = analyze([str(with_state)], series=True), analyze([str(without)], series=True)
    note = next(i.note for i in a.inputs if i.kind == "trainer-state")
    assert note == "4 row(s) of steps another source already gave, not counted twice"
    assert a.series["steps"]["rows"] == b.series["steps"]["rows"] == 4
    assert [(f.rule_id, f.count) for f in a.findings] == [(f.rule_id, f.count) for f in b.findings]
    metric = [f for f in a.findings if not f.rule_id.startswith("GD8")]   # checkpoint sizes differ by the files
    assert [f.message for f in metric] == [f.message.replace(str(without), str(with_state)) for f in b.findings
                                           if not f.rule_id.startswith("GD8")]
