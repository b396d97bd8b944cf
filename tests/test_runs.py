"""Two runs appended to one log (issue 17 point 16): each failure is diagnosed with its own run's configuration,
and the report gives each run's line range.

The log is built from two real fixtures, appended as `nohup swift rlhf ... >> train.log` would: the failed run of
fixtures/logs/real-batch-div-grad-accum (per_device_train_batch_size 2, gradient_accumulation_steps 3: 6
completions, num_generations 4; 45 lines) and then the healthy run of fixtures/logs/real-grpo-lora-healthy
(per_device_train_batch_size 4, gradient_accumulation_steps 1).
"""
from __future__ import annotations

from pathlib import Path

from doctor.analyze import analyze
from doctor.signals import Where
from doctor.sources.runs import RunSplit

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def test_failure_uses_its_own_runs_config(tmp_path):
    first = (LOGS / "real-batch-div-grad-accum" / "log.txt").read_bytes()
    second = (LOGS / "real-grpo-lora-healthy" / "log.txt").read_bytes()
    assert first.count(b"\n") == 45
    log = tmp_path / "train.log"
    log.write_bytes(first + second)
    rep = analyze([str(log)])
    f = rep.findings[0]
    assert f.rule_id == "GD101"
    # 1 x 2 x 3 = 6 (run 1), never the false '1 x 4 x 1 = 6' taken from run 2
    assert "per_device_train_batch_size 2 x gradient_accumulation_steps 3 = 6" in f.message
    assert "per_device_train_batch_size 4" not in f.message
    assert "run 1 of 2" in f.message and "lines 1-45" in f.message
    assert rep.run["runs"] == [{"path": str(log), "first_line": 1, "last_line": 45},
                               {"path": str(log), "first_line": 46, "last_line": None}]


def test_launcher_line_and_its_dump_are_one_run():
    rs = RunSplit()
    rs.start(Where("a.log", 1), {}, dump=False)    # run sh: ...
    rs.start(Where("a.log", 13), {"x": 1}, dump=True)   # its args dump
    rs.start(Where("a.log", 400), {"x": 1}, dump=True)  # a second dump with no launcher line: a new run
    rs.start(Where("a.log", 900), {"x": 2}, dump=False)  # a new launcher line
    assert [s.line for s in rs.starts] == [1, 400, 900]
    assert rs.index_of(Where("a.log", 399)) == 0 and rs.index_of(Where("a.log", 950)) == 2
    assert rs.args_of(0, {"x": 3}) == {"x": 1} and rs.args_of(2, {"x": 3}) == {"x": 3}


def test_each_finding_says_which_run_and_pattern_rules_read_their_own_run(tmp_path):
    """The report says which run (line range) a finding belongs to, in JSON and text; a pattern rule's template
    values and diagnose hook get the configuration of the run holding its first hit, not the last run's."""
    from doctor.engine import RunState
    from doctor.model import Evidence
    from doctor.render.text import render as text_render

    first = (LOGS / "real-batch-div-grad-accum" / "log.txt").read_bytes()
    second = (LOGS / "real-grpo-lora-healthy" / "log.txt").read_bytes()
    log = tmp_path / "train.log"
    log.write_bytes(first + second)
    rep = analyze([str(log)])
    f = rep.findings[0]
    assert f.to_json()["run"] == {"number": 1, "of": 2, "path": str(log), "first_line": 1, "last_line": 45}
    assert "run 1 of 2, lines 1-45" in text_render(rep)
    # RunState.at: the state as run 1 saw it (per_device_train_batch_size 2, read by hand in the first fixture's
    # args dump) and as run 2 saw it (4); one run only: the state itself
    from doctor.engine import Session
    s = Session([])
    from conftest import feed_text
    feed_text(s, (first + second).decode(), "train.log")
    st: RunState = s.state
    assert st.at(Evidence("train.log", 30, "x")).run.args["per_device_train_batch_size"] == 2
    assert st.at(Evidence("train.log", 60, "x")).run.args["per_device_train_batch_size"] == 4
    assert st.at(Evidence("train.log", 60, "x")) is st   # the last run: the current configuration
    one = Session([])
    feed_text(one, first.decode(), "train.log")
    assert one.state.at(Evidence("train.log", 30, "x")) is one.state
    assert one.state.place([f]) == [f]


def test_a_pattern_rules_template_takes_its_own_runs_values(tmp_path):
    """A TOML-only rule whose message names a run value: the value of the run its line is in."""
    from conftest import feed_text

    from doctor.engine import Session
    from doctor.registry import load_catalog

    fam = tmp_path / "rules" / "batch"
    fam.mkdir(parents=True)
    (fam / "GD190-probe.toml").write_text('''id = "GD190"
slug = "probe"
category = "batch-divisibility"
severity = "error"
action = "relaunch"
verify = "x"
title = "probe"
message = "per_device_train_batch_size {per_device_train_batch_size}"
why = "test"
fix = ["x"]
[[patterns]]
literals = ["PROBE-LINE"]
regex = "PROBE-LINE"
''')
    metas = load_catalog(str(tmp_path / "rules"))
    first = (LOGS / "real-batch-div-grad-accum" / "log.txt").read_text()
    second = (LOGS / "real-grpo-lora-healthy" / "log.txt").read_text()
    s = Session(metas)
    # the probe line at the end of run 1 (line 46 of the 45-line first fixture + 1): run 1's value, 2, not run 2's 4
    feed_text(s, first + "PROBE-LINE\n" + second, "train.log")
    (f,) = s.finish()
    assert f.message == "per_device_train_batch_size 2" and f.run is not None and f.run.number == 1


def test_check_rules_read_the_run_that_failed(tmp_path):
    """A Python check (the OOM rule) and the structural fallbacks take the configuration of the run whose error
    they report, not the last run's: run 1 asked --per_device_train_batch_size 8 and ran out of memory, run 2
    (appended, batch 2) ended normally. Lines shaped as ms-swift's launcher line and torch's OOM message print them."""
    launch = ("run sh: `/usr/bin/python -m torch.distributed.run --nproc_per_node 1 /usr/lib/python3/swift/cli/rlhf.py "
              "--rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct --tuner_type full --per_device_train_batch_size {b} "
              "--use_vllm true --vllm_mode colocate`\n")
    log = tmp_path / "train.log"
    log.write_text(launch.format(b=8)
                   + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.14 GiB of which 1.00 GiB is free.\n"
                   + launch.format(b=2) + "[INFO:swift] End time of running main: 2025-01-01\n")
    f = analyze([str(log)]).findings[0]
    assert f.rule_id == "GD201" and f.run is not None and (f.run.number, f.run.first_line, f.run.last_line) == (1, 1, 2)
    fixes = " ".join(f.fix)
    assert "--per_device_train_batch_size 4 with --gradient_accumulation_steps 2 (was 8 x" in fixes, fixes


def test_a_run_whose_arguments_were_not_kept_gets_none_not_the_last_runs():
    """Past MAX_RUNS the arguments of a finished run are not kept: its configuration is empty, never another run's."""
    from doctor.sources.runs import MAX_RUNS
    from doctor.sources.swiftconfig import RunConfig

    rc = RunConfig()
    for i in range(MAX_RUNS + 2):   # run i starts at line 10 * i + 1 with per_device_train_batch_size i
        rc.runs.start(Where("a.log", 10 * i + 1), dict(rc.args), dump=False)
        rc.args = {"per_device_train_batch_size": i}
    assert rc.at(Where("a.log", 12)).args == {"per_device_train_batch_size": 1}       # kept: run 2 (index 1)
    assert rc.at(Where("a.log", 10 * MAX_RUNS + 2)).args == {}                         # not kept
    last = Where("a.log", 10 * (MAX_RUNS + 1) + 2)
    assert rc.at(last) is rc and rc.at(last).args == {"per_device_train_batch_size": MAX_RUNS + 1}


def test_summary_is_each_runs_span_in_one_pass():
    """summary() gives span() of every run (the definition), for runs of several files interleaved, computed in one
    pass (it was span per run: quadratic on a log repeating its launcher line tens of thousands of times)."""
    import random

    rnd = random.Random(7)
    split = RunSplit()
    lines = {"a.log": 0, "b.log": 0, "c.log": 0}
    for _ in range(3000):
        path = rnd.choice(list(lines))
        lines[path] += rnd.randint(1, 50)
        split.start(Where(path, lines[path]), {}, dump=rnd.random() < 0.3)
    assert len(split) > 1000
    want = [dict(zip(("path", "first_line", "last_line"), split.span(i))) for i in range(len(split))]
    assert split.summary() == want
    assert sum(1 for r in want if r["last_line"] is None) == 3   # the last run of each file runs to its end


def test_summary_limit_lists_the_first_and_last_runs(tmp_path):
    """A log that starts more runs than the report lists (RUNS_LISTED): the first and the last half, each with the
    line range the whole list gives it, and runs_total in the report (its memory stays flat, issue 19)."""
    from doctor.analyze import RUNS_LISTED

    split = RunSplit()
    for i in range(1000):
        split.start(Where("a.log", 10 * i + 1), {}, dump=False)
    full = split.summary()
    part = split.summary(limit=10)
    assert part == full[:5] + full[-5:]
    assert split.summary(limit=1000) == full
    launch = (LOGS / "real-batch-div-grad-accum" / "log.txt").read_text().splitlines()[0]
    assert launch.startswith("run sh:")
    log = tmp_path / "train.log"
    log.write_text("\n".join([launch, "step"] * (RUNS_LISTED + 50)) + "\n")
    rep = analyze([str(log)]).to_json()
    assert rep["run"]["runs_total"] == RUNS_LISTED + 50 and len(rep["run"]["runs"]) == RUNS_LISTED
    assert rep["run"]["runs"][0] == {"path": str(log), "first_line": 1, "last_line": 2}
    assert rep["run"]["runs"][-1] == {"path": str(log), "first_line": 2 * (RUNS_LISTED + 50) - 1, "last_line": None}
