"""Checkpoint rules GD801-GD805 on built checkpoints, the reusable API for watch, and the check-ckpt CLI contract."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
from ckpt_util import full_checkpoint, lora_checkpoint
from conftest import ROOT
from safetensors.numpy import save_file

from doctor.checks.checkpoint.disk_full import remaining_saves
from doctor.ckpt import check_checkpoint_dirs, checkpoint_rules
from doctor.engine import Session
from doctor.model import Severity
from doctor.signals import CheckpointInput
from doctor.sources.checkpoint import read_checkpoint
from doctor.sources.swiftconfig import RunConfig


def ids(findings) -> list[str]:
    return [f.rule_id for f in findings]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=ROOT,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120)


# ------------------------------------------------------------------ GD801 / GD805 intent
def test_adapter_where_full_was_expected_is_an_error(tmp_path):
    d = lora_checkpoint(tmp_path / "checkpoint-4", args={"tuner_type": "lora", "load_args": True, "swift_version": "4.6.0",
                                                         "model": "runs/sft_lora/v0/checkpoint-125-merged", "adapters": []})
    f = check_checkpoint_dirs([d], expect="full")
    assert ids(f) == ["GD801"] and f[0].severity == Severity.error
    m = f[0].message
    assert "--expect full" in m and "runs/sft_lora/v0/checkpoint-125-merged/args.json" in m
    assert "merge_lora" in m and "load_args=true" in m
    assert f[0].fix[0].startswith("Add --load_args false")


def test_intent_from_the_live_run_config(tmp_path):
    d = lora_checkpoint(tmp_path / "checkpoint-2", args={"tuner_type": "lora", "load_args": False})
    run = RunConfig()
    run.add_command("swift rlhf --rlhf_type grpo --tuner_type full --model m", "command")
    f = check_checkpoint_dirs([d], run=run)
    assert ids(f) == ["GD801"] and f[0].severity == Severity.error
    assert "the command line says --tuner_type full" in f[0].message
    assert "ms-swift's default is lora" in f[0].message
    assert check_checkpoint_dirs([d]) == []  # no intent, no load_args: a LoRA checkpoint is just that


def test_ms_swift_3_default_load_args_is_named(tmp_path):
    d = lora_checkpoint(tmp_path / "checkpoint-2", args={"train_type": "lora", "load_args": True,
                                                         "model": "/m/sft-merged"})
    f = check_checkpoint_dirs([d])
    assert ids(f) == ["GD801"] and f[0].severity == Severity.warning  # intent unknown
    assert "3.0-3.1.x training does this by default" in f[0].message and "train_type" in f[0].message


def test_full_where_lora_was_expected(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=0)
    f = check_checkpoint_dirs([d], expect="lora")
    assert ids(f) == ["GD805"] and "model.safetensors" in f[0].message and "102,976 params" in f[0].message
    assert check_checkpoint_dirs([d], expect="full") == []


# ------------------------------------------------------------------ GD803 bloat
def test_bloat_parts_and_savings(tmp_path):
    run = tmp_path / "v0"
    for s in (1, 2, 3, 4):
        full_checkpoint(run / f"checkpoint-{s}", dtype=np.float32, optimizer_factor=2.0)
    (run / "checkpoint-4" / "rng_state.pth").write_bytes(b"r" * 100)
    f = check_checkpoint_dirs([run / "checkpoint-4"])
    assert ids(f) == ["GD803"]
    w = (run / "checkpoint-4" / "model.safetensors").stat().st_size
    assert w == 102_976 * 4 + (w - 102_976 * 4)  # fp32 weights
    m = f[0].message
    assert "F32, 102,976 params" in m and "2.0x the weights" in m and "4 checkpoints" in m
    assert "float32 weights from a BF16 base (config.json; the checkpoint is" in m
    fixes = " | ".join(f[0].fix)
    assert "--save_only_model true" in fixes and "--torch_dtype bfloat16" in fixes and "--save_total_limit 2" in fixes
    assert "checkpoint-1, checkpoint-2" in fixes


def test_no_bloat_for_save_only_model_bf16_with_a_limit(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=0,
                        args={"tuner_type": "full", "save_total_limit": 2, "save_only_model": True})
    assert check_checkpoint_dirs([d]) == []


# ------------------------------------------------------------------ GD804 disk-full (pure, injected free space)
# (save_total_limit's peak: cases in rules/checkpoint/cases.toml)
def test_remaining_saves_by_hand():
    assert remaining_saves(2, 10, 2) == 4      # 4, 6, 8, 10
    assert remaining_saves(2, 11, 2) == 5      # 4, 6, 8, 10 and the last step 11
    assert remaining_saves(10, 10, 2) == 0
    assert remaining_saves(0, 5, 0) == 0


def _disk_session(facts, free: int):
    s = Session(checkpoint_rules())
    s.emit(CheckpointInput(replace(facts, fs_free=free, fs_mount="/data")))
    return s.finish()


def test_disk_full_projection(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=2.0,
                        trainer_state={"global_step": 2, "max_steps": 20, "save_steps": 2})
    facts = read_checkpoint(d)
    size = facts.total_bytes()
    out = _disk_session(facts, 3 * size + 10)
    gd804 = [f for f in out if f.rule_id == "GD804"]
    assert gd804 and gd804[0].category == "disk-full" and gd804[0].severity == Severity.error
    assert "9 more save(s)" in gd804[0].message and "room for 3" in gd804[0].message
    assert any(x.startswith("--save_total_limit 3:") for x in gd804[0].fix)
    assert not [f for f in _disk_session(facts, 10 * size) if f.rule_id == "GD804"]


# ------------------------------------------------------------------ GD802 corrupt
def test_adapter_target_modules_mismatch(tmp_path):
    d = lora_checkpoint(tmp_path / "checkpoint-2", targets=("q_proj", "v_proj"))
    cfg = json.loads((d / "adapter_config.json").read_text())
    cfg["target_modules"] = ["q_proj", "k_proj"]
    (d / "adapter_config.json").write_text(json.dumps(cfg))
    f = check_checkpoint_dirs([d])
    assert ids(f) == ["GD802"] and "not in target_modules" in f[0].message and "v_proj" in f[0].message


def test_index_missing_shard_and_tensor(tmp_path):
    d = tmp_path / "checkpoint-2"
    d.mkdir()
    save_file({"a": np.zeros(4, np.float32)}, str(d / "model-00001-of-00002.safetensors"))
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 32}, "weight_map": {
        "a": "model-00001-of-00002.safetensors", "z": "model-00001-of-00002.safetensors",
        "b": "model-00002-of-00002.safetensors"}}))
    f = [x for x in check_checkpoint_dirs([d]) if x.rule_id == "GD802"]
    assert f
    ev = " | ".join(e.text for e in f[0].evidence)
    assert "1 shard(s) that are not here: model-00002-of-00002.safetensors" in ev
    assert "maps 1 tensor(s) to shards that do not hold them, e.g. z" in ev
    save_file({"c": np.zeros(2, np.float32)}, str(d / "model-00003-of-00003.safetensors"))
    f = [x for x in check_checkpoint_dirs([d]) if x.rule_id == "GD802"]
    ev = " | ".join(e.text for e in f[0].evidence)
    assert "1 shard(s) not named by model.safetensors.index.json (model-00003-of-00003.safetensors)" in ev


def test_watch_api_dedups_and_accepts_strings(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=0)
    (d / "trainer_state.json").write_text('{"global_step": 2, "max_')
    f = check_checkpoint_dirs([str(d), d, str(d) + "/"])
    assert ids(f) == ["GD802"] and f[0].count == 1
    assert "trainer_state.json is broken: not valid JSON" in f[0].message


# ------------------------------------------------------------------ CLI contract
def test_cli_exit_codes_formats_and_grouping(tmp_path):
    good = full_checkpoint(tmp_path / "good" / "checkpoint-2", optimizer_factor=0)
    bad = full_checkpoint(tmp_path / "bad" / "checkpoint-2", optimizer_factor=0)
    os.truncate(bad / "model.safetensors", 100)
    p = cli("check-ckpt", str(good / "model.safetensors"), str(good / "config.json"))
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert "No problem found" in p.stdout.decode()
    p = cli("check-ckpt", str(good), str(bad / "model.safetensors"), "--format", "json")
    assert p.returncode == 1
    rep = json.loads(p.stdout)
    assert rep["inputs"] == [{"path": str(good), "kind": "checkpoint"}, {"path": str(bad), "kind": "checkpoint"}]
    assert [f["rule_id"] for f in rep["findings"]] == ["GD802"]
    assert rep["findings"][0]["evidence"][0]["path"] == str(bad / "model.safetensors")
    p = cli("check-ckpt", str(bad), "--format", "sarif")
    assert p.returncode == 1 and json.loads(p.stdout)["runs"][0]["results"][0]["ruleId"] == "GD802"
    p = cli("check-ckpt", str(bad), "--format", "markdown", "--ignore", "checkpoint-corrupt")
    assert p.returncode == 0


def test_cli_bad_input_is_one_line(tmp_path):
    for args, word in (((str(tmp_path / "missing"),), "no such file"), ((str(tmp_path),), "no checkpoint here")):
        p = cli("check-ckpt", *args)
        err = p.stderr.decode()
        assert p.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1 and word in err
    p = cli("check-ckpt", str(tmp_path), "--expect", "half")
    assert p.returncode == 2


def test_fail_on_warning(tmp_path):
    # optimizer states 4x fp16 weights: AdamW's moments kept in float32, twice what a resumable checkpoint holds
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=4.0)
    assert cli("check-ckpt", str(d)).returncode == 0  # a bloat warning only
    p = cli("check-ckpt", str(d), "--fail-on", "warning")
    assert p.returncode == 1 and b"optimizer states 4.0x the weights, above the 2x of AdamW" in p.stdout


def test_usual_optimizer_states_are_information_not_a_warning(tmp_path):
    """A default full checkpoint (AdamW's two moments in the weights' dtype, 2x the weights) is what a resumable
    checkpoint holds: said once as information with the disk-saving fix, never a warning at every save."""
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=2.0)
    p = cli("check-ckpt", str(d), "--fail-on", "warning")
    assert p.returncode == 0
    assert b"nothing is abnormal for what it holds" in p.stdout and b"--save_only_model true" in p.stdout


def test_dangling_last_checkpoint_link(tmp_path):
    run = tmp_path / "v0"
    d = full_checkpoint(run / "checkpoint-4", optimizer_factor=0)
    (run / "last-checkpoint").symlink_to("checkpoint-6")
    f = check_checkpoint_dirs([d])
    assert ids(f) == ["GD802"] and "points to checkpoint-6, which does not exist" in f[0].message
    assert any("ln -sfn checkpoint-4" in x for x in f[0].fix)


def test_deepspeed_latest_names_a_missing_tag(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-6", optimizer_factor=0)
    (d / "latest").write_text("global_step6")
    (d / "global_step4").mkdir()
    (d / "global_step4" / "mp_rank_00_model_states.pt").write_bytes(b"x")
    f = check_checkpoint_dirs([d])
    assert ids(f) == ["GD802"] and "names DeepSpeed tag 'global_step6', but there is no global_step6/" in f[0].message
    (d / "latest").write_text("v1.2")  # not a DeepSpeed tag: not ours to judge
    assert check_checkpoint_dirs([d]) == []


def test_checkpoint_rules_are_the_catalogs_ckpt_checks():
    assert [m.id for m in checkpoint_rules()] == ["GD801", "GD802", "GD803", "GD804", "GD805"]
    assert [m.id for m in checkpoint_rules()] == ["GD801", "GD802", "GD803", "GD804", "GD805"]


def test_extra_shard_alone_is_a_warning(tmp_path):
    d = tmp_path / "checkpoint-2"
    d.mkdir()
    save_file({"a": np.zeros(4, np.float32)}, str(d / "model-00001-of-00002.safetensors"))
    save_file({"b": np.zeros(4, np.float32)}, str(d / "model-00002-of-00002.safetensors"))
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16}, "weight_map": {
        "a": "model-00001-of-00002.safetensors"}}))
    f = [x for x in check_checkpoint_dirs([d]) if x.rule_id == "GD802"]
    assert f and f[0].severity == Severity.warning and "has files its index does not use" in f[0].message
