"""Benchmark: the cost of the console metric lines (printed trainer dicts) in the engine.

Usage:
  python bench/bench_metric_lines.py [ROWS] [--runs N] [--root CHECKOUT]

Takes the real transformers-5 metric lines (``{'loss': '0', ...}``) of fixtures/logs/real-*/log.txt,
repeats them to ROWS lines (default 20000) with the step numbers rewritten, and prints, best of --runs
(default 3):
- read: parsing every line (sources.metrics parse_console);
- feed_line with console_metrics on and off, and their difference: what the metric path costs per line
  (parse, the Metrics signal, every METRICS rule).
--root times another checkout's code (e.g. a `git archive` of main) on the same lines.

Nothing is asserted: speed is not a unit test. Figures go to stdout.
"""
from __future__ import annotations

import argparse
import io
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def real_lines() -> list[str]:
    out = []
    for log in sorted((HERE / "fixtures" / "logs").glob("real-*/log.txt")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{'loss': '") and "'global_step/max_steps': '" in line:
                out.append(line)
    return out


def build(rows: int) -> str:
    src = real_lines()
    step = re.compile(r"'global_step/max_steps': '\d+/\d+'")
    # consecutive rows come from the same real line (and run), as in a real log: one key layout at a time
    return "".join(step.sub(f"'global_step/max_steps': '{i}/{rows}'", src[(i - 1) * len(src) // rows]) + "\n"
                   for i in range(1, rows + 1))


def best(fn, runs: int) -> float:
    return min(_timed(fn) for _ in range(runs))


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="?", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--root", default=str(HERE))
    a = ap.parse_args()
    sys.path.insert(0, a.root)
    from doctor.engine import Session
    from doctor.sources import metrics
    from doctor.sources.logtext import LineReader

    text = build(a.rows)
    lines = list(LineReader("bench.log", [0]).lines(io.BytesIO(text.encode())))
    texts = [ln.text for ln in lines]
    assert all(metrics.parse_console(t) is not None for t in texts[:50])

    def feed(console: bool) -> None:
        s = Session(console_metrics=console)
        for ln in lines:
            s.feed_line(ln)

    read = best(lambda: [metrics.parse_console(t) for t in texts], a.runs)
    on = best(lambda: feed(True), a.runs)
    off = best(lambda: feed(False), a.runs)
    us = 1e6 / len(lines)
    print(f"code: {a.root}")
    print(f"{len(lines)} metric lines from {len(real_lines())} real ones, best of {a.runs}")
    print(f"read (parse_console):           {read:.3f} s  {read * us:6.1f} us/line")
    print(f"feed_line, console_metrics on:  {on:.3f} s  {on * us:6.1f} us/line")
    print(f"feed_line, console_metrics off: {off:.3f} s  {off * us:6.1f} us/line")
    print(f"metric path (on - off):         {on - off:.3f} s  {(on - off) * us:6.1f} us/line")


if __name__ == "__main__":
    main()
