"""A folder of runs is analyzed run by run; runs appended to one log never share a curve or a finding.

The runs are real ms-swift 4.6.0 GRPO runs on CPU (fixtures/ckpt/real-*/v0-*, fixtures/logs/real-*; provenance in
their folders), put side by side as ms-swift's ``--output_dir output/Qwen`` would hold them (``v{N}-<timestamp>``
per launch, swift/utils/utils.py add_version_to_work_dir). Before the split, ``analyze output/`` over this folder
said "A reward is falling towards zero" (GD613: the LoRA run's rewards joined to the full run's) and "Full weights
were saved where a LoRA adapter was expected" (GD805: the LoRA run's args.json read against the full run's
checkpoint); both runs are healthy.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from doctor.analyze import analyze
from doctor.cli import app
from doctor.sources.run_folders import find_runs

FIX = Path(__file__).resolve().parent.parent / "fixtures"
LORA = FIX / "ckpt" / "real-lora-healthy" / "v0-20261122-204953"      # 6 steps, LoRA, healthy
FULL = FIX / "ckpt" / "real-full-bf16" / "v0-20261122-205526"         # 4 steps, full bf16, healthy
REWARD_ERR = FIX / "logs" / "real-dataset-missing-solution-column"    # reward function raised (GD606)


def _folder(tmp_path: Path) -> Path:
    out = tmp_path / "output"
    runs = out / "Qwen"
    runs.mkdir(parents=True)
    shutil.copytree(LORA, runs / "v0-20261122-204953", symlinks=True)
    shutil.copytree(FULL, runs / "v1-20261122-205526", symlinks=True)
    failed = runs / "v2-20261122-220000"
    failed.mkdir()
    for name in ("args.json", "command.txt", "log.txt", "logging.jsonl"):
        shutil.copy(REWARD_ERR / name, failed / name)
    (runs / "v3-20261122-230000").mkdir()   # a launch that stopped while parsing its arguments
    return out


def test_find_runs_orders_by_time_and_skips_checkpoints(tmp_path):
    out = _folder(tmp_path)
    names = [p.name for p in find_runs(out)]
    assert names == ["v0-20261122-204953", "v1-20261122-205526", "v2-20261122-220000", "v3-20261122-230000"]
    assert find_runs(out / "Qwen" / "v1-20261122-205526") == []   # a run folder is one run


def test_folder_of_runs_is_analyzed_run_by_run(tmp_path):
    out = _folder(tmp_path)
    rep = analyze([str(out)])
    ids = [f.rule_id for f in rep.findings]
    assert "GD613" not in ids and "GD805" not in ids   # joined curves / another run's args.json
    assert ids[0] == "GD606" and rep.findings[0].run.name == "Qwen/v2-20261122-220000"
    rows = {r["name"]: r for r in rep.runs}
    assert [r["name"] for r in rep.runs] == ["Qwen/v3-20261122-230000", "Qwen/v2-20261122-220000",
                                              "Qwen/v1-20261122-205526", "Qwen/v0-20261122-204953"]
    assert rows["Qwen/v3-20261122-230000"]["status"] == "nothing to read"
    assert rows["Qwen/v2-20261122-220000"]["status"] == "failed"
    assert rows["Qwen/v2-20261122-220000"]["primary"]["rule_id"] == "GD606"
    # the two healthy runs: each its own step count (6 for the LoRA run, 4 for the full one), never joined
    assert (rows["Qwen/v0-20261122-204953"]["steps"], rows["Qwen/v0-20261122-204953"]["max_steps"]) == (6, 6)
    assert (rows["Qwen/v1-20261122-205526"]["steps"], rows["Qwen/v1-20261122-205526"]["max_steps"]) == (4, 4)
    assert rows["Qwen/v0-20261122-204953"]["status"] == "completed"
    for f in rep.findings:   # every finding's evidence lies in its own run's folder
        assert f.run is not None and all(f.run.name in e.path for e in f.evidence)


def test_folder_of_runs_cli_text_and_json(tmp_path):
    out = _folder(tmp_path)
    runner = CliRunner()
    res = runner.invoke(app, ["analyze", str(out), "--format", "json"])
    assert res.exit_code == 1   # one run failed
    data = json.loads(res.stdout)
    assert len(data["runs"]) == 4 and data["runs"][1]["status"] == "failed"
    assert data["findings"][0]["run"]["name"] == "Qwen/v2-20261122-220000"
    import jsonschema

    from doctor.render.jsonr import SCHEMA_PATH
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    broken = dict(data, runs=[dict(data["runs"][0], status="fine")])   # a status outside the documented ones
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(broken))
    res = runner.invoke(app, ["analyze", str(out)])
    lines = res.stdout.splitlines()
    assert lines[2] == "4 runs, each analyzed on its own (newest first):"
    assert lines[4].split()[:2] == ["Qwen/v2-20261122-220000", "failed"]
    assert "── run Qwen/v2-20261122-220000 ──" in res.stdout


def test_run_folders_named_one_by_one_are_not_joined(tmp_path):
    out = _folder(tmp_path)
    a, b = out / "Qwen" / "v0-20261122-204953", out / "Qwen" / "v1-20261122-205526"
    rep = analyze([str(b), str(a)])
    assert [r["name"] for r in rep.runs] == ["v1-20261122-205526", "v0-20261122-204953"]
    assert not [f for f in rep.findings if f.rule_id in ("GD613", "GD805")]
    one = analyze([str(a)])
    assert one.runs is None   # one run folder: the usual report


def _appended(tmp_path: Path, first: Path, second: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_bytes((first / "log.txt").read_bytes() + (second / "log.txt").read_bytes())
    return log


def test_appended_healthy_runs_share_no_curve(tmp_path):
    """Two healthy runs appended to one log (nohup ... >> train.log): before, GD613 'A reward is falling towards
    zero' over '10 logged steps (steps 1-4 of 4)' (6 rows of one run and 4 of the other) and vitals mixing the
    two; now no finding, and the vitals are the last run's 4 steps."""
    rep = analyze([str(_appended(tmp_path, LORA, FULL))])
    assert [f.rule_id for f in rep.findings] == []
    assert rep.run["vitals"]["step"] == 4 and rep.run["vitals"]["max_steps"] == 4
    assert len(rep.run["runs"]) == 2


def test_appended_runs_flags_are_not_carried_over(tmp_path):
    """A full run (--tuner_type full) then a LoRA run (--tuner_type lora) in one log: before, GD701 'A
    full-parameter run silently trained LoRA' quoted the first run's --tuner_type full against the second run's
    LoraConfig; each run's typed flags are its own now."""
    rep = analyze([str(_appended(tmp_path, FULL, LORA))])
    assert [f.rule_id for f in rep.findings if f.severity.name == "error"] == []
    assert "GD701" not in [f.rule_id for f in rep.findings]
