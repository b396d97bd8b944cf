"""GD502: GPU memory at or above 95% of the total in a snapshot, or at 98% for three live samples in a row under
``watch`` (formerly GD904)."""
from __future__ import annotations

from ._snapshot import NEAR_FULL, GpuRule, _gib, _ids, row
from .live import NearFullTracker


class GpuMemoryNearFull(GpuRule):
    """GD502: GPU memory at or above 95% of the total."""

    tracker = NearFullTracker

    def live_fix(self, ctx):
        fix = super().live_fix(ctx)
        vu = ctx.run.get("vllm_gpu_memory_utilization") if ctx.run else None
        if vu is not None:
            fix.insert(0, f"vLLM reserves --vllm_gpu_memory_utilization {vu} of each GPU in colocate mode: lower it "
                          "(e.g. by 0.1) to leave room for training activations.")
        return fix

    def check(self, ctx, path, gpus, all_samples, seq):
        full = [s for s in gpus if s.mem_frac is not None and s.mem_frac >= NEAR_FULL]
        if not full:
            return None
        worst = max(full, key=lambda s: s.mem_frac)
        vllm = any(p.name and "vllm" in p.name.lower() for s in full for p in (s.processes or ()))
        msg = (f"GPU {_ids(full)} at {worst.mem_frac * 100:.0f}% of memory ({_gib(worst.mem_used_mib)} of "
               f"{_gib(worst.mem_total_mib)}): the next allocation spike (a longer completion, the logits of a larger "
               f"batch, a vLLM wake-up) runs out of memory.")
        if vllm:
            msg += (" vLLM processes hold it: vLLM takes vllm_gpu_memory_utilization of the whole GPU at start, so a "
                    "full GPU is by design for a rollout server, but not for a GPU that also trains.")
        fix = ["Colocated vLLM: lower --vllm_gpu_memory_utilization, add --sleep_level 1, or "
               "--offload_model/--offload_optimizer true.",
               "Training: --deepspeed zero3, smaller --per_device_train_batch_size or --max_completion_length, "
               "gradient checkpointing on.",
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lowers fragmentation."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s in full[:5]], seq=seq)
