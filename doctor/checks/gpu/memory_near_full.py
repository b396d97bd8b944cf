"""GD502: GPU memory at or above 95% of the total in a snapshot, or at 98% for three live samples in a row under
``watch`` (formerly GD904). The fixes name vLLM's levers only when the run uses vLLM (its arguments, or vLLM
processes on the GPU); a run without vLLM gets the training levers alone."""
from __future__ import annotations

from ._snapshot import NEAR_FULL, GpuRule, _gib, _ids, row
from .live import NearFullTracker

_TRUE = (True, "true", "True", "1", 1)
_FALSE = (False, "false", "False", "0", 0)
TRAINING = ["Training: --deepspeed zero3, smaller --per_device_train_batch_size or --max_completion_length, "
            "gradient checkpointing on.",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lowers fragmentation."]


def uses_vllm(run, vllm_processes: bool = False) -> bool | None:
    """True / False when the run's arguments (or vLLM processes on its GPUs) say whether it rolls out with vLLM;
    None when nothing says."""
    if vllm_processes:
        return True
    args = run.args if run is not None else {}
    flag = args.get("use_vllm")
    if flag in _TRUE or args.get("vllm_mode") not in (None, "", "None"):
        return flag not in _FALSE
    if flag in _FALSE:
        return False
    if run is not None and any(str(k).startswith("vllm_") for k in run.cli):
        return True   # the user typed a vLLM option
    return None


def _fix(run, vllm: bool | None) -> list[str]:
    vu = run.get("vllm_gpu_memory_utilization") if run is not None else None
    try:
        lower = f" (e.g. to {float(vu) - 0.1:.2g})" if vu is not None and float(vu) > 0.2 else " (e.g. by 0.1)"
    except (TypeError, ValueError):
        lower = " (e.g. by 0.1)"
    # a rollout server holds its own GPUs (full by design): the training GPUs then share nothing with vLLM
    who = "The vLLM rollout server" if run is not None and run.get("vllm_mode") == "server" else "Colocated vLLM"
    reserve = (f"{who} reserves --vllm_gpu_memory_utilization {vu} of each GPU: lower it{lower}"
               if vu is not None else f"{who}: lower --vllm_gpu_memory_utilization{lower}")
    if vllm:
        return [f"{reserve}, add --sleep_level 1, or --offload_model/--offload_optimizer true."] + TRAINING
    if vllm is None:   # not told: the training levers first, vLLM's as a condition
        return TRAINING + [f"If vLLM is colocated with training: {reserve[0].lower()}{reserve[1:]}, or add "
                           "--sleep_level 1."]
    return list(TRAINING)


class GpuMemoryNearFull(GpuRule):
    """GD502: GPU memory at or above 95% of the total."""

    tracker = NearFullTracker

    def live_fix(self, ctx):
        return _fix(ctx.run, uses_vllm(ctx.run))

    def check(self, ctx, path, gpus, all_samples, seq):
        full = [s for s in gpus if s.mem_frac is not None and s.mem_frac >= NEAR_FULL]
        if not full:
            return None
        worst = max(full, key=lambda s: s.mem_frac)
        vllm = any(p.name and "vllm" in p.name.lower() for s in full for p in (s.processes or ()))
        msg = (f"GPU {_ids(full)} at {worst.mem_frac * 100:.0f}% of memory ({_gib(worst.mem_used_mib)} of "
               f"{_gib(worst.mem_total_mib)}): the next allocation spike (a longer completion, the logits of a larger "
               f"batch" + (", a vLLM wake-up" if vllm else "") + ") runs out of memory.")
        if vllm:
            msg += (" vLLM processes hold it: vLLM takes vllm_gpu_memory_utilization of the whole GPU at start, so a "
                    "full GPU is by design for a rollout server, but not for a GPU that also trains.")
        return self.make(message=msg, fix=_fix(ctx.run, uses_vllm(ctx.run, vllm)),
                         evidence=[self.ev(path, row(s), s.line) for s in full[:5]], seq=seq)
