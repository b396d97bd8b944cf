"""OpenRLHF's memory levers in its own flags (doctor/checks/memory/openrlhf_levers.py), with the run's values: the
flags and defaults are openrlhf/cli/train_ppo_ray.py's (OpenRLHF at 021d1b09)."""
from __future__ import annotations

from doctor.checks.memory.openrlhf_levers import levers
from doctor.swift.terms import say


def test_halves_what_the_run_set_and_names_only_switches_it_left_off():
    # the flags of a real `deepspeed --module openrlhf.cli.train_ppo` command (fixtures/devlogs69/7219)
    args = {"micro_train_batch_size": 2, "micro_rollout_batch_size": 4, "generate_max_len": 1024, "zero_stage": 2,
            "gradient_checkpointing": True, "adam_offload": True}
    out = " ".join(levers(args))
    assert "--micro_train_batch_size 1 (was 2)" in out and "--micro_rollout_batch_size 2 (was 4)" in out
    assert "--generate_max_len 512 (was 1024)" in out and "--zero_stage 3 (was 2)" in out
    assert "--gradient_checkpointing" not in out and "--adam_offload" not in out  # set already
    assert "--ref_reward_offload" in out
    assert "vllm_gpu_memory_utilization" not in out  # engines on their own GPUs: their share is not the trainer's


def test_the_colocated_engines_share_and_sleep():
    out = " ".join(levers({"colocate_all_models": True, "vllm_gpu_memory_utilization": 0.6, "zero_stage": 3,
                           "vllm_enable_sleep": True}))
    assert "--vllm_gpu_memory_utilization 0.4 (was 0.6)" in out
    assert "--deepspeed_enable_sleep" in out and "--vllm_enable_sleep" not in out
    assert "--zero_stage" not in out


def test_nothing_read_says_the_defaults_and_every_flag_survives_the_framework_terms():
    lines = levers({})
    assert any("OpenRLHF's defaults are 4 and 8" in x for x in lines)
    assert any("OpenRLHF's default is 2" in x for x in lines)
    # no line is dropped as another framework's lever when said in OpenRLHF's terms
    assert all(say(x, "openrlhf") == x for x in lines)
