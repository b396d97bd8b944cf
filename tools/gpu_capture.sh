#!/usr/bin/env bash
# Capture real GPU state outputs for fixtures: nvidia-smi in the formats people save, and a raw
# pynvml dump, once idle and once under load (a torch matmul loop holding memory).
# Usage: bash tools/gpu_capture.sh OUT_DIR     (on a machine with an NVIDIA driver)
set -u
out=${1:?usage: gpu_capture.sh OUT_DIR}
mkdir -p "$out"
snap() {  # $1 = label
  nvidia-smi > "$out/table-$1.txt" 2>&1
  nvidia-smi -q > "$out/query-$1.txt" 2>&1
  nvidia-smi --query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw,power.limit,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total,retired_pages.pending --format=csv > "$out/csvgpu-$1-header-units.txt" 2>&1
  nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits > "$out/csvgpu-$1-noheader-nounits.txt" 2>&1
  nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv > "$out/csvapps-$1.txt" 2>&1
  python3 "$(dirname "$0")/nvml_dump.py" > "$out/nvml-$1.json" 2>&1
}
snap idle
python3 - <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(int(30 * 2**30), dtype=torch.uint8, device="cuda")  # 30 GiB held
t = time.time()
while time.time() - t < 40:
    y = x @ x
torch.cuda.synchronize()
PY
load=$!
sleep 20
snap load
wait $load
