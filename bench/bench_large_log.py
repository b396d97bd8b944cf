"""Benchmark: analyze a large synthetic console log built from a real one; print time and peak RSS.

Usage: python bench/bench_large_log.py [SIZE_MB] [--keep PATH]

The log is the real healthy GRPO console log (fixtures/logs/real-grpo-lora-healthy or the shared
real-swift copy) repeated until SIZE_MB (default 1024), with one 50 MB line in the middle and the real
batch-divisibility traceback at the end, so the engine must stream the whole file and still name the
failure. Figures go to stdout; nothing is asserted here (speed is not a unit test).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "fixtures/logs/real-grpo-lora-healthy/log.txt", ROOT.parent / "shared/real-swift/logs/grpo_lora_healthy/log.txt"]
TAIL = ROOT / "fixtures/logs/real-batch-div-grad-accum/log.txt"


def build(path: Path, size_mb: int) -> int:
    body = next(p for p in SOURCES if p.exists()).read_bytes()
    tail = TAIL.read_bytes()
    target = size_mb * 1024 * 1024
    written = 0
    with open(path, "wb") as f:
        while written < target // 2:
            f.write(body)
            written += len(body)
        f.write(b"x" * (50 * 1024 * 1024) + b"\n")  # one 50 MB line
        written += 50 * 1024 * 1024 + 1
        while written < target:
            f.write(body)
            written += len(body)
        f.write(tail)
        written += len(tail)
    return written


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    size_mb = int(args[0]) if args else 1024
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    tmpdir = tempfile.mkdtemp(prefix="grpo-doctor-bench-")
    path = Path(keep) if keep else Path(tmpdir) / "big.log"
    if not path.exists():
        t0 = time.perf_counter()
        n = build(path, size_mb)
        print(f"built {path} ({n / 2**20:.0f} MiB) in {time.perf_counter() - t0:.1f} s")
    size = path.stat().st_size
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(path), "--format", "json"],
                       capture_output=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rep = json.loads(p.stdout) if p.stdout else {}
    first = rep.get("findings", [{}])[0] if rep.get("findings") else {}
    print(f"log size        : {size / 2**20:.0f} MiB")
    print(f"exit code       : {p.returncode}")
    print(f"wall time       : {wall:.1f} s ({size / 2**20 / wall:.1f} MiB/s)")
    print(f"peak RSS        : {peak_kib / 1024:.1f} MiB")
    print(f"findings[0]     : {first.get('rule_id')} {first.get('category')}")
    if not keep:
        path.unlink()
        os.rmdir(tmpdir)


if __name__ == "__main__":
    main()
