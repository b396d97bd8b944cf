"""Issue 30 points 3 and 12: configuration comes from the working directory's project, --config or the user's file,
never from the analysed input's tree, read with a size cap, named in the report; --gpu-mem within its range."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT
from test_hostile_io import BATCH, cli, one_line_exit_2

HEALTHY = ("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-0.5B-Instruct --tuner_type lora --num_generations 4 "
           "--per_device_train_batch_size 4 --reward_funcs accuracy --dataset d.jsonl --save_total_limit 2").split()


# ------------------------------------------------------------------------------------------------- point 12

@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9"])
def test_gpu_mem_out_of_range_is_refused(value):
    # before: accepted; nan gave "nan GiB more than the nan GiB of one GPU", -1 a plan against -1 GiB (exit 0/1)
    one_line_exit_2(cli("preflight", "--swift-version", "4.6.0", "--gpu-mem", value, "--", *HEALTHY), "--gpu-mem",
                    "between")


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_gpu_mem_out_of_range_in_config_is_refused(tmp_path, value):
    cfg = tmp_path / "grpo-doctor.toml"
    cfg.write_text(f"gpu-mem = {value}\n")
    one_line_exit_2(cli("preflight", "--config", str(cfg), "--swift-version", "4.6.0", "--", *HEALTHY),
                    str(cfg), "gpu-mem", "between")



# -------------------------------------------------------------------------------------------------- point 3

SILENCE = '[tool.grpo-doctor]\nignore = ["ALL"]\nfail-on = "never"\n'


def _run_folder(parent: Path) -> Path:
    run = parent / "run"
    run.mkdir(parents=True)
    (run / "train.log").write_bytes(BATCH)
    return run


@pytest.mark.parametrize("cmd", ["analyze", "check-ckpt"])
def test_a_config_in_the_analysed_tree_is_not_obeyed(tmp_path, cmd):
    there = tmp_path / "from-elsewhere"
    run = _run_folder(there)
    (there / "pyproject.toml").write_text(SILENCE)  # shipped with a copied run folder, or anywhere above /tmp/x
    if cmd == "check-ckpt":
        (run / "checkpoint-1").mkdir()
        (run / "checkpoint-1" / "model.safetensors").write_bytes(b"")  # empty: GD802
    here = tmp_path / "here"
    here.mkdir()
    p = cli(cmd, str(run), cwd=here, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    # before: the run folder's pyproject.toml silenced every rule and set fail-on never: exit 0
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert b"config:" not in p.stdout


def test_the_config_used_is_named_in_the_report(tmp_path):
    proj = tmp_path / "proj"
    run = _run_folder(proj / "runs")
    (proj / "pyproject.toml").write_text('[tool.grpo-doctor]\nfail-on = "never"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    p = cli("analyze", str(run), cwd=proj / "runs", env=env)  # found above the working directory, as ruff does
    assert p.returncode == 0 and f"config: {proj / 'pyproject.toml'}".encode() in p.stdout, p.stdout
    p = cli("analyze", str(run), "--format", "json", cwd=proj, env=env)
    assert json.loads(p.stdout)["tool"]["config"] == str(proj / "pyproject.toml")
    p = cli("analyze", str(run), "--format", "json", "--isolated", cwd=proj, env=env)
    assert p.returncode == 1 and "config" not in json.loads(p.stdout)["tool"]


def test_the_user_config_is_read_when_the_project_has_none(tmp_path):
    user = tmp_path / "xdg" / "grpo-doctor" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('format = "json"\n')
    run = _run_folder(tmp_path)
    p = cli("analyze", str(run), cwd=tmp_path, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert json.loads(p.stdout)["tool"]["config"] == str(user), p.stdout


@pytest.mark.parametrize("how", ["found", "--config"])
def test_a_huge_config_is_one_line_not_gigabytes(tmp_path, how):
    proj = tmp_path / "proj"
    proj.mkdir()
    big = proj / "pyproject.toml"
    with open(big, "wb") as f:  # sparse: 1 GiB on paper, nothing on disk
        f.truncate(1 << 30)
    run = _run_folder(tmp_path)
    args = ["--config", str(big)] if how == "--config" else []
    # before: read whole (2 GiB of memory), then "not valid TOML"
    one_line_exit_2(cli("analyze", str(run), *args, cwd=proj, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}),
                    str(big), "MiB")


@pytest.mark.parametrize("cmd", ["analyze", "check-ckpt"])
def test_a_too_long_path_is_one_line(cmd):
    # before: the config lookup stat'ed the path outside the error handler: a traceback (OSError: File name too long)
    one_line_exit_2(cli(cmd, "a/" * 3000), "File name too long")


def test_a_config_that_is_no_file_is_one_line(tmp_path):
    one_line_exit_2(cli("analyze", str(ROOT / "fixtures"), "--config", str(tmp_path)), str(tmp_path))
    one_line_exit_2(cli("analyze", str(ROOT / "fixtures"), "--config", "/dev/zero"), "/dev/zero")
