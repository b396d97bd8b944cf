"""Benchmark: peak RSS of `grpo-doctor watch` under a flood of child output (issue 30 point 8).

A child writes MB megabytes of log-like lines (each line different, 1 MiB writes) as fast as the pipe takes them;
watch passes them through to /dev/null and tees them to its console log in a scratch folder. Prints watch's peak RSS
(VmHWM of the watch process, read until it exits), the wall time, the bytes the analysis skipped and whether the
console log holds every byte. Asserts nothing.

Usage: python bench/bench_watch_flood.py [MB] [SCRATCH_DIR]      (default 1024 MB, a temporary folder)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import os, sys
mb = int(sys.argv[1])
line = b"{'loss': 0.0123, 'grad_norm': 0.4567, 'learning_rate': 1e-06, 'reward': 0.5, 'completion_length': 256.0} %08d\n"
per = (1 << 20) // len(line % 0)
n = 0
for i in range(mb):
    block = b"".join(line % (n + k) for k in range(per))
    n += per
    view = memoryview(block)
    while view:
        view = view[os.write(1, view):]
'''


def hwm(pid: int) -> int:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith("VmHWM:"):
                return int(ln.split()[1]) << 10
    except OSError:
        pass
    return 0


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    with tempfile.TemporaryDirectory(dir=sys.argv[2] if len(sys.argv) > 2 else None) as d:
        child = Path(d) / "flood.py"
        child.write_text(CHILD)
        cmd = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0", "--run-dir", d,
               "--", sys.executable, str(child), str(mb)]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        peak = 0
        while p.poll() is None:
            peak = max(peak, hwm(p.pid))
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode("utf-8", "replace") if p.stderr else ""
        rep_path = Path(d) / "grpo-doctor-report.json"
        skipped = json.loads(rep_path.read_text())["run"]["watch"]["analysis_skipped_bytes"] if rep_path.exists() else None
        size = (Path(d) / "grpo-doctor-console.log").stat().st_size
    print(f"flood {mb} MB: watch exit {p.returncode}, peak RSS {peak / 2**20:.0f} MiB (VmHWM, sampled every 20 ms), "
          f"wall {wall:.1f} s, analysis skipped {skipped} bytes, console log {size} bytes")
    notes = [ln for ln in err.splitlines() if "skipp" in ln or "fell behind" in ln]
    print(f"{len(notes)} line(s) about skipping:", *notes[:8], sep="\n  ")


if __name__ == "__main__":
    main()
