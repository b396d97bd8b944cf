"""The GPU-memory levers of the FSDP trainers with a colocated vLLM engine (verl and its fork EasyR1), in their own
configuration keys, with the values this run set: ms-swift's ladder (_ladders.py) names flags these frameworks do not
have, so their out-of-memory fixes come from here. Pure: the run's settings in, fix lines out.

Keys, from each framework's configuration: verl ``verl/trainer/config/ppo_trainer.yaml`` (actor_rollout_ref.actor.
ppo_micro_batch_size_per_gpu, use_dynamic_bsz / ppo_max_token_len_per_gpu, fsdp_config.param_offload /
optimizer_offload, actor_rollout_ref.model.enable_gradient_checkpointing, actor_rollout_ref.rollout.
gpu_memory_utilization, data.max_response_length); EasyR1 ``examples/config.yaml`` (hiyouga/EasyR1 at 0243608d:
worker.actor.micro_batch_size_per_device_for_update / _for_experience, worker.actor.model.
enable_gradient_checkpointing, worker.actor.offload.offload_params / offload_optimizer, worker.rollout.
gpu_memory_utilization, data.max_response_length, data.max_pixels)."""
from __future__ import annotations

from typing import Any

from ...values import as_number
from ._facts import _bool

_KEYS = {
    "verl": {
        "micro": ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",),
        "ckpt": "actor_rollout_ref.model.enable_gradient_checkpointing",
        "offload": ("actor_rollout_ref.actor.fsdp_config.param_offload",
                    "actor_rollout_ref.actor.fsdp_config.optimizer_offload"),
        "share": "actor_rollout_ref.rollout.gpu_memory_utilization",
        "length": "data.max_response_length",
    },
    "easyr1": {
        "micro": ("worker.actor.micro_batch_size_per_device_for_update",
                  "worker.actor.micro_batch_size_per_device_for_experience"),
        "ckpt": "worker.actor.model.enable_gradient_checkpointing",
        "offload": ("worker.actor.offload.offload_params", "worker.actor.offload.offload_optimizer"),
        "share": "worker.rollout.gpu_memory_utilization",
        "length": "data.max_response_length",
        "pixels": "data.max_pixels",
    },
}
FRAMEWORKS = frozenset(_KEYS)


def offload_keys(framework: str) -> tuple[str, ...]:
    """The framework's switches that keep parameters and optimizer states in CPU memory."""
    return _KEYS[framework]["offload"]


def share_key(framework: str | None) -> str:
    """The name of the vLLM engine's memory share in the framework's configuration (ms-swift's flag otherwise)."""
    return _KEYS[framework]["share"] if framework in _KEYS else "vllm_gpu_memory_utilization"


def levers(framework: str, args: dict[str, Any]) -> list[str]:
    """The fix lines, most memory first among the cheap ones: smaller micro-batches, a shorter response, the engine's
    share, gradient checkpointing, then CPU offload (slower steps)."""
    keys = _KEYS[framework]
    out: list[str] = []
    micro = [(k, as_number(args.get(k))) for k in keys["micro"]]
    dyn = framework == "verl" and _bool(args.get("actor_rollout_ref.actor.use_dynamic_bsz")) is True
    tokens = as_number(args.get("actor_rollout_ref.actor.ppo_max_token_len_per_gpu"))
    if dyn and tokens and tokens >= 2:
        out.append(f"actor_rollout_ref.actor.ppo_max_token_len_per_gpu={int(tokens) // 2} (was {int(tokens)}): with "
                   f"use_dynamic_bsz each micro-batch is packed up to this many tokens, so half of it halves the "
                   f"activations of a pass.")
    elif any(v for _, v in micro):
        parts = [f"{k}={int(v) // 2} (was {int(v)})" for k, v in micro if v and v >= 2]
        if parts:
            out.append(f"{' and '.join(parts)}: half the sequences in each forward and backward pass, the same batch "
                       f"per update.")
    else:
        out.append(f"A smaller {keys['micro'][0]} (no value of it was read from the inputs): the sequences in each forward and "
                   f"backward pass, the same batch per update.")
    length = as_number(args.get(keys["length"]))
    if length and length >= 1024:
        out.append(f"{keys['length']}={int(length) // 2} (was {int(length)}): activations, logits and the engine's "
                   f"KV cache grow with the response length.")
    pixels = as_number(args.get(keys["pixels"])) if "pixels" in keys else None
    if pixels and pixels > 1_003_520:
        out.append(f"{keys['pixels']}={int(pixels) // 4} (was {int(pixels)}): a quarter of the pixels, about a "
                   f"quarter of each image's tokens.")
    share = as_number(args.get(keys["share"]))
    if share is not None and share > 0.4:
        out.append(f"{keys['share']}={round(share - 0.2, 2):g} (was {share:g}): the colocated vLLM engine keeps this "
                   f"share of each GPU; less of it leaves the update more room (and the engine a smaller KV cache).")
    if _bool(args.get(keys["ckpt"])) is not True:
        was = " (was False)" if _bool(args.get(keys["ckpt"])) is False else " (the inputs do not show it set)"
        out.append(f"{keys['ckpt']}=True{was}: activations recomputed in the backward pass instead of kept.")
    off = [k for k in keys["offload"] if _bool(args.get(k)) is not True]
    if off:
        out.append(f"{' and '.join(k + '=True' for k in off)}: parameters and optimizer states in CPU memory between "
                   f"updates (slower steps, much less GPU memory).")
    return out
