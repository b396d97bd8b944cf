"""Benchmark `grpo-doctor watch`: pass-through throughput against `cat`, the CPU watch uses during a run,
and hang detection latency. Prints figures; asserts nothing (speed is not a unit test).

Usage: python bench/bench_watch.py [SIZE_MB]     (default 200)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures/logs/real-grpo-lora-healthy/log.txt"
HANG_LOG = ROOT / "fixtures/logs/real-hang-cut-after-step-3/log.txt"
CHILD = ROOT / "tests/children/child.py"
WATCH = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0"]


def build(path: Path, size_mb: int) -> int:
    body = LOG.read_bytes()
    n = 0
    with open(path, "wb") as f:
        while n < size_mb * 1024 * 1024:
            f.write(body)
            n += len(body)
    return n


def drain(cmd: list[str], size: int) -> tuple[float, float, float]:
    """(seconds until the last byte reached our stdout, seconds until exit, CPU seconds of the top process)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    me = psutil.Process(p.pid)
    cpu = [0.0]

    def sample():
        while p.poll() is None:
            try:
                ct = me.cpu_times()
                cpu[0] = ct.user + ct.system
            except psutil.Error:
                return
            time.sleep(0.05)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    got = 0
    last = t0
    fd = p.stdout.fileno()
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        got += len(b)
        if got >= size:
            last = time.perf_counter()
    p.wait()
    end = time.perf_counter()
    assert got == size, (got, size)
    return last - t0, end - t0, cpu[0]


def throughput(size_mb: int, tmp: Path) -> None:
    big = tmp / "big.log"
    size = build(big, size_mb)
    mb = size / 1e6
    c_last, _c_end, _ = drain(["cat", str(big)], size)
    w_last, w_end, w_cpu = drain(WATCH + ["--run-dir", str(tmp / "run"), "--", "cat", str(big)], size)
    print(f"pass-through, {mb:.0f} MB of a real GRPO console log (line-oriented text):")
    print(f"  cat alone:               {c_last:6.2f} s  {mb / c_last:8.1f} MB/s")
    print(f"  watch -- cat (last byte): {w_last:6.2f} s  {mb / w_last:8.1f} MB/s")
    print(f"  watch -- cat (exit, analysis done): {w_end:6.2f} s  {mb / w_end:8.1f} MB/s (analysis rate); "
          f"watch CPU {w_cpu:.1f} s")


def watch_cpu(cmd: list[str]) -> tuple[float, float]:
    """(CPU seconds of the watch process itself, wall seconds)."""
    p = subprocess.Popen(WATCH + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    me = psutil.Process(p.pid)
    cpu = 0.0
    t0 = time.perf_counter()
    while p.poll() is None:
        try:
            ct = me.cpu_times()
            cpu = ct.user + ct.system
        except psutil.Error:
            break
        time.sleep(0.1)
    return cpu, time.perf_counter() - t0


def cpu_during_run(tmp: Path, seconds: float = 30.0) -> None:
    """A child printing the real healthy log at ~1 line / 10 ms for `seconds`: how much CPU does watch take?"""
    script = tmp / "slow.py"
    script.write_text(
        "import sys, time\n"
        f"lines = open({str(LOG)!r}, 'rb').read().splitlines(keepends=True)\n"
        f"end = time.time() + {seconds}\n"
        "i = 0\n"
        "while time.time() < end:\n"
        "    sys.stdout.buffer.write(lines[i % len(lines)]); sys.stdout.flush(); i += 1; time.sleep(0.01)\n")
    start_cpu, _ = watch_cpu(["--run-dir", str(tmp / "run1"), "--", "true"])
    idle_cpu, idle_wall = watch_cpu(["--gpu-interval", "10", "--run-dir", str(tmp / "run3"), "--", "sleep", str(seconds)])
    cpu, wall = watch_cpu(["--gpu-interval", "10", "--run-dir", str(tmp / "run2"), "--", sys.executable, str(script)])
    print("CPU of watch itself (children excluded; 1 s poll, GPU sampling every 10 s):")
    print(f"  start and stop around `true`:          {start_cpu:.2f} s")
    print(f"  silent child, {idle_wall:.0f} s:                  {idle_cpu:.2f} s = "
          f"{100 * (idle_cpu - start_cpu) / idle_wall:.2f}% of one core beyond start-up")
    print(f"  child printing ~100 log lines/s, {wall:.0f} s: {cpu:.2f} s = "
          f"{100 * (cpu - start_cpu) / wall:.2f}% of one core beyond start-up")


def hang_latency(tmp: Path, limit: float = 5.0, runs: int = 3) -> None:
    lat = []
    for i in range(runs):
        stamp = tmp / f"last-{i}"
        script = tmp / f"hang{i}.py"
        script.write_text(
            "import sys, time\n"
            f"sys.stdout.buffer.write(open({str(HANG_LOG)!r}, 'rb').read()); sys.stdout.flush()\n"
            f"open({str(stamp)!r}, 'w').write(repr(time.time()))\n"
            "time.sleep(3600)\n")
        p = subprocess.Popen(WATCH + ["--run-dir", str(tmp / f"run-h{i}"), "--hang-timeout", str(limit), "--on-hang",
                                      "stop", "--grace", "1", "--", sys.executable, str(script)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        seen = None
        for line in p.stderr:
            if b"no progress for" in line and seen is None:
                seen = time.time()
        p.wait()
        last = float(stamp.read_text())
        lat.append(seen - last - limit)
    print(f"hang detection: --hang-timeout {limit:g} s, poll 1 s: detected {', '.join(f'{x:.2f}' for x in lat)} s "
          f"after the limit passed (limit + one poll = {limit + 1:g} s)")


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="grpo-doctor-bench-watch-") as d:
        tmp = Path(d)
        throughput(size_mb, tmp)
        cpu_during_run(tmp)
        hang_latency(tmp)


if __name__ == "__main__":
    main()
