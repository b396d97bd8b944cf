"""Every failure and fix in the five seed articles (../shared/seeds) is named, with the seed's fix.

The inputs are the seeds' own commands and the error texts they quote (the articles hold no full logs),
combined with real ms-swift log lines where a log is needed. Checkpoint bloat (seed 01, 15 GB -> 43 GB)
is a checkpoint-directory finding, covered by check-ckpt (issue 4), not by a log line.
"""
from __future__ import annotations

from doctor.analyze import analyze


def run(tmp_path, log: str, command: str | None = None) -> list[dict]:
    (tmp_path / "train.log").write_text(log, encoding="utf-8")
    if command is not None:
        (tmp_path / "command.txt").write_text(command, encoding="utf-8")
    return analyze([str(tmp_path)]).to_json()["findings"]


SEED02_CMD = """CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \\
NPROC_PER_NODE=3 \\
swift rlhf \\
--rlhf_type grpo \\
--model /DeepSeek_32B \\
--reward_funcs accuracy \\
--use_vllm true \\
--vllm_mode colocate \\
--train_type lora \\
--torch_dtype bfloat16 \\
--per_device_train_batch_size 1 \\
--per_device_eval_batch_size 1 \\
--gradient_accumulation_steps 1 \\
--num_generations 8 \\
--deepspeed zero3
"""


def test_seed02_train_divisibility_with_the_seeds_wording(tmp_path):
    f = run(tmp_path, "ValueError: The effective train batch size must be evenly divisible by the number of "
                      "generations per prompt\n", SEED02_CMD)
    assert f[0]["category"] == "batch-divisibility"
    fix = " ".join(f[0]["fix"])
    # 3 processes x 1 x 1 = 3 completions; the seed's fix is gradient accumulation: 8 gives 24, divisible by 8
    assert "3 x per_device_train_batch_size 1" in fix and "--gradient_accumulation_steps 8" in fix


def test_seed02_eval_divisibility(tmp_path):
    f = run(tmp_path, "ValueError: The effective eval batch size must be evenly divisible by the number of "
                      "generations per prompt\n", SEED02_CMD)
    assert f[0]["category"] == "eval-batch-divisibility"
    # the seed: per_device_eval_batch_size = num_generations = 8; with 3 processes 8 works (24 % 8 == 0)
    assert "--per_device_eval_batch_size 8" in " ".join(f[0]["fix"])


def test_seed02_gpus_left_idle(tmp_path):
    f = run(tmp_path, "[INFO:swift] Global seed set to 42\n", SEED02_CMD)
    idle = [x for x in f if x["category"] == "gpu-underutilized"]
    assert idle and "5" in idle[0]["message"] and "NPROC_PER_NODE=8" in " ".join(idle[0]["fix"])


SEED03_CMD = """CUDA_VISIBLE_DEVICES=0,1,2,3 NPROC_PER_NODE=4 swift rlhf --rlhf_type grpo --model Qwen/Qwen2-7B-Instruct \\
 --train_type lora --lora_rank 8 --lora_alpha 32 --per_device_train_batch_size 2 --gradient_accumulation_steps 8 \\
 --num_generations 8 --deepspeed zero2 --use_vllm true --vllm_gpu_memory_utilization 0.8 --torch_dtype bfloat16
"""


def test_seed03_oom_ladder_from_the_run(tmp_path):
    log = ('[rank1]:   File "/x/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py", line 900, in compute_loss\n'
           "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.20 GiB. GPU 1 has a total "
           "capacity of 23.69 GiB of which 512.00 MiB is free.\n")
    f = run(tmp_path, log, SEED03_CMD)
    assert f[0]["category"] in ("cuda-oom", "vllm-oom-or-kv-cache")
    fix = " ".join(f[0]["fix"])
    assert "zero3" in fix  # the seed's decisive change: ZeRO-2 -> ZeRO-3
    assert "vllm_gpu_memory_utilization" in fix


SEED04_CMD = """NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-VL-72B-Instruct --train_type lora \\
 --torch_dtype bfloat16 --per_device_train_batch_size 1 --gradient_accumulation_steps 1 \\
 --deepspeed zero3_offload --use_vllm true --tensor_parallel_size 8 --num_generations 8
"""


def test_seed04_hang_at_start_with_vl_advice(tmp_path):
    log = ("[INFO:swift] rank: 0, local_rank: 0, world_size: 8, local_world_size: 8\n"
           "[INFO:swift] model_kwargs: {'device_map': None}\n"
           "[INFO:swift] model_parameter_info: PeftModelForCausalLM: 73400.0000M Params (104.0000M Trainable "
           "[0.1417%]), 0.0000M Buffers.\n")
    f = run(tmp_path, log, SEED04_CMD)
    hang = [x for x in f if x["category"] == "hang-at-start"]
    assert hang, f
    text = hang[0]["message"] + " ".join(hang[0]["fix"])
    assert "MAX_PIXELS" in text and "vllm_gpu_memory_utilization" in text


def test_seed05_full_run_saved_adapter(tmp_path):
    log = ("run sh: `python /x/site-packages/swift/cli/rlhf.py --rlhf_type grpo --model /sft/checkpoint-100-merged "
           "--train_type full --load_args true`\n"
           "[INFO:swift] Successfully loaded /sft/checkpoint-100-merged/args.json.\n"
           "[INFO:swift] args: RLHFArguments(\n"
           "train_type=lora,\n"
           ")\n"
           "[INFO:swift] model_parameter_info: PeftModelForCausalLM: 8292.1667M Params (20.1851M Trainable "
           "[0.2434%]), 0.0000M Buffers.\n")
    f = run(tmp_path, log)
    assert f[0]["category"] == "checkpoint-adapter-only-load-args"
    assert "--load_args false" in " ".join(f[0]["fix"])


def test_seed01_device_mismatch_fixes_mapped_to_version(tmp_path):
    log = ('[INFO:swift] swift.__version__: 3.8.0\n'
           "[rank0]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:1 and cuda:0!\n")
    f = run(tmp_path, log)
    assert f[0]["category"] == "device-mismatch"
    fix = " ".join(f[0]["fix"])
    assert "vllm_mode" in fix          # --vllm_device no longer exists in 3.8
    assert "flash_attn" in fix or "flash-attn" in fix


def test_seed01_output_quality_settings(tmp_path):
    log = ("[INFO:swift] args: RLHFArguments(\nnum_generations=2,\ntemperature=0.2,\n)\n"
           "{'loss': 0.01, 'grad_norm': 0.5, 'reward': 0.5, 'reward_std': 0.3, 'global_step/max_steps': '1/10'}\n")
    f = run(tmp_path, log)
    cats = {(x["rule_id"], x["severity"]) for x in f}
    assert any(c[1] == "warning" for c in cats)
    slugs = " ".join(x["slug"] + x["message"] for x in f)
    assert "num_generations" in slugs and "temperature" in slugs
    assert all(x["severity"] != "error" for x in f)
