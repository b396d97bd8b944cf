"""Grader 27's false sentences (dev-logs 9 and 10), one test per mechanism: the fact that contradicts the sentence is
fed, and the sentence must go (the rule cases in rules/*/cases.toml hold the ones a log can show)."""
from __future__ import annotations

from doctor.swift.terms import say


def test_llamafactory_precision_is_its_yaml_switch_not_a_torch_dtype():
    # devlogs10 1116: a LLaMA-Factory YAML run was told to "load the model with torch_dtype=bfloat16"
    line = say("Train in bfloat16 (--torch_dtype bfloat16) on Ampere or newer GPUs.", "llamafactory")
    assert line is not None and "`bf16: true` in the training YAML" in line
    assert "torch_dtype" not in line
    assert "cutoff_len 2048" in (say("Raise --max_length 2048.", "llamafactory") or "")
    # LLaMA-Factory's vLLM options (hparams/model_args.py, 0.7-0.9): vllm_maxlen, vllm_gpu_util
    line = say("--vllm_max_model_len 1024 (was 4096): fits the 1216-token cache.", "llamafactory")
    assert line is not None and line.startswith("vllm_maxlen 1024 (was 4096)")
    assert "vllm_gpu_util 0.8" in (say("Raise --vllm_gpu_memory_utilization 0.8.", "llamafactory") or "")


def test_did_you_mean_of_an_attribute_error_is_no_fix():
    # devlogs9 1002: Python's fuzzy match of a missing attribute against existing ones
    from doctor.classify.hints import message_hints
    msg = "'XGRPOTrainer' object has no attribute 'num_iterations'. Did you mean: 'num_generations'?"
    assert message_hints(msg, exc_type="AttributeError") == []
    # a flag the user typed keeps argparse's suggestion
    assert message_hints("unrecognized arguments. Did you mean '--num_generations'?", exc_type="SystemExit")


def test_a_hint_ends_where_the_users_prose_begins():
    # devlogs9 1025: "...try again.啥原因？" and a vague request that names nothing
    from doctor.classify.hints import message_hints
    assert message_hints("Target modules [] not found. Please check the target modules and try again.啥原因？",
                         exc_type="ValueError") == []
    hints = message_hints("Bad dtype. Please set dtype='float16' in the config.为什么？", exc_type="ValueError")
    assert hints == ["Please set dtype='float16' in the config."]
    hints = message_hints("Please set --max_model_len 4096. Why does this happen?", exc_type="ValueError")
    assert hints == ["Please set --max_model_len 4096."]


def test_a_flag_is_named_only_when_given():
    # devlogs9 1002/1003/1025: an attribute read by code, a missing positional parameter, an automatically built list
    from doctor.classify.hints import NOT_GIVEN, flag_fix, given_in
    assert NOT_GIVEN.search("'XGRPOTrainer' object has no attribute 'num_iterations'")
    assert NOT_GIVEN.search("PPOTrainer.__init__() missing 2 required positional arguments: 'reward_model' and 'x'")
    assert not given_in("target_modules", "Target modules [] not found in the base model.")
    assert given_in("target_modules", "Target modules [] not found.", {"target_modules"})
    assert given_in("num_generations", "GRPOConfig.__init__() got an unexpected keyword argument 'num_generations'")
    assert given_in("max_length", "invalid value: --max_length -1")
    assert "PPOConfig" in flag_fix(["num_ppo_epochs"], "trl", "PPOConfig")
    assert "GRPOConfig" not in flag_fix(["num_ppo_epochs"], "trl", None)


# ------------------------------------------------------------------ verify lines chosen by where the failure was raised

def _one(case: dict):
    from test_rule_cases import run_case
    found = run_case(case)
    assert found, "the rule did not fire"
    return found[0]


def test_GD993_verify_after_imports_when_raised_by_a_running_trainer_or_a_constructor():
    # devlogs9 1002/1003/1012: the failing runs had imported and parsed their arguments already
    default = "the imports succeed"
    attr = _one({"rule": "GD993", "log": "Traceback (most recent call last):\n"
                 "  File \"/usr/lib/python3.10/site-packages/x_r1/trainer.py\", line 40, in train_step\n"
                 "    n = self.num_iterations\n"
                 "AttributeError: 'XGRPOTrainer' object has no attribute 'num_iterations'\n"})
    assert default not in attr.verify and "has no attribute 'num_iterations'" in attr.verify
    ctor = _one({"rule": "GD993", "log": "TypeError: PPOTrainer.__init__() missing 2 required positional arguments: "
                 "'reward_model' and 'train_dataset'\n"})
    assert default not in ctor.verify and "`PPOTrainer` is built" in ctor.verify
    imp = _one({"rule": "GD993", "log": "Traceback (most recent call last):\n"
                "  File \"/w/train.py\", line 3, in <module>\n    from trl import GRPOTrainer\n"
                "ImportError: cannot import name 'GRPOTrainer' from 'trl'\n"})
    assert not imp.verify or default in imp.verify or imp.rule_id != "GD993"


def test_GD990_verify_not_argument_parsing_when_raised_after_it():
    # devlogs9 1014/1025: vLLM's dtype check at engine creation, peft's adapter injection; `args:` is ms-swift's dump
    f = _one({"rule": "GD990", "log": "Traceback (most recent call last):\n"
              "  File \"/usr/lib/python3.10/site-packages/peft/tuners/tuners_utils.py\", line 500, in inject_adapter\n"
              "    raise ValueError(msg)\n"
              "ValueError: Target modules [] not found in the base model. Please check the target modules and try "
              "again.\n"})
    assert "argument parsing passes" not in f.verify and "`args:` dump" not in f.verify
    assert "Target modules [] not found in the base model" in f.verify


def test_GD301_heartbeat_monitor_is_not_a_collective_timeout():
    # devlogs10 1124: the watchdog thread got stuck; no collective timed out
    f = _one({"rule": "GD301", "log": "[rank9]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 9] Heartbeat monitor timed "
              "out! Process will be terminated after dumping debug info. workMetaList_.size()=0\n"
              "[rank9]:[F ProcessGroupNCCL.cpp:1153] [PG 0 Rank 9] [PG 0 Rank 9] Watchdog got stuck for 480 seconds "
              "without making progress in monitoring enqueued collectives.\n"})
    assert f.title == "NCCL watchdog thread stuck (heartbeat monitor)"
    assert "Watchdog caught collective operation timeout" not in f.verify


def test_GD310_ray_memory_monitor_kill_is_not_verified_with_dmesg():
    # devlogs10 1130: Ray's monitor kills before the kernel's OOM killer, so dmesg stays empty on a rerun killed alike
    f = _one({"rule": "GD310", "log": "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: "
              "1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons "
              "at node (ID: 351e406b, IP: 10.95.143.76) over the last time period.\n"})
    assert "dmesg" not in f.verify and "Ray's memory monitor" in f.verify


# ------------------------------------------------------------------ a framework not told gets neutral spellings

def test_framework_not_told_drops_trainer_spellings_and_keeps_the_libraries():
    # devlogs9 1025 (Firefly, framework not told): ms-swift and LLaMA-Factory spellings of a peft setting
    line = ("Set target_modules to theirs (or `all-linear` in peft >= 0.8; ms-swift --target_modules all-linear, "
            "LLaMA-Factory lora_target all).")
    out = say(line, None)
    assert out is not None and "ms-swift" not in out and "LLaMA-Factory" not in out and "peft >= 0.8" in out
    # prose about a release is not a spelling
    assert say("This changed (ms-swift 3.x changed this).", None) == "This changed (ms-swift 3.x changed this)."


def test_a_vllm_run_keeps_only_vllms_spelling():
    # devlogs9 1014: vLLM alone on a T4; the trainers' flags did not run
    line = "Use float16 instead of bfloat16 (vLLM --dtype half, ms-swift --torch_dtype float16, trl fp16=True)."
    out = say(line, "vllm")
    assert out is not None and "vLLM --dtype half" in out and "ms-swift" not in out and "trl" not in out


def test_ms_swift_keeps_its_own_spelling():
    line = "Use float16 (vLLM --dtype half, ms-swift --torch_dtype float16, trl fp16=True)."
    assert "ms-swift --torch_dtype float16" in (say(line, "ms-swift") or "")


def test_ms_swift_only_reward_settings_are_not_offered_to_other_frameworks():
    # devlogs10 1126: ms-swift's soft_overlong reward (--soft_cache_length) for a run whose framework is not told
    line = "Add the soft_overlong reward (with --soft_cache_length 512): it penalises length smoothly."
    assert say(line, None) is None and say(line, "trl") is None
    assert say(line, "ms-swift") == line
