"""The GPU-memory levers of OpenRLHF's PPO/GRPO trainers (DeepSpeed actor and critic, vLLM engines), in its own flags,
with the values this run set: ms-swift's ladder names flags OpenRLHF does not have. Pure: the run's settings in, fix
lines out.

Flags, from ``openrlhf/cli/train_ppo_ray.py`` (OpenRLHF/OpenRLHF at 021d1b09; `train_ppo.py` has the same batch,
length, ZeRO and offload flags): --micro_train_batch_size (per GPU, default 4), --micro_rollout_batch_size (default
8), --generate_max_len (default 1024), --zero_stage (default 2), --gradient_checkpointing, --adam_offload,
--ref_reward_offload, --vllm_gpu_memory_utilization (0.95), --colocate_all_models with --vllm_enable_sleep and
--deepspeed_enable_sleep (their help: sleep mode when colocating)."""
from __future__ import annotations

from typing import Any

from ...values import as_number
from ._facts import _bool


def levers(args: dict[str, Any]) -> list[str]:
    """The fix lines, the cheap ones first: smaller micro-batches, a shorter generation, ZeRO-3, gradient
    checkpointing, the colocated engine's share and sleep, then CPU offload (slower steps)."""
    out: list[str] = []
    micro = [(k, as_number(args.get(k))) for k in ("micro_train_batch_size", "micro_rollout_batch_size")]
    halved = [f"--{k} {int(v) // 2} (was {int(v)})" for k, v in micro if v and v >= 2]
    if halved:
        out.append(f"{' and '.join(halved)}: half the sequences in each forward and backward pass; --train_batch_size "
                   f"and --rollout_batch_size keep the batch per update.")
    elif not any(v for _, v in micro):
        out.append("A smaller --micro_train_batch_size and --micro_rollout_batch_size (no value of them was read from "
                   "the inputs; OpenRLHF's defaults are 4 and 8): the sequences in each forward and backward pass.")
    length = as_number(args.get("generate_max_len"))
    if length and length >= 1024:
        out.append(f"--generate_max_len {int(length) // 2} (was {int(length)}): activations and logits grow with the "
                   f"length of the generated responses.")
    stage = as_number(args.get("zero_stage"))
    if stage is None or stage < 3:
        was = f"was {int(stage)}" if stage is not None else "no --zero_stage was read; OpenRLHF's default is 2"
        out.append(f"--zero_stage 3 ({was}): parameters, gradients and optimizer states sharded over the GPUs instead "
                   f"of replicated.")
    if _bool(args.get("gradient_checkpointing")) is not True:
        out.append("--gradient_checkpointing (not among the flags read): activations recomputed in the backward pass "
                   "instead of kept.")
    if _bool(args.get("colocate_all_models")) is True:
        share = as_number(args.get("vllm_gpu_memory_utilization"))
        if share is not None and share > 0.4:
            out.append(f"--vllm_gpu_memory_utilization {round(share - 0.2, 2):g} (was {share:g}): the colocated vLLM "
                       f"engines keep this share of each GPU.")
        asleep = [f for f in ("vllm_enable_sleep", "deepspeed_enable_sleep") if _bool(args.get(f)) is not True]
        if asleep:
            out.append(f"{' '.join('--' + f for f in asleep)}: with --colocate_all_models the engines and the "
                       f"DeepSpeed models release their GPU memory while the other side runs.")
    off = [f for f in ("adam_offload", "ref_reward_offload") if _bool(args.get(f)) is not True]
    if off:
        out.append(f"{' '.join('--' + f for f in off)}: the Adam states (and the reference and reward models between "
                   f"their passes) in CPU memory (slower steps, much less GPU memory).")
    return out
