"""watch's own CPU: its fixed cost (`watch -- true`: start, final analysis and report) and its cost per second of a
run that prints a real GRPO console log line by line. Prints figures; asserts nothing (speed is not a unit test).

    python bench/watch_start_cpu.py [RUNS] [SECONDS]        (default 9 runs of `true`, 3 of a 10 s replay)

The CPU is the watch process's own (user + system, its children excluded), read from /proc/PID/stat once it has
exited and before it is reaped: exact, where polling misses the last half second (bench/scoreboard.py polls). Run
it against another checkout with PYTHONPATH=that-checkout; compile the package first (python -m compileall doctor)
when the interpreter writes no bytecode, as users' installs are compiled.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures/logs/real-grpo-lora-healthy/log.txt"
TICK = os.sysconf("SC_CLK_TCK")
# the log's lines, evenly spread over SECONDS (the last argument)
REPLAY = ("import sys, time\nlines = open(sys.argv[1], encoding='utf-8', errors='replace').read().splitlines(True)\n"
          "gap = float(sys.argv[2]) / max(len(lines), 1)\nfor l in lines:\n"
          "    sys.stdout.write(l); sys.stdout.flush(); time.sleep(gap)\n")


def own_cpu(child: list[str], run_dir: str) -> float:
    """Seconds of CPU of one `grpo-doctor watch` process around ``child``."""
    p = subprocess.Popen([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                          "--run-dir", run_dir, "--drain", "0", "--", *child],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=run_dir)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # exited, not yet reaped: its /proc entry still counts
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    p.wait()
    return (int(fields[11]) + int(fields[12])) / TICK     # utime + stime, without the children's


def figures(vals: list[float]) -> str:
    return f"median {statistics.median(vals):.3f} s (min {min(vals):.3f}, max {max(vals):.3f}, {len(vals)} runs)"


def main() -> int:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return 0
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    import doctor
    print(f"package: {Path(doctor.__file__).parent}")
    with tempfile.TemporaryDirectory() as d:
        start = [own_cpu(["true"], d) for _ in range(runs)]
        print(f"watch -- true (fixed cost):       {figures(start)}")
        replay = [own_cpu([sys.executable, "-c", REPLAY, str(LOG), str(seconds)], d) for _ in range(max(runs // 3, 1))]
        print(f"watch of a {seconds:g} s replay ({sum(1 for _ in LOG.open(encoding='utf-8', errors='replace'))} "
              f"lines): {figures(replay)}")
        steady = (statistics.median(replay) - statistics.median(start)) / seconds
        print(f"  beyond the fixed cost: {1000 * steady:.1f} ms of CPU per second of the run "
              f"({100 * steady:.2f}% of a core)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
