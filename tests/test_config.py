"""The run configuration is read from real launcher lines, argument dumps, command files and args.json."""
from __future__ import annotations

import json

from conftest import FIXTURES, REAL_SWIFT, feed_text

from doctor.engine import Session
from doctor.sources.argv import parse_argv, parse_value
from doctor.sources.inputs import discover, feed_input
from doctor.sources.swiftconfig import RunConfig

REAL = REAL_SWIFT


def session_for(*paths: str) -> Session:
    s = Session([])
    counter = [0]
    for inp in discover(list(paths)):
        feed_input(inp, s, counter)
    return s


def test_parse_value_and_argv():
    assert parse_value("8") == 8 and parse_value("0.9") == 0.9 and parse_value("True") is True
    assert parse_value("None") is None and parse_value("['accuracy', 'format']") == ["accuracy", "format"]
    assert parse_argv(["--reward_funcs", "accuracy", "format", "--use-vllm", "true", "--flag", "--x=3"]) == {
        "reward_funcs": ["accuracy", "format"], "use_vllm": True, "flag": True, "x": 3}


def test_healthy_log_dump_version_world_size():
    run = session_for(str(REAL / "grpo_lora_healthy" / "log.txt")).run
    assert run.swift_version == "4.6.0" and run.major == 4
    assert run.args["num_generations"] == 4 and run.args["tuner_type"] == "lora"
    assert run.provenance["num_generations"] == "dump"   # the dump outranks the launcher line
    assert run.cli["num_generations"] == 4 and run.command == "rlhf"
    assert run.world_size() == 1


def test_torchrun_launcher_line():
    run = session_for(str(REAL / "ddp2_cpu_gloo_use_cpu" / "log.txt")).run
    assert run.torchrun["nproc_per_node"] == 2
    assert run.world_size() == 2
    assert run.cli["ddp_backend"] == "gloo"


def test_command_script_with_env_and_continuations():
    run = RunConfig()
    run.add_command("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \\\nNPROC_PER_NODE=8 \\\nswift rlhf \\\n  --rlhf_type grpo \\\n"
                    "  --per_device_train_batch_size 1 \\\n  --num_generations 8 # comment\n")
    assert run.env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NPROC_PER_NODE": "8"}
    assert run.visible_gpus() == 8 and run.world_size() == 8
    assert run.args["num_generations"] == 8 and run.command == "rlhf"


def test_bare_argument_list_command():
    run = RunConfig()
    run.add_command((FIXTURES / "dev-005-lora-colocate-grad-norm-zero" / "command.txt").read_text())
    assert run.args["vllm_mode"] == "colocate" and run.args["gradient_accumulation_steps"] == 8


def test_v3_paths_give_major_hint():
    s = Session([])
    feed_text(s, '  File "/x/site-packages/swift/llm/train/sft.py", line 113, in run\n', "t")
    assert s.run.major == 3


def test_args_json_is_strongest(tmp_path):
    (tmp_path / "args.json").write_text(json.dumps({"num_generations": 16, "swift_version": "4.2.0",
                                                     "tuner_type": "full"}))
    (tmp_path / "train.log").write_text("run sh: `python swift/cli/rlhf.py --num_generations 8`\n")
    run = session_for(str(tmp_path)).run
    assert run.args["num_generations"] == 16 and run.cli["num_generations"] == 8
    assert run.swift_version == "4.2.0" and run.tuner() == "full"
