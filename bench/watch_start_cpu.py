"""watch's own CPU: its fixed cost (`watch -- true`: start, final analysis and report) and its cost per second of a
run that prints a real GRPO console log line by line. Prints figures; asserts nothing (speed is not a unit test).

    python bench/watch_start_cpu.py [RUNS] [SECONDS]        (default 9 runs of `true`, 3 of a 10 s replay)
    python bench/watch_start_cpu.py --run [RUNS] -- COMMAND...  (watch's share of a real run's CPU, RUNS times)
    python bench/watch_start_cpu.py --replay-run RUN_DIR [SECONDS] [--callgrind]

``--replay-run`` replays a finished run folder of the scoreboard (its console log, then the files the run wrote:
args.json, the logging.jsonl rows as their metric lines pass, each checkpoint folder just before its `Saving model
checkpoint` line, which ms-swift prints after the save) over SECONDS (default 15), under watch: what watch does for a
real run, without the run's own CPU beside it. With ``--callgrind`` watch runs under valgrind and the figure is the
instructions it executed, the same from one machine load to the next (its CPU time on a shared machine is not).

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
    return watch_cpu(child, run_dir)[0]


def watch_cpu(child: list[str], run_dir: str | None, cwd: str | None = None) -> tuple[float, float]:
    """(watch's own CPU, the CPU of the run it waited for: the command and every descendant reaped below it).
    ``run_dir`` None: watch's default, the command's --output_dir (its checkpoints and logging.jsonl are followed)."""
    p = subprocess.Popen([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                          *(["--run-dir", run_dir] if run_dir else []), "--drain", "0", "--", *child],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd or run_dir)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # exited, not yet reaped: its /proc entry still counts
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    p.wait()
    # utime + stime, without the children's; cutime + cstime: the children's it waited for
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


def share_of_run(runs: int, child: list[str]) -> int:
    """watch's own CPU as a share of the CPU of the run it supervised (the scoreboard's healthy run, say), exact: both
    read from watch's /proc entry once it has exited. watch follows the run's --output_dir, as the scoreboard's does."""
    rows = []
    for _ in range(runs):
        argv = list(child)
        if "--output_dir" in argv[:-1]:   # a new output folder each time, as the scoreboard's runs have
            i = argv.index("--output_dir") + 1
            argv[i] = tempfile.mkdtemp(prefix=os.path.basename(argv[i].rstrip("/")) + "-", dir=os.path.dirname(argv[i]) or ".")
        own, run = watch_cpu(argv, None, cwd=os.getcwd())
        rows.append((own, run))
        print(f"watch {own:.2f} s, run {run:.2f} s: {100 * own / run:.2f}%" if run else f"watch {own:.2f} s")
    own = statistics.median(r[0] for r in rows)
    share = statistics.median(r[0] / r[1] for r in rows if r[1])
    print(f"median: watch {own:.3f} s of CPU, {100 * share:.2f}% of the run's CPU ({len(rows)} runs)")
    return 0


# the child of --replay-run: argv run folder, output folder, seconds
REPLAY_RUN = r"""
import os, re, shutil, sys, time
src, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
log = os.path.join(src, "grpo-doctor-console.log")
vdirs = sorted(d for d in os.listdir(src) if re.match(r"v\d+-", d))
vsrc = os.path.join(src, vdirs[0]) if vdirs else src
vout = os.path.join(out, vdirs[0]) if vdirs else out
os.makedirs(vout, exist_ok=True)
rows = open(os.path.join(vsrc, "logging.jsonl"), encoding="utf-8").read().splitlines(True)     if os.path.exists(os.path.join(vsrc, "logging.jsonl")) else []
lines = open(log, "rb").read().splitlines(True)
# in bursts, as a run prints: the lines up to the next progress bar, metrics row or save line, then a pause
bursts = [[]]
for raw in lines:
    if bursts[-1] and (b"%|" in raw or b"'global_step/max_steps'" in raw or b"Saving model checkpoint" in raw):
        bursts.append([])
    bursts[-1].append(raw)
gap = seconds / len(bursts)

def fresh_copy(a, b):   # new files with new times, as a save writes them (trainer_state.json last)
    os.makedirs(b)
    for n in sorted(os.listdir(a), key=lambda n: n == "trainer_state.json"):
        p = os.path.join(a, n)
        if os.path.isdir(p):
            fresh_copy(p, os.path.join(b, n))
        else:
            shutil.copyfile(p, os.path.join(b, n))

for burst in bursts:
    for raw in burst:
        if b"RLHFArguments will be saved in" in raw and os.path.exists(os.path.join(vsrc, "args.json")):
            shutil.copyfile(os.path.join(vsrc, "args.json"), os.path.join(vout, "args.json"))
        m = re.search(rb"Saving model checkpoint to \S*?(checkpoint-\d+)", raw)
        if m and os.path.isdir(os.path.join(vsrc, m.group(1).decode())):
            fresh_copy(os.path.join(vsrc, m.group(1).decode()), os.path.join(vout, m.group(1).decode()))
        if b"'global_step/max_steps'" in raw and rows:
            with open(os.path.join(vout, "logging.jsonl"), "a", encoding="utf-8") as f:
                f.write(rows.pop(0))
    sys.stdout.buffer.write(b"".join(raw.replace(src.encode(), out.encode()) for raw in burst))
    sys.stdout.flush()
    time.sleep(gap)
with open(os.path.join(vout, "logging.jsonl"), "a", encoding="utf-8") as f:
    f.writelines(rows)
"""


def replay_run(src: str, seconds: float, callgrind: bool) -> int:
    """watch's own CPU (or instructions, under callgrind) over a replay of the run folder ``src``."""
    with tempfile.TemporaryDirectory() as d:
        child = [sys.executable, "-c", REPLAY_RUN, os.path.abspath(src), d, str(seconds)]
        cmd = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0", "--run-dir", d,
               "--drain", "0", "--", *child]
        if not callgrind:
            own, _ = watch_cpu(child, d)
            print(f"watch of a {seconds:g} s replay of {src}: {own:.3f} s of its own CPU")
            return 0
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=d)
        found = [ln for ln in r.stderr.splitlines() if "Collected" in ln]
        print(f"watch of a {seconds:g} s replay of {src}: {found[-1].split(':')[-1].strip() if found else '?'} "
              f"instructions")
        rep = os.path.join(d, "grpo-doctor-report.json")
        if os.path.exists(rep):
            import json
            print("  findings:", [f["rule_id"] for f in json.load(open(rep))["findings"]])
    return 0


def figures(vals: list[float]) -> str:
    return f"median {statistics.median(vals):.3f} s (min {min(vals):.3f}, max {max(vals):.3f}, {len(vals)} runs)"


def main() -> int:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return 0
    if sys.argv[1:2] == ["--replay-run"]:
        rest = [a for a in sys.argv[3:] if a != "--callgrind"]
        return replay_run(sys.argv[2], float(rest[0]) if rest else 15.0, "--callgrind" in sys.argv)
    if sys.argv[1:2] == ["--run"]:
        args = sys.argv[2:]
        n = int(args[0]) if args and args[0] != "--" else 3
        return share_of_run(n, args[args.index("--") + 1:])
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
