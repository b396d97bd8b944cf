"""The memory planner against published and observed figures (errors printed by tools/planner_reference.py).

- ZeRO paper (Rajbhandari et al. 2020, Fig. 1): 7.5B parameters, 64 GPUs, Adam (K = 12): 120 GB baseline,
  31.4 GB with P_os, 16.6 GB with P_os+g, 1.9 GB with P_os+g+p per GPU.
- "16 bytes per parameter" for mixed-precision Adam (same paper, §3): a 7B full fine-tune holds 112 GB of
  model states on one GPU.
- seed 03: Qwen2-7B LoRA r8, batch 2, ZeRO-2, colocated vLLM 0.8 on 4 x 24 GB does not fit; ZeRO-3 LoRA r16
  batch 7 on 3 x A10 (22.49 GiB) with vLLM (0.9) on a GPU of its own fits.
- dev-log 005 (ms-swift#5571): Qwen3-8B LoRA, colocated vLLM 0.5, batch 1, completions 1408 logged
  memory(GiB) 56.74 (torch max_memory_reserved); the GPU is assumed to be 80 GB.
"""
from __future__ import annotations

import pytest

from doctor.swift.planner import CONTEXT_GIB, GIB, Settings, model_states, plan, spec_from_config, spec_from_name


def _states_gb(params: float, zero: int, world: int) -> float:
    spec = spec_from_name(f"x-{params / 1e9:g}B")
    s = Settings(tuner="full", zero=zero, world=world, beta=0)
    return sum(v for _, v in model_states(spec, s)) * GIB / 1e9


@pytest.mark.parametrize("zero,world,published", [(1, 1, 120.0), (1, 64, 31.4), (2, 64, 16.6), (3, 64, 1.9)])
def test_zero_paper_figure_1(zero, world, published):
    assert _states_gb(7.5e9, zero, world) == pytest.approx(published, rel=0.02)


def test_16_bytes_per_parameter():
    assert _states_gb(7e9, 1, 1) == pytest.approx(7e9 * 16 / 1e9)


def test_config_json_parameter_count():
    # Qwen2.5-7B-Instruct config.json (published values); the checkpoint has 7.62B parameters
    cfg = {"hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
           "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
           "max_position_embeddings": 32768}
    s = spec_from_config("Qwen2.5-7B-Instruct", cfg)
    assert s.params == pytest.approx(7.62e9, rel=0.01)
    assert s.max_positions == 32768


def test_known_sizes_from_names():
    assert spec_from_name("Qwen/Qwen2.5-7B-Instruct").params == pytest.approx(7.6e9, rel=0.01)
    assert spec_from_name("./Qwen3-1_7B").name == "qwen3-1.7b"
    assert spec_from_name("./qwen3_8b_v1/").name == "qwen3-8b"
    assert spec_from_name("some-model") is None


SEED1 = dict(rlhf_type="grpo", tuner_type="lora", lora_rank=8, per_device_train_batch_size=2,
             gradient_accumulation_steps=8, deepspeed="zero2", use_vllm=True, vllm_mode="colocate",
             vllm_gpu_memory_utilization=0.8)


def test_seed03_zero2_colocated_does_not_fit_and_fixes_are_ranked():
    p = plan(SEED1, spec_from_name("Qwen/Qwen2-7B-Instruct"), 24.0, 4)
    assert p.fits is False
    saved = [f[2] for f in p.fixes if not f[0].startswith("together")]
    assert saved == sorted(saved, reverse=True)
    assert p.fixes[0][0].startswith("--deepspeed zero3")
    together = [f for f in p.fixes if f[0].startswith("together")]
    assert together and together[0][1] <= 24.0


def test_seed03_zero3_three_a10_fits():
    a = dict(rlhf_type="grpo", tuner_type="lora", lora_rank=16, per_device_train_batch_size=7,
             gradient_accumulation_steps=8, deepspeed="zero3", use_vllm=True, vllm_mode="server",
             vllm_gpu_memory_utilization=0.9)
    p = plan(a, spec_from_name("Qwen/Qwen2-7B-Instruct"), 22.49, 3)
    assert p.fits is True
    # the same settings colocated (vLLM on the training GPUs) would not
    assert plan(dict(a, vllm_mode="colocate"), spec_from_name("Qwen/Qwen2-7B-Instruct"), 22.49, 3).fits is False


def test_devlog_005_logged_memory():
    a = dict(rlhf_type="grpo", train_type="lora", lora_rank=8, per_device_train_batch_size=1,
             gradient_accumulation_steps=8, use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.5,
             max_completion_length=1408, offload_optimizer=True, torch_dtype="bfloat16")
    p = plan(a, spec_from_name("./qwen3_8b_v1/"), 80.0, 1)
    torch_reserved = p.phases[0].total - CONTEXT_GIB  # memory(GiB) is torch's max_memory_reserved
    assert torch_reserved == pytest.approx(56.74, rel=0.05)


def test_vllm_budget_too_small_for_weights():
    a = dict(SEED1, vllm_gpu_memory_utilization=0.5)
    p = plan(a, spec_from_name("Qwen/Qwen2-7B-Instruct"), 24.0, 4)
    assert p.vllm_kv_gib is not None and p.vllm_kv_gib < 0 and p.fits is False


def test_unknown_gpu_gives_no_verdict():
    p = plan(SEED1, spec_from_name("Qwen/Qwen2-7B-Instruct"), None, 4)
    assert p.fits is None and p.fixes == []
