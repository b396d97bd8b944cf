"""The preflight command's contract: exit codes, one-line errors, formats, args.json input, GPU snapshots."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from doctor.cli import app
from doctor.preflight import preflight_command
from doctor.sources.swiftcmd import flag_values, parse_command

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "fixtures" / "gpu"
runner = CliRunner()
HEALTHY = ("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-0.5B-Instruct --tuner_type lora --num_generations 4 "
           "--per_device_train_batch_size 4 --reward_funcs accuracy --dataset d.jsonl --save_total_limit 2").split()


def run(*args: str):
    return runner.invoke(app, ["preflight", "--swift-version", "4.6.0", *args])


def test_healthy_command_exits_0():
    r = run("--gpu-mem", "80", "--", *HEALTHY)
    assert r.exit_code == 0, r.output
    assert "Memory plan fits" in r.output


def test_errors_exit_1_and_fail_on_warning():
    r = run("--gpu-mem", "80", "--", *HEALTHY, "--num_generations", "3")
    assert r.exit_code == 1 and "GD101" in r.output
    r = run("--gpu-mem", "80", "--fail-on", "warning", "--", *HEALTHY, "--temperature", "0.1")
    assert r.exit_code == 1 and "GD644" in r.output


def test_json_format_is_the_report_schema():
    r = run("--gpu-mem", "80", "-f", "json", "--", *HEALTHY, "--train_type", "full")
    rep = json.loads(r.stdout)
    assert rep["schema_version"] == 1 and rep["findings"][0]["rule_id"] == "GD401"
    assert rep["run"]["preflight"]["flags_checked_against"].startswith("ms-swift 4.6.0")
    assert "--tuner_type full" in " ".join(rep["findings"][0]["fix"])


def test_usage_errors_exit_2_with_one_line():
    for args in (["--"], ["--", "python", "train.py"], ["missing-args.json"],
                 ["--gpu-snapshot", str(GPU / "dmon-01-h100-load-590.txt"), "--", *HEALTHY],
                 ["--", "swift", "rlhf", "nope.yaml", "--rlhf_type", "grpo"]):
        r = run(*args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_env_prefix_and_process_env():
    cmd = parse_command(["NPROC_PER_NODE=4", "CUDA_VISIBLE_DEVICES=0,1,2,3", "swift", "rlhf", "--reward_funcs", "a",
                         "b", "--beta=0.1", "--log_completions"], {"MAX_PIXELS": "1000", "HOME": "/x"})
    assert cmd.env == {"MAX_PIXELS": "1000", "NPROC_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert flag_values(cmd) == {"reward_funcs": ["a", "b"], "beta": 0.1, "log_completions": True}


def test_nproc_below_visible_gpus_is_reported():
    rep = preflight_command(["NPROC_PER_NODE=3", "CUDA_VISIBLE_DEVICES=0,1,2,3", *HEALTHY, "--num_generations", "3"],
                            {}, gpu_mem_gib=80, swift_version="4.6.0", live_gpu=False)
    assert "GD420" in {f.rule_id for f in rep.findings}


def test_tp_not_dividing_world():
    rep = preflight_command(["NPROC_PER_NODE=4", "CUDA_VISIBLE_DEVICES=0,1,2,3", *HEALTHY, "--use_vllm", "true",
                             "--vllm_mode", "colocate", "--vllm_tensor_parallel_size", "3"], {}, gpu_mem_gib=80,
                            swift_version="4.6.0", live_gpu=False)
    assert any("does not divide the world size 4" in f.message for f in rep.findings)


def test_yaml_config_first_argument(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("rlhf_type: grpo\nmodel: Qwen/Qwen2.5-0.5B-Instruct\nnum_generations: 8\nreward_funcs:\n"
                   "  - accuracy\n  - format\nENV:\n  NPROC_PER_NODE: 2\n", encoding="utf-8")
    cmd = parse_command(["swift", "rlhf", str(cfg), "--num_generations", "4"], {})
    vals = flag_values(cmd)
    assert vals["num_generations"] == 4 and vals["reward_funcs"] == ["accuracy", "format"]  # the command line wins
    assert cmd.env["NPROC_PER_NODE"] == "2"
    # --config is not a swift flag: it is read, and reported with the way to pass the file
    rep = preflight_command(["swift", "rlhf", "--config", str(cfg)], {}, gpu_mem_gib=80, swift_version="4.6.0",
                            live_gpu=False)
    f = rep.findings[0]
    assert f.rule_id == "GD401" and "first argument" in " ".join(f.fix)


def test_args_json_input():
    r = run("--gpu-mem", "80", str(ROOT / "fixtures" / "preflight-args" / "full_from_merged_default.args.json"))
    assert r.exit_code == 0, r.output


def test_gpu_snapshot_sets_memory_and_flags_busy_gpus():
    snap = GPU / "table-01-a100x8-mixed-idle-busy-595.txt"
    rep = preflight_command(["CUDA_VISIBLE_DEVICES=0,1", "NPROC_PER_NODE=2", *HEALTHY], {}, gpu_snapshot=str(snap),
                            swift_version="4.6.0", live_gpu=False)
    assert rep.run["preflight"]["gpu_memory_gib"] == 80.0
    held = [f for f in rep.findings if f.rule_id == "GD503"]
    assert held and "pid 2010386" in held[0].message and "pid 1985992" in held[0].message


def test_analyze_picks_up_snapshots_in_a_run_dir(tmp_path):
    shutil.copy(ROOT / "fixtures" / "logs" / "dev-005-lora-colocate-grad-norm-zero" / "log.txt", tmp_path / "log.txt")
    shutil.copy(GPU / "table-02-a100x8-three-busy-five-idle-535.txt", tmp_path / "nvidia-smi.txt")
    r = runner.invoke(app, ["analyze", str(tmp_path), "-f", "json"])
    rep = json.loads(r.stdout)
    assert {i["kind"] for i in rep["inputs"]} == {"log", "gpu"}
    ids = {f["rule_id"] for f in rep["findings"]}
    assert {"GD630", "GD501"} <= ids


def test_version_tables_without_that_version_installed():
    base = ["swift", "rlhf", "--rlhf_type", "grpo", "--num_generations", "4", "--per_device_train_batch_size", "4"]
    def unknown(version, *flags):
        rep = preflight_command(base + list(flags), {}, swift_version=version, live_gpu=False)
        return [f for f in rep.findings if f.rule_id == "GD401"]
    assert unknown("3.9.0", "--gpu_memory_utilization", "0.5") == []          # still accepted until 3.9
    assert "vllm_gpu_memory_utilization" in " ".join(unknown("3.10.0", "--gpu_memory_utilization", "0.5")[0].fix)
    assert unknown("3.12.0", "--train_type", "lora") == []
    assert unknown("3.8.0", "--vllm_mode", "colocate", "--vllm_device", "auto")  # removed in 3.6
    assert unknown("3.4.0", "--vllm_mode", "colocate")                          # added in 3.5
    assert unknown("3.12.0", "--num_generatons", "4")                           # a typo in any version


def test_a_log_that_printed_nvidia_smi_first_stays_a_log(tmp_path):
    log = tmp_path / "train.log"
    log.write_text((GPU / "table-08-h100-single-idle-noprocs-590.txt").read_text() +
                   (ROOT / "fixtures" / "logs" / "dev-005-lora-colocate-grad-norm-zero" / "log.txt").read_text())
    r = runner.invoke(app, ["analyze", str(log), "-f", "json"])
    rep = json.loads(r.stdout)
    assert rep["inputs"][0]["kind"] == "log" and rep["findings"][0]["rule_id"] == "GD630"
