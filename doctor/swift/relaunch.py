"""Writing a ``swift rlhf`` command line back: the run's own launch with corrected flags, and the resume form.

What ms-swift / transformers do on resume, written once here:

- ``--resume_from_checkpoint DIR`` is transformers' ``TrainingArguments`` field (every ms-swift 3.x/4.x release
  inherits it); ``Trainer._load_from_checkpoint`` loads the weights, then ``_load_optimizer_and_scheduler`` and
  ``_load_rng_state`` the rest of the state (transformers 4.45-5.x ``trainer.py``).
- A checkpoint stays valid for a run whose corrected flags keep the weights' shape and the optimizer state's
  layout. It does not when the fix changes the model, the tuner (full vs LoRA: ``adapter_model.safetensors``
  against ``model*.safetensors``), the LoRA shape (``lora_rank``, ``lora_alpha``, ``target_modules``), the dtype,
  or the DeepSpeed stage / world size (ZeRO writes one optimizer shard per rank in ``global_stepN/``, loaded by
  DeepSpeed ``engine.load_checkpoint`` for the same stage and data-parallel size: DeepSpeed 0.14-0.18
  ``runtime/engine.py``, which refuses another layout without a universal checkpoint).
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

RESUME_FLAG = "--resume_from_checkpoint"

# flags whose change makes the saved state unusable for --resume_from_checkpoint (module doc)
INVALIDATING_FLAGS = frozenset({
    "model", "model_type", "adapters", "tuner_type", "train_type", "lora_rank", "lora_alpha", "lora_dropout",
    "target_modules", "torch_dtype", "deepspeed", "fsdp", "NPROC_PER_NODE", "NNODES", "CUDA_VISIBLE_DEVICES",
})

# the environment variables of a launch worth writing back (what ms-swift and torchrun read)
LAUNCH_ENV = ("NPROC_PER_NODE", "NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
              "MAX_PIXELS", "VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES", "PYTORCH_CUDA_ALLOC_CONF")


def _value_tokens(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _value_tokens(v)]
    if isinstance(value, dict):
        return [json.dumps(value)]
    return [str(value)]


def name_of(flag: str) -> str:
    """'--vllm-gpu-memory-utilization' -> 'vllm_gpu_memory_utilization'; 'NPROC_PER_NODE' stays."""
    return flag[2:].replace("-", "_") if flag.startswith("--") else flag


def invalidates(changed: Iterable[str]) -> bool:
    """True when changing these flags (names with or without ``--``) makes a checkpoint unusable for resume."""
    return any(name_of(f) in INVALIDATING_FLAGS for f in changed)


def command_line(env: Mapping[str, str], flags: Mapping[str, Any], changes: Iterable[tuple[str, str]] = (),
                 resume: str | None = None, subcommand: str = "rlhf") -> str:
    """``ENV=v swift rlhf --flag value ...`` with ``changes`` applied (``("--flag", "value")`` replaces or adds a
    flag, ``("NAME", "value")`` an environment variable; a value of ``""`` drops the flag) and, with ``resume``,
    ``--resume_from_checkpoint DIR`` in place of any earlier one. Every token is shell-quoted."""
    env_out = {k: str(v) for k, v in env.items() if k in LAUNCH_ENV}
    flags_out: dict[str, Any] = {name_of("--" + k) if not k.startswith("--") else name_of(k): v
                                 for k, v in flags.items()}
    for flag, value in changes:
        if flag.startswith("--"):
            if value == "":
                flags_out.pop(name_of(flag), None)
            else:
                flags_out[name_of(flag)] = value.split() if " " in value.strip() else value
        elif value == "":
            env_out.pop(flag, None)
        else:
            env_out[flag] = value
    flags_out.pop("resume_from_checkpoint", None)
    if resume:
        flags_out["resume_from_checkpoint"] = resume
    parts = [f"{k}={shlex.quote(v)}" for k, v in env_out.items()]
    parts += ["swift", subcommand]
    for k, v in flags_out.items():
        parts.append(f"--{k}")
        parts += [shlex.quote(t) for t in _value_tokens(v)]
    return " ".join(parts)


__all__ = ["INVALIDATING_FLAGS", "LAUNCH_ENV", "RESUME_FLAG", "command_line", "invalidates", "name_of"]
