"""Benchmark: live analysis of a dense run at N x its real output rate (issue 19 point 5, issue 18 point 13).

A child replays a real healthy GRPO log (fixtures/logs/real-grpo-lora-healthy/log.txt, line by line, over and
over) at RATE x DENSE bytes per second for SECONDS through `grpo-doctor watch`. DENSE is an ASSUMED real output
rate of a dense run (8 ranks each printing tqdm redraws, metric dicts and vLLM lines: 100 KB/s), not a measured
one. Prints the pass-through time against the child's own time, the bytes the analysis skipped to keep up (0: it
kept up) and watch's CPU. Asserts nothing.

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
DENSE = 100_000.0   # bytes per second: ASSUMED output rate of a dense 8-rank run

CHILD = r'''
import os, sys, time
data = open(sys.argv[1], "rb").read()
rate = float(sys.argv[2])                   # bytes per second
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
               "--", sys.executable, str(child), str(LOG), str(DENSE * rate), str(seconds)]
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
        print(f"rate {rate:g} x an assumed dense run ({DENSE * rate / 1e6:.2f} MB/s), {seconds:g} s run")
        print(f"watch wall {took:.1f} s (child {seconds:g} s), watch CPU {cpu:.1f} s ({100 * cpu / took:.0f}% of a core)")
        print(f"analysis skipped {w.get('analysis_skipped_bytes', 0)} bytes; analysis error: {w.get('analysis_error')}")
        print("\n".join(ln for ln in err.splitlines() if "child wrote" in ln or "skipped" in ln))


if __name__ == "__main__":
    main()
