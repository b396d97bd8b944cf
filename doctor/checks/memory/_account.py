"""Where the GPU's memory went when the training process ran out (GD201): an account with read / computed / assumed
marks, and the fixes ordered by it.

PyTorch's OOM message (c10/cuda/CUDACachingAllocator.cpp, torch 2.1-2.8) gives the GPU's total capacity, what is
free, what this process holds, what PyTorch's allocator holds in tensors ("allocated by PyTorch") and what it keeps
reserved but unallocated. That is read. What the tensors are follows from the run's configuration when it is known:
- the training state: weights + gradients + Adam states, 16 bytes per parameter for full fine-tuning in bf16 with fp32
  master weights and moments, 2 bytes per frozen parameter for LoRA, divided by the ZeRO stage's sharding
  (``_ladders.training_state_gb``; DeepSpeed ZeRO paper's accounting);
- a colocated vLLM engine that is not put to sleep: vllm_gpu_memory_utilization x the GPU's capacity for its weights
  and KV cache, in the same process (vLLM ``gpu_worker.py`` sizes its share from that fraction);
- the rest of PyTorch's tensors: activations, logits and the generated sequences of the batch.
Each part is computed only from values read (the model's parameter count written in its name, e.g. ``7B``; the
flags) or marked assumed (a framework default); when the parts do not add up (more than PyTorch holds), none is shown.
The fixes are then ordered so that the levers on the largest part come first, and a fragmentation lever
(expandable_segments) goes last when what is reserved but unallocated is smaller than the request.
"""
from __future__ import annotations

from typing import Any

from ...swift.trainer_kind import GROUP_KINDS
from .._numbers import ASSUMED, COMPUTED, READ, mark
from ._facts import Facts, fmt_gib
from ._ladders import training_state_gb

GIB = 1.073741824  # GB per GiB
_CLASSES = {
    "state": ("--deepspeed", "zero3", "ZeRO-3", "DeepSpeed", "LoRA", "tuner_type", "train_type", "peft_config",
              "--beta 0", "offload_optimizer"),
    "vllm": ("vllm_gpu_memory_utilization", "sleep_level", "vllm_max_model_len", "vllm_enable_sleep_mode",
             "colocated", "vllm_mode"),
    "batch": ("per_device_train_batch_size", "max_completion_length", "gradient_checkpointing", "MAX_PIXELS",
              "num_generations"),
}


def _parts(f: Facts, oom: dict[str, Any]) -> list[tuple[str, str, float, str]]:
    """(key, what, GiB, how) of the tensors PyTorch holds, when the configuration gives them; [] otherwise."""
    held, total = oom.get("by_torch"), oom.get("total")
    if not held or not f.params:
        return []
    tuner_how = READ if f.tuner is not None else ASSUMED
    state = training_state_gb(f, f.zero, f.offload_ds)
    if state is None:
        return []
    tuner = (f.tuner or "lora").lower()
    zero = f"ZeRO-{f.zero}" if f.zero else "no ZeRO sharding"
    how = COMPUTED if tuner_how == READ and f.world is not None else ASSUMED
    parts = [("state", f"training state ({f.params:g}B parameters, from the model's name; {tuner} "
                       f"{mark('tuning', tuner_how)}, {zero})", state / GIB, how)]
    if f.colocate and not f.sleep and total:
        parts.append(("vllm", f"colocated vLLM's share (vllm_gpu_memory_utilization {f.util_text()} x {fmt_gib(total)})",
                      f.util * total if f.util else 0.0, COMPUTED if f.util_set else ASSUMED))
    if total and parts[0][2] > total:
        return parts[:1]  # the training state alone exceeds the card: the one part worth naming
    rest = held - sum(p[2] for p in parts)
    if rest < 0:
        return []  # the parts exceed what PyTorch holds: the configuration read is not the whole story
    worst = ASSUMED if any(p[3] == ASSUMED for p in parts) else COMPUTED
    parts.append(("batch", "activations, logits and generated sequences of the batch, and a reference model if any (the rest)", rest, worst))
    return parts


def account(f: Facts, oom: dict[str, Any], limited: bool = False, loading: bool = False) -> tuple[str, str | None]:
    """(the account sentence, the key of its largest part or None). ``limited``: a cap or other processes limited
    the allocation (_limits.py), so the tensors are not said to exceed the card. ``loading``: the allocation moved the
    model's weights to the GPU, before any step (no gradients, optimizer states or activations yet)."""
    held, total, req = oom.get("by_torch"), oom.get("total"), oom.get("alloc")
    if not held or not total:
        return "", None
    bits = [f"{fmt_gib(held)} of the GPU's {fmt_gib(total)} were PyTorch tensors of this process"]
    un = oom.get("unalloc")
    if un is None and oom.get("reserved"):
        un = oom["reserved"] - held  # torch < 2.1: "reserved in total by PyTorch"
    if un is not None:
        frag = f"{fmt_gib(un)} reserved but unallocated"
        if req and un < req:
            frag += f", less than the {fmt_gib(req)} requested: fragmentation is not the cause"
        bits.append(frag)
    in_use = oom.get("in_use")
    if in_use and un is not None and in_use - held - un > 0.2:
        bits.append(f"{fmt_gib(in_use - held - un)} (computed) in the process outside PyTorch's allocator (CUDA "
                    f"context, NCCL buffers{', a sleep-mode vLLM pool' if f.colocate and f.sleep else ''})")
    if in_use and oom.get("free") is not None and total - oom["free"] - in_use > 0.5:
        bits.append(f"{fmt_gib(total - oom['free'] - in_use)} (computed) held by other processes on this GPU")
    text = "Account (read from the message): " + "; ".join(bits) + "."
    parts = _parts(f, oom)
    if parts:
        text += (" Of those tensors: " + "; ".join(f"{what} ≈ {mark(fmt_gib(gib), how)}" for _, what, gib, how in parts)
                 + ".")
        big = max(parts, key=lambda p: p[2])
        if big[2] > total:
            return text + f" The training state alone exceeds the {fmt_gib(total)} card: sharding it (ZeRO-3) or " \
                          "training LoRA comes first.", big[0]
        return text + f" The largest part is the {big[1].split(' (')[0]}: its levers come first.", big[0]
    if limited:
        return text, None
    if loading:
        return text + (" The model was being moved to the GPU, so this allocation was weights: those tensors are "
                       "this model's weights moved so far, those of any model placed on this GPU before it (in RLHF "
                       "the actor, reference, reward and critic models), and whatever an earlier phase of the same "
                       "process left there (a finished training's state, if it was not freed)."), None
    # the GRPO part holds only where a rollout engine can sit beside the trainer (a supervised or preference run
    # generates nothing)
    grpo = (" (in GRPO also the logits of the batch of completions and, with a colocated vLLM engine, vLLM's weights "
            "and KV cache)") if f.vllm_possible and (f.trainer is None or f.trainer in GROUP_KINDS) else ""
    text += (" In a training process those tensors are the model's weights, gradients and optimizer states and the "
             f"activations of the batch{grpo}: together they exceed the card (no model size or "
             "flags that would split this were read).")
    return text, None


def order(fix: list[str], big: str | None, oom: dict[str, Any]) -> list[str]:
    """The levers on the largest part first (stable otherwise); expandable_segments last when fragmentation is
    smaller than the request."""
    def rank(line: str) -> int:
        if "expandable_segments" in line and oom.get("unalloc") is not None and oom.get("alloc") \
                and oom["unalloc"] < oom["alloc"]:
            return 2
        if big and any(k in line for k in _CLASSES[big]):
            return 0
        return 1
    return sorted(fix, key=rank)
