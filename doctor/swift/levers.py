"""The memory planner's levers: each flag change that lowers the peak, alone and combined, ranked by the memory
it saves (the order of ms-swift's GRPO docs, 'colocate-mode OOM', and of the seed guides)."""
from __future__ import annotations

import math
from dataclasses import replace

from .planner import VLLM_OVERHEAD_GIB, ModelSpec, Settings, plan_settings, vllm_weights_gib


def _cand(spec: ModelSpec, s: Settings, gpu_gib: float | None) -> list[tuple[str, Settings]]:
    """The seeds' ladder (seed 03, ms-swift GRPO docs 'colocate-mode OOM'): each change on its own."""
    out: list[tuple[str, Settings]] = []
    colocate = s.use_vllm and s.vllm_mode == "colocate"
    if s.zero < 3:
        out.append(("--deepspeed zero3 (shard weights, gradients and optimizer over the GPUs)",
                    replace(s, zero=3, ds_offload=False, deepspeed="zero3")))
    if not s.ds_offload:
        z = max(s.zero, 2)
        out.append((f"--deepspeed zero{z}_offload (optimizer states on the CPU)",
                    replace(s, zero=z, ds_offload=True, deepspeed=f"zero{z}_offload")))
    if colocate:
        if s.sleep_level == 0:
            out.append(("--sleep_level 1 (vLLM frees its memory while training)", replace(s, sleep_level=1)))
        if not (s.offload_model and s.offload_optimizer):
            out.append(("--offload_model true --offload_optimizer true (trainer state on the CPU while vLLM "
                        "generates)", replace(s, offload_model=True, offload_optimizer=True)))
        if gpu_gib:
            # the lowest utilisation that still leaves vLLM 2 GiB of KV cache, in steps of 0.05
            need = (vllm_weights_gib(spec, s) + VLLM_OVERHEAD_GIB + 2.0) / gpu_gib
            u = math.ceil(need * 20 - 1e-9) / 20
            if u < s.vllm_util - 1e-9 and u < 1:
                out.append((f"--vllm_gpu_memory_utilization {u:g} (the least that leaves vLLM 2 GiB of KV cache)",
                            replace(s, vllm_util=u)))
        if s.world > 1 and s.vllm_tp < s.world:
            tp = next((t for t in (2, 4, 8) if t > s.vllm_tp and s.world % t == 0), None)
            if tp:
                out.append((f"--vllm_tensor_parallel_size {tp} (vLLM weights split over {tp} GPUs)",
                            replace(s, vllm_tp=tp)))
    if s.tuner == "full":
        out.append(("--tuner_type lora (train an adapter instead of every weight)", replace(s, tuner="lora")))
    if s.batch > 1:
        out.append((f"--per_device_train_batch_size {max(1, s.batch // 2)} (raise gradient_accumulation_steps to "
                    f"keep the batch)", replace(s, batch=max(1, s.batch // 2))))
    if s.completion_len > 512:
        out.append((f"--max_completion_length {s.completion_len // 2}", replace(s, completion_len=s.completion_len // 2)))
    if not s.grad_ckpt:
        out.append(("--gradient_checkpointing true", replace(s, grad_ckpt=True)))
    return out


def rank_fixes(spec: ModelSpec, s: Settings, gpu_gib: float | None) -> list[tuple[str, float, float]]:
    """Each lever alone, ranked by memory saved at the peak; then the smallest ladder prefix that fits."""
    base = plan_settings(spec, s, gpu_gib, _ranking=False)
    ranked = []
    for label, ns in _cand(spec, s, gpu_gib):
        p = plan_settings(spec, ns, gpu_gib, _ranking=False)
        saved = base.peak.total - p.peak.total
        if saved > 0.05:
            ranked.append((label, p.peak.total, saved, p.fits, ns))
    ranked.sort(key=lambda x: -x[2])
    out = [(label, after, saved) for label, after, saved, _, _ in ranked]
    # combine levers in ranked order until the plan fits
    cur = s
    combo = []
    for label, _, _, _, ns in ranked:
        diff = {k: getattr(ns, k) for k in ns.__dataclass_fields__ if getattr(ns, k) != getattr(s, k)}
        cur = replace(cur, **diff)
        combo.append(label.split(" (")[0])
        p = plan_settings(spec, cur, gpu_gib, _ranking=False)
        if p.fits:
            if len(combo) > 1:
                out.append(("together: " + " + ".join(combo), p.peak.total, base.peak.total - p.peak.total))
            break
    return out
