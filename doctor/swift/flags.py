"""The flag table of ms-swift: flags renamed, removed and added, by version (swift-notes §1.2, §1.6, §7).

One table for every rule and the preflight. An unknown version reads as a recent one: a fix may name a flag
of a newer version, and says which version it needs where that matters (``note``).
"""
from __future__ import annotations

from .version import MajorMinor

# old name -> (new name, why). swift-notes §1.2, §1.6, §7.
RENAMED = {
    "train_type": ("tuner_type", "ms-swift 4.0 renamed --train_type to --tuner_type; 4.0.x still accepted the old "
                                 "name with a deprecation warning, 4.1 removed it"),
    "gpu_memory_utilization": ("vllm_gpu_memory_utilization", "renamed to the vllm_* name in 3.7; the old name was "
                                                              "accepted until 3.9 and removed in 3.10"),
    "tensor_parallel_size": ("vllm_tensor_parallel_size", "renamed to the vllm_* name (3.5/3.7); the old name was "
                                                          "removed in 3.10"),
    "limit_mm_per_prompt": ("vllm_limit_mm_per_prompt", "renamed to the vllm_* name in 3.7; the old name was removed "
                                                        "in 3.10"),
    "data_parallel_size": ("vllm_data_parallel_size", "renamed to the vllm_* name in 3.7; the old name was removed "
                                                      "in 3.10"),
    "use_async_engine": ("vllm_use_async_engine", "renamed to the vllm_* name in 3.7; the old name was removed in "
                                                  "3.10"),
    "multi_turn_func": ("multi_turn_scheduler", "removed in 3.10; multi-turn rollouts are configured with "
                                                "--multi_turn_scheduler (3.6+)"),
}
# flags that disappeared without a one-to-one successor
REMOVED = {
    "vllm_device": "removed in ms-swift 3.6 (deprecated in 3.5): vLLM no longer gets a GPU by index",
    "num_infer_workers": "removed in ms-swift 3.6 (deprecated in 3.5) together with the 3.2-3.4 async GPU split",
    "gc_collect_after_offload": "removed in ms-swift 3.10; drop it",
    "lmdeploy_device": "removed with the LMDeploy rollout backend; use vLLM (--use_vllm true --vllm_mode ...)",
    "use_lmdeploy": "removed with the LMDeploy rollout backend; use vLLM (--use_vllm true --vllm_mode ...)",
}
# flag -> first ms-swift (major, minor) that no longer accepts it (swift-notes §7); ADDED below gives the other side.
# The preflight's unknown-flag check and the relaunch command (doctor/swift/fixcheck.py) read it.
REMOVED_IN: dict[str, MajorMinor] = {
    "train_type": (4, 1), "gpu_memory_utilization": (3, 10), "tensor_parallel_size": (3, 10),
    "limit_mm_per_prompt": (3, 10), "data_parallel_size": (3, 10), "use_async_engine": (3, 10),
    "multi_turn_func": (3, 10), "gc_collect_after_offload": (3, 10), "vllm_device": (3, 6),
    "num_infer_workers": (3, 6)}

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
