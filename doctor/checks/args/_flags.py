"""ms-swift's flag history: flags renamed, removed without a successor, and added in a later version (swift-notes
§1.2, §1.6, §7). GD401 and GD412 explain a rejected or deprecated flag with it; preflight predicts rejections."""
from __future__ import annotations

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
# flags that only newer versions know: (first version, note)
ADDED = {
    "tuner_type": ((4, 0), "--tuner_type is the ms-swift 4.x name; 3.x calls it --train_type"),
    "vllm_mode": ((3, 5), "--vllm_mode exists from ms-swift 3.5"),
    "vllm_server_host": ((3, 4), "server mode (--vllm_server_host) exists from ms-swift 3.4"),
    "steps_per_generation": ((3, 5), "--steps_per_generation exists from ms-swift 3.5"),
    "generation_batch_size": ((3, 5), "--generation_batch_size exists from ms-swift 3.5"),
    "num_generations_eval": ((3, 12), "--num_generations_eval exists from ms-swift 3.12"),
    "advantage_estimator": ((3, 10), "--advantage_estimator exists from ms-swift 3.10"),
    "vllm_enable_lora": ((3, 10), "--vllm_enable_lora exists from ms-swift 3.10"),
    "teacher_model": ((4, 4), "--teacher_model for GRPO (on-policy distillation) exists from ms-swift 4.4"),
    "safe_serialization": ((4, 0), "--safe_serialization is read by ms-swift from 4.0.1; 3.x uses "
                                   "--save_safetensors"),
}
