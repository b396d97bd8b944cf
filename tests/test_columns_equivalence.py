"""The column path (doctor/engine/columns.py: a block of metric rows read as numpy columns) gives what the row path
gives (issue 32 point 4): the same report on every fixture run that has metric rows, and the same run facts, vitals
and findings on hostile rows (NaN, inf, 400-digit numbers, nulls, texts, missing keys, keys changing mid-run, a
summary row mid-block). Kept until the row path of these consumers is deleted.
"""
from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from doctor.analyze import analyze
from doctor.engine import columns
from doctor.engine.session import Session
from doctor.signals import Metrics, Where
from doctor.sources import jsonl_rows
from doctor.vitals import Tracker

np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parent.parent
# every fixture run whose metric rows come in blocks (a logging.jsonl; a table pasted at a log's end, in the goldens)
RUNS = sorted({p.parent for p in (ROOT / "fixtures").glob("**/logging.jsonl")})


def _report(case: Path) -> str:
    return json.dumps(analyze([str(case)]).to_json(), sort_keys=True, default=str)


@pytest.mark.parametrize("case", RUNS, ids=[str(c.relative_to(ROOT / "fixtures")) for c in RUNS])
def test_fixture_runs_same_report(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(columns, "ENABLED", False)
        want = _report(case)
    assert _report(case) == want


def test_fixture_runs_were_found() -> None:
    assert len(RUNS) >= 20


BIG = 7 * 10 ** 399   # a 400-digit integer: beyond float64


def _hostile_rows(rng: random.Random, n: int = 600) -> list[dict]:
    """Rows of a run whose keys change mid-run (ms-swift 3.2 rewards/<Name> to 3.3 rewards/<Name>/mean, trl's train/
    prefix, a key that stops being logged), with every kind of value a decoder can give for a metric."""
    # no 400-digit integer here: every source turns one into inf before a Metrics signal holds it (the file test
    # below writes them into a logging.jsonl)
    odd = [float("nan"), float("inf"), float("-inf"), None, "0.5", "nan", "x", True, 0, 3, 0.0, 1e-7, 1e-6, -1e-6, -0.0]
    rows: list[dict] = []
    for i in range(1, n + 1):
        era = i * 4 // n   # 0..3: the key layout of this stretch of the run
        row: dict = {"loss": 0.01 * i, "grad_norm": rng.choice([0.0, 0.5, 1e-8]), "learning_rate": 1e-6}
        if era == 0:
            row.update({"reward": rng.random(), "reward_std": rng.choice([0.0, 0.1]), "rewards/Acc": 0.5})
        elif era == 1:
            row.update({"reward": 0.0, "reward_std": 0.0, "rewards/Acc/mean": 0.0, "rewards/Acc/std": 0.0,
                        "frac_reward_zero_std": 1.0, "completions/clipped_ratio": rng.random()})
            if rng.random() < 0.1:   # one function named twice (its 3.2 and 3.3 keys)
                row["rewards/Acc"] = rng.random()
            if rng.random() < 0.1:   # a function that comes and goes
                row[f"rewards/F{i % 4}/mean"] = rng.random()
        elif era == 2:
            row = {"train/loss": 0.1, "train/grad_norm": 0.2, "train/reward": rng.random(), "step": float(i),
                   "response_clip_ratio": 0.9, "kl": rng.random()}
        else:
            row.update({"kl": 0.02, "frac_reward_zero_std": rng.random(), "reward_std": rng.choice([0.0, 0.2]),
                        "clip_ratio/region_mean": rng.choice([0.05, 0.2, 0.5])})
            del row["loss"]
        if era != 2:   # now and then a step logged again, or out of order (a resumed run)
            k = i if rng.random() < 0.9 else rng.choice([i - 1, i // 2, max(1, i - 50)])
            row["global_step/max_steps"] = f"{k}/{n if rng.random() < 0.95 else 0}"
        if rng.random() < 0.12:   # an odd value under a metric key
            row[rng.choice(["loss", "grad_norm", "reward", "reward_std", "kl", "frac_reward_zero_std", "clip_ratio/region_mean",
                            "completions/clipped_ratio", "train/reward", "rewards/Acc/mean"])] = rng.choice(odd)
        if rng.random() < 0.004:   # a step counter the column does not read (the rows are read one by one)
            row["global_step/max_steps"] = rng.choice(["1/2/3", " 5/10", "\u0663/10", "5/", "/5", "0/0", "x/y", 7.0,
                                                       "99999999999999999999/1", f"{i}/{n}  ", None])
        if rng.random() < 0.05:   # a key missing
            row.pop(rng.choice(list(row)), None)
        rows.append(row)
        if rng.random() < 0.02:
            rows.append(rng.choice([
                {"eval_loss": 0.5, "eval_reward": 0.1, "epoch": 1.0},
                {"train_runtime": 10.0, "loss": 0.3},
                {"last_model_checkpoint": f"out/checkpoint-{i}", "loss": 0.1},
                {"model_parameter_info": "x", "reward": 1.0},
            ]))
    for i, bad in ((30, float("nan")), (31, float("inf")), (32, float("-inf"))):   # whatever the draw, some
        rows[i]["grad_norm"] = bad
    if rng.random() < 0.5:   # a loss broken before any grad_norm (the first broken step is the loss's)
        rows[rng.randrange(2, 30)]["loss"] = rng.choice([float("nan"), float("inf")])
    return rows


def _finite(v: dict) -> bool:
    return all(not isinstance(x, float) or x - x == 0 for x in v.values())


def snapshotting_session(path: Path, m: pytest.MonkeyPatch) -> tuple[Session, Tracker, list[str]]:
    """A session whose feed_line records the state (``_snapshot``) before each line fed whole, but not on a save line's
    physical line: a save line is fed whole or among the rows by whether a row waits before it (tests/test_saves.py),
    and so is the bar glued before it. Returns the session, its tracker and the list of snapshots."""
    s = Session()
    tracker = Tracker()
    s.observers.append(tracker)
    seen: list[str] = []
    feed_line = s.feed_line
    save_lines = {n for n, text in enumerate(path.read_bytes().split(b"\n"), 1) if b"Saving model" in text}

    def snap_and_feed(line: Any) -> None:
        if line.where.line not in save_lines:
            seen.append(_snapshot(s, tracker))
        feed_line(line)

    m.setattr(s, "feed_line", snap_and_feed)
    return s, tracker, seen


def _snapshot(s: Session, tracker: Tracker) -> str:
    st = s.state
    # the tracker's dicts compared as sorted items: their order is not read (vitals() walks vitals.KEYS)
    seen = {k: sorted(v.items()) if isinstance(v, dict) else v for k, v in vars(tracker).items()}
    hang = next(r.p for r in s.rules if type(getattr(r, "p", None)).__name__ == "_Progress")
    where = lambda line: line and (line.where, line.seq)  # noqa: E731
    cadence = (hang.max_step, hang.total_steps, hang.last_metrics, hang.metrics_seq, where(hang.step_line), hang.step_seq,
               sorted(hang.phase_seq.items()), sorted((k, where(v)) for k, v in hang.phase_line.items()))
    nan = next(r for r in s.rules if r.meta.id == "GD620")
    seq = lambda m: m and m.seq  # noqa: E731
    nans = (nan.rows, nan.n_bad, nan.n_bad_gn_after, nan.n_metric_only, seq(nan.first), nan.bad_keys, seq(nan.prev),
            nan.min_gn and (nan.min_gn[0], nan.min_gn[1].seq), seq(nan.last), seq(nan.first_seen))
    series = s.rules[[r.meta.id for r in s.rules].index("GD610")].s
    kept = (series.n, series.stride, series.fed, series.store.kept, series.steps, series.where, series.cols,
            series.rmean, series.rstd, sorted(series.store.dropped_rewards))
    # the rules that read bars and no rows (GD621's last rate, GD310's last training step)
    by_name = {type(r).__name__: r for r in s.rules}
    bars = (by_name["ProbabilityTensorNaN"].progress, by_name["HostOomKilled"].training)
    return repr((sorted((k, vars(f)) for k, f in st.metric_facts.items()), st.metrics_steps, st.ended, seen, cadence,
                 nans, kept, sorted(st.broken_at.items()), bars))


def _state(rows: list[dict], sizes: list[int], on: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run facts, vitals and hang cadence after each block of rows fed in blocks of these sizes, and the
    findings at the end, columns on or off."""
    with monkeypatch.context() as m:
        m.setattr(columns, "ENABLED", on)
        s = Session()
        tracker = Tracker()
        s.observers.append(tracker)
        # a console row now and then: the hang rules take the latest console row's place as the training phase
        signals = [Metrics(v, Where("logging.jsonl", i), i, "console" if i % 7 == 0 else "jsonl", _finite(v))
                   for i, v in enumerate(rows, 1)]
        out = []
        at, k = 0, 0
        while at < len(signals):
            size = sizes[k % len(sizes)]
            s.emit_many(signals[at:at + size])
            at, k = at + size, k + 1
            out.append(_snapshot(s, tracker))
        out.append(repr([(f.rule_id, f.message, f.evidence, f.count, f.severity) for f in s.finish()]))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_hostile_rows_same_facts_vitals_findings(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    if seed % 3 == 2:   # reward functions past the series' bound are dropped
        from doctor.checks import _series as series_mod
        monkeypatch.setattr(series_mod, "MAX_REWARD_FUNCS", 2)
    if seed % 2:   # a series that thins itself within the run (every other row dropped past MAX_ROWS)
        from doctor.checks import _series
        monkeypatch.setattr(_series, "MAX_ROWS", 16)
    rows = _hostile_rows(rng)
    sizes = [rng.choice([1, 2, 7, 64, 256, 1000]) for _ in range(5)]
    want = _state(rows, sizes, False, monkeypatch)
    assert re.search(r"'grad_norm', \{'logged': \d+, 'zero': \d+, 'nonfinite': [1-9]", want[-2])   # they were counted
    assert _state(rows, sizes, True, monkeypatch) == want


def test_hostile_file_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rows written as a logging.jsonl (the decoders' own NaN, Infinity and big integers) give one report."""
    rows = _hostile_rows(random.Random(11), 2000)
    for i in range(100, 2000, 97):
        rows[i]["grad_norm" if i % 2 else "reward"] = BIG if i % 3 else -BIG
    text = "\n".join(json.dumps(r) for r in rows) + "\n"
    assert str(BIG) in text
    (tmp_path / "logging.jsonl").write_text(text)
    assert any(len(v) for v in jsonl_rows.rows(io.BytesIO(text.encode())))
    with monkeypatch.context() as m:
        m.setattr(columns, "ENABLED", False)
        want = _report(tmp_path)
    assert _report(tmp_path) == want


def test_block_columns_tell_a_logged_nan_from_a_missing_key() -> None:
    sig = [Metrics(v, Where("x", i), i, "jsonl", True) for i, v in enumerate(
        [{"loss": float("nan")}, {"reward": 1.0}, {"loss": 2.0}])]
    block = columns.Block.of(sig)
    assert block is not None
    got = block.floats("loss")
    assert got is not None
    vals, present = got
    assert present.tolist() == [True, False, True]
    assert np.isnan(vals[0]) and np.isnan(vals[1]) and vals[2] == 2.0


@pytest.mark.parametrize("odd", [None, "0.5", 1, True, BIG])
def test_block_column_of_anything_but_floats_is_left_to_the_rows(odd) -> None:
    sig = [Metrics(v, Where("x", i), i, "jsonl", True) for i, v in enumerate([{"loss": 1.0}, {"loss": odd}])]
    block = columns.Block.of(sig)
    assert block is not None and block.floats("loss") is None


@pytest.mark.parametrize("seed", range(4))
def test_flat_groups_and_longest_run_are_the_row_loops(seed: int) -> None:
    """checks/_columns.py's flat groups and longest run against RewardView's row loop and _series.longest_streak, on
    columns with NaN, inf, the thresholds themselves and missing rows."""
    from doctor.checks import _columns
    from doctor.checks._series import EPS_STD, longest_streak

    rng = random.Random(seed)
    pick = [None, float("nan"), float("inf"), float("-inf"), 0.0, -0.0, EPS_STD, 2e-6, 0.5, 0.999, 0.998, 1.0]
    n = rng.choice([0, 1, 5, 300])
    rstd = [rng.choice(pick) for _ in range(n)]
    frac = [rng.choice(pick) for _ in range(n)]
    want = []
    for r, f in zip(rstd, frac):
        if r is not None and r == r:
            want.append(r <= EPS_STD)
        elif f is not None and f == f:
            want.append(f >= 0.999)
        else:
            want.append(False)
    r_v, r_ok = _columns.column(rstd)
    f_v, f_ok = _columns.column(frac)
    got = _columns.flat_groups(r_v, r_ok, f_v, f_ok)
    assert got.tolist() == want
    assert _columns.longest_run(got) == longest_streak(want)
    runs = [rng.random() < 0.6 for _ in range(n)]
    assert _columns.longest_run(np.array(runs, dtype=bool)) == longest_streak(runs)


@pytest.mark.parametrize("seed", range(4))
def test_grad_norm_zero_and_clip_masks_are_the_row_loops(seed: int) -> None:
    """GD630's and GD627's column functions against their row loops, on columns holding the thresholds themselves."""
    from doctor.checks._series import EPS_STD, longest_streak
    from doctor.checks.numerics.clip_saturation import _clipped_columns
    from doctor.checks.numerics.grad_norm_zero import _no_update_columns

    rng = random.Random(seed)
    pick = [None, float("nan"), float("inf"), 0.0, -0.0, EPS_STD, 2e-6, 0.2, 0.5, 0.999, 1.0]
    n = rng.choice([0, 1, 7, 300])
    gn, rstd, frac = ([rng.choice(pick) for _ in range(n)] for _ in range(3))
    rows = [i for i in range(n) if gn[i] is not None and rstd[i] is not None and rstd[i] == rstd[i]]
    bad = [gn[i] == 0 and rstd[i] > EPS_STD and (frac[i] is None or frac[i] < 0.999) for i in rows]
    assert _no_update_columns(gn, rstd, frac) == (rows, bad, longest_streak(bad))
    vals = [(i, v) for i, v in enumerate(gn) if v is not None and v == v]
    assert _clipped_columns(gn, 0.2) == (len(vals), [(i, v) for i, v in vals if v >= 0.2])


def test_a_log_without_metric_rows_does_not_import_numpy() -> None:
    """numpy is imported by the first block of metric rows or a rule with rows to read, never at start-up."""
    import subprocess
    import sys

    log = ROOT / "fixtures" / "logs" / "dev-001-evalscope-empty-eval-dataset" / "log.txt"
    code = ("import sys; from doctor.analyze import analyze; analyze([sys.argv[1]]); "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize(("rows", "imported"), [(20, "False"), (80, "True")])
def test_a_console_log_imports_numpy_once_its_rows_make_a_long_run(rows: int, imported: str, tmp_path: Path) -> None:
    """A console log's blocks are read as columns once its rows reach console_rows.NUMPY_AFTER, however small each block
    is (a checkpoint line every few steps ends a block): a short run still never imports numpy."""
    import subprocess
    import sys

    lines = []
    for i in range(1, rows + 1):
        lines.append(_bar(i, rows))
        lines.append(repr({"loss": "0.1", "grad_norm": "0.2", "reward": "0.5", "global_step/max_steps": f"{i}/{rows}"}))
        if i % 10 == 0:
            lines.append(f"[INFO:swift] Saving model checkpoint to out/checkpoint-{i}")
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n")
    code = ("import sys; from doctor.engine import Session; from doctor.sources import scan; s = Session(); "
            "scan.scan_file(s, sys.argv[1], open(sys.argv[1], 'rb'), [0], fork=False); print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert out.strip() == imported   # before the rules' finish, which imports it for a series this long


# ------------------------------------------------------------------ console metric rows gathered into blocks
# every fixture log holding a printed metrics dict, read alone (without its run's logging.jsonl, so that its console
# rows are the run's metrics)
CONSOLE = sorted({p for p in (ROOT / "fixtures").glob("**/*") if p.suffix in (".txt", ".log") and p.is_file()
                  and re.search(rb"""\{['"](?:loss|reward|grad_norm|train_runtime|eval_loss)['"]""", p.read_bytes())})


def _rows_one_by_one(m: pytest.MonkeyPatch) -> None:
    """The path before blocks: each console row emitted alone, each block of rows read row by row."""
    from doctor.sources import console_rows
    m.setattr(console_rows, "GATHER", False)
    m.setattr(columns, "ENABLED", False)


@pytest.mark.parametrize("log", CONSOLE, ids=[str(c.relative_to(ROOT / "fixtures")) for c in CONSOLE])
def test_console_logs_same_report(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        _rows_one_by_one(m)
        want = _report(log)
    assert _report(log) == want


def test_console_logs_were_found() -> None:
    assert len(CONSOLE) >= 40


def _bar(k: int, n: int, desc: str = "Train") -> str:
    pct = k * 100 // max(n, 1) % 1000
    return f"{desc}: {pct:3d}%|{'█' * (pct // 10):10s}| {k}/{n} [00:0{k % 10}<00:13,  3.31s/it]"


def _console_text(rows: list[dict], rng: random.Random) -> str:
    """The rows printed as a console log prints them (transformers 4 numbers, transformers 5 quoted texts), with
    progress bars (rising, repeated, back to 0, beyond the rows' steps), phase markers and checkpoint saves between
    them, and now and then a row the short cut does not take (a prefix, a text after it)."""
    out = ["[INFO:swift] args: RLHFArguments(", "    output_dir='out')", "[INFO:swift] model_parameter_info: x",
           "***** Running training *****"]
    for i, row in enumerate(rows, 1):
        for _ in range(rng.choice([0, 0, 1, 1, 1, 2, 5])):
            k = rng.choice([i, i, i - 1, 0, i + 40, i // 2])
            out.append(rng.choice([_bar(k, len(rows)), _bar(k, rng.choice([0, 9, len(rows)])), _bar(k, 3, "Val"),
                                   _bar(k, len(rows), "")]))
        if rng.random() < 0.5:
            text = repr({k: str(v) if not isinstance(v, str) else v for k, v in row.items()})
        else:
            text = repr(row)
        r = rng.random()
        if r < 0.03:
            text = "[rank0]: " + text
        elif r < 0.05:
            text += " trailing"
        out.append(text)
        r = rng.random()
        if r < 0.03:
            out.append(f"[INFO:swift] Saving model checkpoint to out/checkpoint-{i}")
        elif r < 0.04:
            out.append("[WARNING:swift] something else")
        elif r < 0.045:
            out.append("[INFO:swift] The logging file will be saved in out/logging.jsonl")
    out += ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
            "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"]
    return "\n".join(out) + "\n"


def _scan_state(path: Path, monkeypatch: pytest.MonkeyPatch, gather: bool, rows_max: int,
                rows_min: int = 1) -> list[Any]:
    """The metric rows counted, the state the scanner leaves after reading this console log, and the findings."""
    from doctor.sources import console_rows, scan
    with monkeypatch.context() as m:
        if not gather:
            _rows_one_by_one(m)
        m.setattr(console_rows, "ROWS_MAX", rows_max)
        m.setattr(console_rows, "ROWS_MIN", rows_min)
        s = Session()
        tracker = Tracker()
        s.observers.append(tracker)
        # the state before each line fed whole: every row printed before it has been read (but a checkpoint save,
        # which a block of rows goes on over: sources/saves.py; tests/test_saves.py compares the states around it)
        seen: list[str] = []
        feed_line = s.feed_line

        def snap_and_feed(line: Any) -> None:
            if "Saving model checkpoint to" not in line.text:
                seen.append(_snapshot(s, tracker))
            feed_line(line)

        m.setattr(s, "feed_line", snap_and_feed)
        with path.open("rb") as f:
            scan.scan_file(s, str(path), f, [0], fork=False)
        return [s.state.metrics_steps, seen, _snapshot(s, tracker), repr([(f.rule_id, f.message, f.evidence, f.count, f.severity)
                                             for f in s.finish()])]


@pytest.mark.parametrize("seed", range(6))
def test_hostile_console_rows_same_state_and_report(seed: int, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile rows printed between progress bars, gathered into blocks of several sizes: the run facts, vitals,
    hang cadence, series and findings are those of the rows emitted one by one."""
    rng = random.Random(seed)
    if seed % 3 == 2:   # reward functions past the series' bound are dropped
        from doctor.checks import _series as series_mod
        monkeypatch.setattr(series_mod, "MAX_REWARD_FUNCS", 2)
    if seed % 2:
        from doctor.checks import _series
        monkeypatch.setattr(_series, "MAX_ROWS", 16)
    rows = _hostile_rows(rng, 400)
    for i in range(50, 400, 61):   # a 400-digit number, printed as transformers 4 would
        rows[i]["grad_norm"] = BIG
    log = tmp_path / "console.log"
    log.write_text(_console_text(rows, rng))
    want = _scan_state(log, monkeypatch, False, 1)
    assert want[0] > 300   # the rows were read
    for size, least in ((1, 1), (3, 1), (256, 1), (256, 16)):   # blocks of any size; small ones row by row
        assert _scan_state(log, monkeypatch, True, size, least) == want
    with monkeypatch.context() as m:
        _rows_one_by_one(m)
        report = _report(log)
    assert _report(log) == report


@pytest.mark.parametrize("seed", range(24))
def test_loss_zero_columns_are_the_row_loop(seed: int) -> None:
    """GD631's column function against its row loop, on columns of zeros with NaN, inf, -0.0 and the thresholds."""
    import math

    from doctor.checks._series import EPS_STD
    from doctor.checks.numerics.loss_zero import _zero_loss_columns

    rng = random.Random(seed)
    n = [0, 1, 6, 200][seed % 4]
    odd = [None, float("nan"), float("inf"), float("-inf"), 0.0, -0.0, EPS_STD, 2e-6, 0.3, -0.5]
    loss = [rng.choice([0.0, -0.0, None]) for _ in range(n)]
    if seed % 3 == 0 and n:   # one loss that may not be 0
        loss[rng.randrange(n)] = rng.choice(odd)
    gn, rstd = ([rng.choice(odd) for _ in range(n)] for _ in range(2))
    rows = [i for i in range(n) if loss[i] is not None]
    want = None   # what the rule reports from: the rows logging a loss and the first row with a gradient
    if rows and all(loss[i] == 0 for i in rows):
        alive = [i for i in rows if gn[i] and gn[i] > 0 and not math.isnan(gn[i]) and rstd[i] and rstd[i] > EPS_STD]
        want = (len(rows), alive[0]) if alive else None
    got_rows, got_alive = _zero_loss_columns(loss, gn, rstd)
    assert ((len(got_rows), got_alive[0]) if got_rows and got_alive else None) == want


@pytest.mark.parametrize("seed", range(8))
def test_step_time_columns_are_the_row_loop(seed: int) -> None:
    """GD650's timed rows over columns against its row loop (the first row left out, NaN, inf, 0, negatives)."""
    from doctor.checks.outputs.step_time import _timed_rows

    rng = random.Random(seed)
    n = [0, 1, 2, 300][seed % 4]
    st = [rng.choice([None, float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1.0, 1e-9, 2.5]) for _ in range(n)]
    assert _timed_rows(st) == [i for i in range(1, n) if st[i] is not None and st[i] > 0]
