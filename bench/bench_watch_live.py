"""Benchmark: live analysis of a dense run at N x its real output rate (issue 19 point 5, issue 18 point 13).

A child replays a real healthy GRPO log (fixtures/logs/real-grpo-lora-healthy/log.txt) RATE times faster than it
was written, SECONDS long, through `grpo-doctor watch`. Prints the pass-through time against the child's own
time, the bytes the analysis skipped to keep up (0: it kept up) and watch's CPU. Asserts nothing.

Usage: python bench/bench_watch_live.py [RATE] [SECONDS]      (default 10 x, 60 s)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures/logs/real-grpo-lora-healthy/log.txt"
# ASSUMED wall time of the fixture run for its bytes (a short LoRA GRPO run); pass RATE to scale
REAL_SECONDS = 600.0

CHILD = r'''
import os, sys, time
data = open(sys.argv[1], "rb").read()
rate = len(data) / float(sys.argv[2])       # bytes per second at N x real time
end = time.monotonic() + float(sys.argv[3])
t0 = time.monotonic(); sent = 0
while time.monotonic() < end:
    for line in data.splitlines(keepends=True):
        os.write(1, line)
        sent += len(line)
        ahead = sent / rate - (time.monotonic() - t0)
        if ahead > 0.01:
            time.sleep(ahead)
        if time.monotonic() >= end:
            break
print(f"child wrote {sent} bytes in {time.monotonic() - t0:.1f} s", file=sys.stderr)
'''


def main() -> None:
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    with tempfile.TemporaryDirectory() as d:
        child = Path(d) / "child.py"
        child.write_text(CHILD)
        cmd = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0", "--run-dir", d,
               "--", sys.executable, str(child), str(LOG), str(REAL_SECONDS / rate), str(seconds)]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        me = psutil.Process(p.pid)
        cpu = 0.0
        while p.poll() is None:
            try:
                ct = me.cpu_times()
                cpu = ct.user + ct.system
            except psutil.Error:
                pass
            time.sleep(0.2)
        took = time.perf_counter() - t0
        err = p.stderr.read().decode("utf-8", "replace")
        rep = json.loads((Path(d) / "grpo-doctor-report.json").read_text())
        w = rep["run"]["watch"]
        print(f"rate {rate:g} x real ({LOG.stat().st_size / (REAL_SECONDS / rate) / 1e6:.2f} MB/s), {seconds:g} s run")
        print(f"watch wall {took:.1f} s (child {seconds:g} s), watch CPU {cpu:.1f} s ({100 * cpu / took:.0f}% of a core)")
        print(f"analysis skipped {w.get('analysis_skipped_bytes', 0)} bytes; analysis error: {w.get('analysis_error')}")
        print("\n".join(ln for ln in err.splitlines() if "child wrote" in ln or "skipped" in ln))


if __name__ == "__main__":
    main()
