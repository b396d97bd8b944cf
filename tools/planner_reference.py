"""Print the memory planner's error against each reference figure (see tests/test_planner.py for sources).

    python tools/planner_reference.py
"""
from __future__ import annotations

from doctor.swift.planner import CONTEXT_GIB, GIB, Settings, model_states, plan, spec_from_name


def states_gb(params, zero, world):
    spec = spec_from_name(f"x-{params / 1e9:g}B")
    return sum(v for _, v in model_states(spec, Settings(tuner="full", zero=zero, world=world, beta=0))) * GIB / 1e9


rows = [("ZeRO paper Fig.1 7.5B baseline (GB)", 120.0, states_gb(7.5e9, 1, 1)),
        ("ZeRO paper Fig.1 7.5B P_os, 64 GPUs (GB)", 31.4, states_gb(7.5e9, 1, 64)),
        ("ZeRO paper Fig.1 7.5B P_os+g, 64 GPUs (GB)", 16.6, states_gb(7.5e9, 2, 64)),
        ("ZeRO paper Fig.1 7.5B P_os+g+p, 64 GPUs (GB)", 1.9, states_gb(7.5e9, 3, 64)),
        ("7B full fine-tune, Adam 16 B/param (GB)", 112.0, states_gb(7e9, 1, 1))]
a = dict(rlhf_type="grpo", train_type="lora", lora_rank=8, per_device_train_batch_size=1, use_vllm=True,
         vllm_mode="colocate", vllm_gpu_memory_utilization=0.5, max_completion_length=1408, offload_optimizer=True)
p = plan(a, spec_from_name("./qwen3_8b_v1/"), 80.0, 1)
rows.append(("dev-log 005 Qwen3-8B memory(GiB), 80 GB GPU assumed", 56.74, p.phases[0].total - CONTEXT_GIB))
for name, ref, est in rows:
    print(f"{name:55} reference {ref:8.2f}  planner {est:8.2f}  error {100 * (est - ref) / ref:+6.1f}%")
s1 = dict(rlhf_type="grpo", tuner_type="lora", lora_rank=8, per_device_train_batch_size=2, deepspeed="zero2",
          use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.8)
q = plan(s1, spec_from_name("Qwen/Qwen2-7B-Instruct"), 24.0, 4)
print(f"seed 03 ZeRO-2 LoRA colocated 0.8 on 24 GiB: peak {q.peak.total:.1f} GiB, fits={q.fits} (seed: OOM)")
s2 = dict(rlhf_type="grpo", tuner_type="lora", lora_rank=16, per_device_train_batch_size=7, deepspeed="zero3",
          use_vllm=True, vllm_mode="server", vllm_gpu_memory_utilization=0.9)
q = plan(s2, spec_from_name("Qwen/Qwen2-7B-Instruct"), 22.49, 3)
print(f"seed 03 ZeRO-3 LoRA r16 b7 on 3 x A10 (22.49 GiB), vLLM on its own GPU: peak {q.peak.total:.1f} GiB, "
      f"rollout GPU {q.rollout_gpu.total:.1f} GiB, fits={q.fits} (seed: ran)")
