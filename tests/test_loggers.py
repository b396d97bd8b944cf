"""The run's own loggers as sources (issue 21 point 4): TensorBoard event files and wandb run folders of real
`swift rlhf` CPU runs (fixtures/loggers/, made by tools/swiftgen_loggers.py; see each provenance.toml)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.sources import loggers, tfevents

ROOT = Path(__file__).resolve().parent.parent
LOGGERS = ROOT / "fixtures" / "loggers"
CASES = ["zero-reward", "reward-raises"]


def events_of(case: str) -> Path:
    found = sorted((LOGGERS / case / "runs").glob("events.out.tfevents.*"))
    assert found, case
    return found[0]


def wandb_of(case: str) -> Path:
    found = sorted((LOGGERS / case / "wandb").glob("*run-*"))
    assert found, case
    return found[0]


def jsonl_steps(case: str) -> list[dict]:
    rows = [json.loads(x) for x in (LOGGERS / case / "logging.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in rows if "loss" in r and "global_step/max_steps" in r]


def make_dir(tmp: Path, case: str, *parts: str) -> Path:
    """A run directory holding only these parts of the fixture (files or folders)."""
    d = tmp / f"{case}-{'-'.join(p.replace('/', '_') for p in parts) or 'empty'}"
    d.mkdir()
    for p in parts:
        src = LOGGERS / case / p
        if src.is_dir():
            shutil.copytree(src, d / p)
        else:
            shutil.copyfile(src, d / p)
    return d


def rules_of(report) -> list[tuple[str, str]]:
    return [(f.rule_id, f.severity.name) for f in report.findings]


@pytest.mark.parametrize("case", CASES)
def test_event_rows_match_logging_jsonl(case):
    """Each train step of the event file holds the values logging.jsonl holds for it (float32 in the file)."""
    steps = jsonl_steps(case)
    skipped: set[str] = set()
    with open(events_of(case), "rb") as f:
        rows = [v for _, v in tfevents.rows(f, skipped) if "loss" in v]
    assert [int(r["step"]) for r in rows] == [int(s["global_step/max_steps"].split("/")[0]) for s in steps]
    for row, ref in zip(rows, steps):
        for key in ("loss", "reward", "reward_std", "grad_norm", "learning_rate", "frac_reward_zero_std"):
            if key in ref:
                assert row[key] == pytest.approx(float(ref[key]), rel=1e-5, abs=1e-7), (key, row, ref)
    assert "text or non-scalar tensor" in skipped   # the trainer's args, written as a text summary


def test_cut_or_foreign_event_file_never_fails(tmp_path):
    data = events_of("zero-reward").read_bytes()
    with open(events_of("zero-reward"), "rb") as f:
        whole = list(tfevents.rows(f, set()))
    cut = tmp_path / "events.out.tfevents.1.cut"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with open(cut, "rb") as f:
        part = list(tfevents.rows(f, set()))
    assert 0 < len(part) < len(whole) and part[:-1] == whole[: len(part) - 1]
    junk = tmp_path / "events.out.tfevents.2.junk"
    junk.write_bytes(b"not an event file at all\n" * 100)
    with open(junk, "rb") as f:
        assert list(tfevents.rows(f, set())) == []
    r = analyze([str(cut)])   # an event file given alone: read as TensorBoard, never a traceback
    assert r.inputs[0].kind == "tensorboard"


def test_event_files_only_give_the_primary_finding_of_the_console_log(tmp_path):
    log_only = analyze([str(make_dir(tmp_path, "zero-reward", "log.txt"))])
    tb_only = analyze([str(make_dir(tmp_path, "zero-reward", "runs"))])
    assert log_only.findings and tb_only.findings
    assert tb_only.findings[0].rule_id == log_only.findings[0].rule_id == "GD610"


@pytest.mark.parametrize("case, primary", [("zero-reward", "GD610"), ("reward-raises", "GD606")])
def test_wandb_output_log_alone_gives_the_primary_finding_of_the_log(tmp_path, case, primary):
    log_only = analyze([str(make_dir(tmp_path, case, "log.txt"))])
    wandb_only = analyze([str(make_dir(tmp_path, case, "wandb"))])
    assert log_only.findings[0].rule_id == wandb_only.findings[0].rule_id == primary
    kinds = {i.path.rsplit("/", 1)[-1]: i.kind for i in wandb_only.inputs}
    assert kinds["output.log"] == "log"


@pytest.mark.parametrize("case", CASES)
def test_loggers_without_console_are_diagnosed_as_with_it(tmp_path, case):
    with_console = analyze([str(make_dir(tmp_path, case, "log.txt", "logging.jsonl", "args.json"))])
    loggers_only = analyze([str(make_dir(tmp_path, case, "runs", "logging.jsonl", "wandb"))])
    assert rules_of(loggers_only) == rules_of(with_console)


@pytest.mark.parametrize("case", ["zero-reward"])
def test_no_step_counted_twice(tmp_path, case):
    whole = analyze([str(LOGGERS / case)], series=True)
    n = len(jsonl_steps(case))
    assert whole.series["steps"]["rows"] == n
    tb = next(i for i in whole.inputs if i.kind == "tensorboard")
    assert f"{n} row(s) of steps another source already gave, not counted twice" in tb.note
    base = analyze([str(make_dir(tmp_path, case, "log.txt", "logging.jsonl", "args.json", "command.txt"))])
    assert rules_of(whole) == rules_of(base)
    assert [f.count for f in whole.findings] == [f.count for f in base.findings]


def test_console_copy_not_read_beside_the_console_log():
    r = analyze([str(LOGGERS / "zero-reward")])
    out = next(i for i in r.inputs if i.path.endswith("files/output.log"))
    assert out.kind == "skipped" and "copy of the console log" in out.note


def test_wandb_binary_log_named_as_skipped(tmp_path):
    d = make_dir(tmp_path, "zero-reward", "wandb")
    run = next(d.glob("wandb/*run-*"))
    (run / f"{run.name.split('-')[-1]}.wandb").write_bytes(b"\x00" * 64)   # stands in for the binary log
    r = analyze([str(d)])
    skipped = [i for i in r.inputs if i.kind == "skipped"]
    assert len(skipped) == 1 and skipped[0].note == loggers.WANDB_BINARY_NOTE


# wandb writes files/wandb-summary.json, wandb-metadata.json and config.yaml for online runs only: an offline run (the
# only kind this machine can make: tools/swiftgen_loggers.py) keeps them in its binary run-*.wandb log. The texts
# below are INVENTED in the layout wandb writes (config.yaml: `key:` then `  value: X`; the summary's `train/` keys
# and `_step`; the metadata's `program` and `args`), with the values of the real zero-reward run.
CONFIG_YAML = """_wandb:
  value:
    cli_version: 0.31.0
num_generations:
  value: 4
per_device_train_batch_size:
  value: 4
learning_rate:
  value: 0.0001
output_dir:
  value: runs/loggers-zero-reward/v0-20261125-142914
reward_funcs:
  value:
  - accuracy
  - format
"""


def test_wandb_metadata_config_and_summary_layouts():
    args = loggers.read_config_yaml(CONFIG_YAML)
    assert args == {"num_generations": 4, "per_device_train_batch_size": 4, "learning_rate": 0.0001,
                    "output_dir": "runs/loggers-zero-reward/v0-20261125-142914"}
    real_cmd = (LOGGERS / "zero-reward" / "command.txt").read_text().split("swift ", 1)[1].split()
    meta = {"program": "<venv>/lib/python3.11/site-packages/swift/cli/rlhf.py", "args": real_cmd}
    assert "--num_generations 4" in loggers.command_line(meta)
    last = jsonl_steps("zero-reward")[-1]
    row = loggers.summary_row({"train/reward": 0, "train/loss": 0, "train/global_step": 6, "_step": 6,
                               "_runtime": 130.2, "train/grad_norm": 0})
    assert row == {"reward": 0.0, "loss": 0.0, "grad_norm": 0.0, "step": 6.0}
    assert row["step"] == float(last["global_step/max_steps"].split("/")[0])


def test_wandb_summary_and_config_feed_the_session(tmp_path):
    d = make_dir(tmp_path, "zero-reward", "wandb")
    files = next(d.glob("wandb/*run-*")) / "files"
    (files / "config.yaml").write_text(CONFIG_YAML)
    (files / "wandb-summary.json").write_text(json.dumps({"train/reward": 0, "train/global_step": 6}))
    r = analyze([str(d)], series=True)
    assert r.run["args"].get("num_generations") == 4
    summary = next(i for i in r.inputs if i.kind == "wandb-summary")
    assert "not counted twice" in summary.note   # step 6 came from output.log already
    assert r.series["steps"]["rows"] == 6
