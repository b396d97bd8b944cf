"""Benchmark: does `analyze` stay linear in the number of metric rows on every kind of run the fixtures hold?

A rule's finish step runs once, so a quadratic in it hides on the small fixtures and on the benchmark mixes whose
branch it is not (issue 19: GD610's per-function detail read a whole reward column once per step of a flat streak;
a 200 MB dense log took 51 s instead of 11). For each fixture run with metric rows, this builds under /tmp two
copies whose metric rows are repeated to N and 4N rows (step counters rising, every other line kept as it is):
logging.jsonl rows for the runs that have one, the printed dicts of log.txt for the others. It times
`analyze COPY --format json` on both and prints the ratio; a ratio far above 4 (flagged over 6) is superlinear.

With --lines, every log.txt of the fixture runs is repeated whole instead (N and 4N lines: a rule's state or finish
step that grows with any repeated line, e.g. the report's per-run line ranges, quadratic on a log repeating its
launcher line, found this way).

Usage: python bench/scaling.py [--rows N] [--lines] [--only SUBSTRING]
(default N = 4,000: both sizes stay under the series' MAX_ROWS of 20,000, past which rows are thinned and a
quadratic stops growing)
Nothing is asserted: speed is not a unit test.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXES = (ROOT / "fixtures" / "logs", ROOT / "fixtures" / "devlogs")
_GSTEP = re.compile(rb"""(["']global_step/max_steps["']: ["'])(\d+)/(\d+)(["'])""")


def _restep(line: bytes, step: int, total: int) -> bytes:
    return _GSTEP.sub(lambda m: m.group(1) + b"%d/%d" % (step, total) + m.group(4), line, count=1)


def _repeat(rows: list[bytes], n: int) -> list[bytes]:
    return [_restep(rows[i % len(rows)], i + 1, n) for i in range(n)]


def build(run: Path, out: Path, n: int) -> bool:
    """A copy of fixture run ``run`` with its metric rows repeated to ``n``; False if it has none."""
    shutil.copytree(run, out, symlinks=True)
    jl = out / "logging.jsonl"
    if jl.exists():
        rows = [ln for ln in jl.read_bytes().splitlines() if ln.startswith(b"{")]
        if not rows:
            return False
        jl.write_bytes(b"\n".join(_repeat(rows, n)) + b"\n")
        return True
    log = out / "log.txt"
    if not log.exists():
        return False
    lines = log.read_bytes().splitlines(keepends=True)
    at = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(b"{'") and b"': " in ln and b"}" in ln]
    if not at:
        return False
    rows = [lines[i] for i in at]
    rows_at = set(at)
    keep = [ln for i, ln in enumerate(lines) if i not in rows_at]
    first = at[0]
    log.write_bytes(b"".join(keep[:first] + _repeat(rows, n) + keep[first:]))
    return True


def build_lines(run: Path, out: Path, n: int) -> bool:
    """A copy of fixture run ``run`` whose log.txt is repeated whole to about ``n`` lines (no logging.jsonl)."""
    log = run / "log.txt"
    if not log.is_file():
        return False
    out.mkdir(parents=True)
    data = log.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    reps = max(1, n // max(1, data.count(b"\n")))
    (out / "log.txt").write_bytes(data * reps)
    return True


def _time(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(path), "--format", "json"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
    return time.perf_counter() - t0


def main() -> None:
    argv = sys.argv[1:]
    n = int(argv[argv.index("--rows") + 1]) if "--rows" in argv else 4_000
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    make = build_lines if "--lines" in argv else build
    tmp = Path(tempfile.mkdtemp(prefix="grpo-doctor-scaling-"))
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{'lines' if make is build_lines else 'rows'} {n:,} and {4 * n:,}")
    worst = 0.0
    try:
        for run in sorted(p for fix in FIXES if fix.is_dir() for p in fix.iterdir() if p.is_dir() and only in p.name):
            a, b = tmp / f"{run.name}-1", tmp / f"{run.name}-4"
            if not (make(run, a, n) and make(run, b, 4 * n)):
                continue
            ta, tb = _time(a), _time(b)
            ratio = tb / ta
            worst = max(worst, ratio)
            flag = "  <-- superlinear" if ratio > 6 else ""
            print(f"  {run.name:55} {ta:6.2f} s  {tb:6.2f} s  x{ratio:4.1f}{flag}")
            shutil.rmtree(a)
            shutil.rmtree(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"worst ratio x{worst:.1f} (4 is linear)")


if __name__ == "__main__":
    main()
