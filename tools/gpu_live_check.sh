#!/usr/bin/env bash
# Run grpo-doctor's live GPU paths on a machine with an NVIDIA driver (no install: python3 must have
# typer, rich, regex, psutil, nvidia-ml-py, safetensors). Writes what it saw under OUT_DIR:
#   nvml-idle.json      sample_nvml() as JSON, nothing running
#   preflight.json      preflight of the seed-03 7B command with GPU memory from live NVML (no --gpu-mem)
#   watch-report.json   watch of a child that holds most GPU memory and computes nothing for HOLD_S seconds
#   watch-stderr.txt    watch's messages
# Usage: bash tools/gpu_live_check.sh OUT_DIR [HOLD_S]
set -u
out=${1:?usage: gpu_live_check.sh OUT_DIR [HOLD_S]}
hold=${2:-330}
mkdir -p "$out"
python3 - > "$out/nvml-idle.json" <<'PY'
import dataclasses, json
from doctor.sources.gpu import sample_nvml
s = sample_nvml()
print(json.dumps(None if s is None else [dataclasses.asdict(x) for x in s], indent=1, default=str))
PY
NPROC_PER_NODE=1 python3 -m doctor.cli preflight --format json -- swift rlhf --rlhf_type grpo \
  --model Qwen/Qwen2.5-7B-Instruct --tuner_type lora --use_vllm true --vllm_mode colocate \
  --vllm_gpu_memory_utilization 0.8 --deepspeed zero2 --per_device_train_batch_size 2 \
  --gradient_accumulation_steps 4 --num_generations 8 --reward_funcs accuracy format \
  > "$out/preflight.json" 2> "$out/preflight-stderr.txt"
cat > /tmp/hold_gpu.py <<PY
import time, torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(int(free * 0.97), dtype=torch.uint8, device="cuda")  # hold ~97% of the free memory, idle
print(f"holding {x.numel() / 2**30:.1f} GiB of {total / 2**30:.1f} GiB, computing nothing", flush=True)
time.sleep($hold)
PY
python3 -m doctor.cli watch --no-preflight --startup-timeout 60 --gpu-interval 2 --run-dir "$out/run" --report "$out/watch-report.json" \
  -- python3 /tmp/hold_gpu.py 2> "$out/watch-stderr.txt"
echo "watch exit $?"
