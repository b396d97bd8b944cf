"""The flag table of ms-swift: which `swift rlhf` flags exist from which version (swift-notes §1, §6, §7).

One table for every rule and the preflight. An unknown version reads as a recent one: a fix may name a flag
of a newer version, and says which version it needs where that matters (``note``).
"""
from __future__ import annotations

from .version import MajorMinor

# flag -> (first ms-swift (major, minor) that has it, what to say about it)
ADDED: dict[str, tuple[MajorMinor, str]] = {
    "vllm_max_model_len": ((3, 1), "--vllm_max_model_len exists from ms-swift 3.1"),
    "vllm_gpu_memory_utilization": ((3, 1), "--vllm_gpu_memory_utilization exists from ms-swift 3.1"),
    "sleep_level": ((3, 3), "--sleep_level exists from ms-swift 3.3"),
    "offload_model": ((3, 3), "--offload_model exists from ms-swift 3.3"),
    "offload_optimizer": ((3, 3), "--offload_optimizer exists from ms-swift 3.3"),
    "move_model_batches": ((3, 3), "--move_model_batches exists from ms-swift 3.3"),
    "vllm_server_host": ((3, 4), "server mode (--vllm_server_host) exists from ms-swift 3.4"),
    "vllm_server_timeout": ((3, 4), "--vllm_server_timeout exists from ms-swift 3.4"),
    "vllm_mode": ((3, 5), "--vllm_mode exists from ms-swift 3.5"),
    "vllm_tensor_parallel_size": ((3, 5), "--vllm_tensor_parallel_size exists from ms-swift 3.5"),
    "steps_per_generation": ((3, 5), "--steps_per_generation exists from ms-swift 3.5"),
    "generation_batch_size": ((3, 5), "--generation_batch_size exists from ms-swift 3.5"),
    "advantage_estimator": ((3, 10), "--advantage_estimator exists from ms-swift 3.10"),
    "vllm_enable_lora": ((3, 10), "--vllm_enable_lora exists from ms-swift 3.10"),
    "vllm_server_group_port": ((3, 11), "--vllm_server_group_port exists from ms-swift 3.11"),
    "num_generations_eval": ((3, 12), "--num_generations_eval exists from ms-swift 3.12"),
    "tuner_type": ((4, 0), "--tuner_type is the ms-swift 4.x name; 3.x calls it --train_type"),
    "safe_serialization": ((4, 0), "--safe_serialization is read by ms-swift from 4.0.1; 3.x uses "
                                   "--save_safetensors"),
    "teacher_model": ((4, 4), "--teacher_model for GRPO (on-policy distillation) exists from ms-swift 4.4"),
}


def since(flag: str) -> MajorMinor | None:
    """The first ms-swift version with ``flag``; None for a flag of every GRPO version (or one not in the table)."""
    entry = ADDED.get(flag)
    return entry[0] if entry else None


def flag_exists(version: MajorMinor | None, flag: str) -> bool:
    """Does ``flag`` exist in ms-swift ``version``? An unknown version is taken as a recent one."""
    first = since(flag)
    return version is None or first is None or version >= first
