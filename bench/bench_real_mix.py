"""Benchmark: `grpo-doctor analyze` on logs shaped like the console logs long GRPO runs really write (short
lines, metric-dense steps, a big logging.jsonl), against `grep -c -E` and a naive Python loop, same run.

Usage:
  python bench/bench_real_mix.py [MIX ...] [--size MB] [--rows N] [--runs N] [--keep DIR] [--root CHECKOUT]
                                 [--matcher re] [--env NAME=VALUE]

Mixes (every line is a real line of the real `swift rlhf` runs under fixtures/real-swift and fixtures/logs/real-*;
the inputs are built under /tmp, or --keep DIR, never in the repository):
- short: the healthy runs' non-metric lines (INFO, tqdm redraws, model print, warnings), shuffled (seed 0),
  --size MB (default 520), then a real NCCL watchdog traceback near the end and the real end of a failed run;
- dense: per step a real tqdm redraw line and a real tqdm + metrics dict line (transformers-5 strings), the
  step counters rising, --size MB (default 300), the same failure at the end;
- jsonl: a logging.jsonl of --rows rows (default 1,000,000) cycling the real rows of fixtures' logging.jsonl
  files, step counters rising;
- longerr: 10,000 error lines of ~20 KB (real error lines carrying real healthy text), for memory;
- oneline: one line of 1 GiB (real healthy lines joined with spaces), for memory (tool and grep only).

For each mix, interleaved, --runs times (default 3): the tool (`analyze LOG --format json`; wall, peak RSS of
the larger process by wait4), `grep -c -E '<the catalog's trigger words>'` (LC_ALL=C) and a naive Python loop
(`for line in f: rx.search(line)`, the same words as one bytes regex; not for oneline). Prints the medians,
the ratios to grep and to the naive loop, MB/s, us per line and the tool's peak RSS (the largest of the runs).
`--env GRPO_DOCTOR_SCAN=inproc` etc. pass settings to the tool. Nothing is asserted: speed is not a unit test.
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIX = ROOT / "fixtures"
MiB = 1 << 20
HEALTHY_RUNS = ["logs/real-grpo-lora-healthy", "logs/real-ddp2-cpu-gloo-use-cpu-healthy", "logs/real-grpo-lora-eval-ok",
                "logs/real-grpo-full-bf16", "logs/real-grpo-full-fp32", "real-swift/grpo_lora_healthy",
                "real-swift/ddp2_cpu_gloo_use_cpu"]
NCCL = "logs/dev-003-nccl-broadcast-timeout-seqnum4/log.txt"
END = "logs/real-batch-div-grad-accum/log.txt"
_TQDM_COUNT = re.compile(rb"\| *(\d+)/(\d+) \[")
_GSTEP = re.compile(rb"'global_step/max_steps': '(\d+)/(\d+)'")


def _lines(rel: str) -> list[bytes]:
    p = FIX / rel
    return [ln if ln.endswith(b"\n") else ln + b"\n" for ln in p.read_bytes().splitlines(keepends=True)]


def _healthy(args_dump: bool = True) -> list[bytes]:
    out: list[bytes] = []
    for run in HEALTHY_RUNS:
        if (FIX / run / "log.txt").exists():
            dump = False
            for ln in _lines(run + "/log.txt"):
                if b"Arguments(" in ln:
                    dump = True
                if args_dump or not dump:
                    out.append(ln)
                if dump and ln == b")\n":
                    dump = False
    return out


def _failure() -> bytes:
    """A real NCCL watchdog traceback (the whole dev-003 log from its first watchdog line) and the real end
    of a failed run."""
    nccl = _lines(NCCL)
    first = next(i for i, ln in enumerate(nccl) if b"Watchdog" in ln or b"watchdog" in ln)
    return b"".join(nccl[max(0, first - 2):]) + b"".join(_lines(END)[-40:])


def words() -> list[str]:
    from doctor.engine import Session
    return sorted(Session().gate_words)


def build_short(path: Path, size: int) -> None:
    # the args dump is left out: its opening line makes every following line matter (a real log prints it once)
    src = [ln for ln in _healthy(args_dump=False) if b"{'" not in ln and b'{"' not in ln and b"Arguments(" not in ln
           and b"Traceback" not in ln and b"Error" not in ln]
    rnd = random.Random(0)
    tail = _failure()
    with open(path, "wb") as f:
        written = 0
        while written < size - len(tail):
            block = b"".join(rnd.choices(src, k=4096))
            f.write(block)
            written += len(block)
        f.write(tail)


def build_dense(path: Path, size: int) -> None:
    lines = _healthy()
    steps = [ln for ln in lines if ln.startswith(b"{'loss'") and b"global_step" in ln]
    bars = [ln for ln in lines if ln.startswith(b"Train:") and b"{'" not in ln and b"it]" in ln]
    tail = _failure()
    total = max(1, size // (sum(map(len, steps)) // len(steps) + sum(map(len, bars)) // len(bars)))
    with open(path, "wb") as f:
        written, i = 0, 0
        while written < size - len(tail):
            i += 1
            out = []
            for ln in (bars[i % len(bars)], steps[i % len(steps)]):
                ln = _TQDM_COUNT.sub(lambda m: b"| %d/%d [" % (i, total), ln)
                out.append(_GSTEP.sub(lambda m: b"'global_step/max_steps': '%d/%d'" % (i, total), ln))
            block = b"".join(out)
            f.write(block)
            written += len(block)
        f.write(tail)


def build_jsonl(path: Path, rows: int) -> None:
    src = []
    for p in sorted(FIX.glob("**/logging.jsonl")):
        for ln in p.read_bytes().splitlines():
            try:
                obj = json.loads(ln)
            except ValueError:
                continue
            if isinstance(obj, dict) and "loss" in obj and "global_step/max_steps" in obj:
                src.append(obj)
    with open(path, "w") as f:
        for i in range(1, rows + 1):
            row = dict(src[i % len(src)])
            row["global_step/max_steps"] = f"{i}/{rows}"
            f.write(json.dumps(row) + "\n")


def build_longerr(path: Path, n: int = 10_000, width: int = 20_000) -> None:
    """n error lines of ~width bytes: a real error line of the fixtures carrying real healthy lines joined, as an
    exception message that embeds a huge repr does."""
    errs = sorted({ln.rstrip(b"\n") for p in FIX.glob("logs/*/log.txt") for ln in p.read_bytes().splitlines()
                   if b"Error: " in ln and len(ln) > 60})[:50]
    filler = b" ".join(ln.rstrip(b"\n") for ln in _healthy(args_dump=False))
    with open(path, "wb") as f:
        f.write(b"".join(_healthy()[:200]))
        for i in range(n):
            e = errs[i % len(errs)]
            off = (i * 7919) % max(1, len(filler) - width)
            f.write(e + b" " + filler[off:off + width - len(e)].replace(b"\n", b" ") + b"\n")


def build_oneline(path: Path, size: int = 1 << 30) -> None:
    text = b" ".join(ln.rstrip(b"\n") for ln in _healthy()) + b" "
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(text)
            written += len(text)
        f.write(b"\n")


def _timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float, int, bytes]:
    """(wall s, peak RSS MiB of the largest process, exit code, stdout)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        return wall, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out.read()


NAIVE = """
import re, sys
rx = re.compile(b"|".join(re.escape(w.encode()) for w in sys.argv[2:]))
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if rx.search(line):
            n += 1
print(n)
"""


def measure(mix: str, path: Path, runs: int, tool: list[str], env: dict[str, str], cwd: Path) -> None:
    ws = words()
    pat = "|".join(re.sub(r"([][.^$*+?(){}|\\])", r"\\\1", w) for w in ws)
    size = path.stat().st_size
    with open(path, "rb") as f:
        nlines = sum(block.count(b"\n") for block in iter(lambda: f.read(8 * MiB), b""))
    genv = dict(os.environ, LC_ALL="C")
    _timed(tool + ["analyze", str(path), "--format", "json"], env, cwd)  # warm-up: .pyc, caches, page cache
    t, g, nv, rss, out = [], [], [], 0.0, b""
    for _ in range(runs):
        w, r, code, out = _timed(tool + ["analyze", str(path), "--format", "json"], env, cwd)
        t.append(w)
        rss = max(rss, r)
        g.append(_timed(["grep", "-c", "-E", "-e", pat, str(path)], genv)[0])
        if mix != "oneline":
            nv.append(_timed([sys.executable, "-c", NAIVE, str(path)] + ws)[0])
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    tw, gw = med(t), med(g)
    mb = size / 1e6
    print(f"== {mix}: {mb:.0f} MB, {nlines:,} lines ({path})")
    print(f"  grpo-doctor : {tw:6.2f} s  {mb / tw:7.1f} MB/s  {tw / max(nlines, 1) * 1e6:6.2f} us/line  "
          f"peak RSS {rss:.0f} MiB  exit {code}  (walls {', '.join(f'{x:.2f}' for x in t)})")
    print(f"  grep -c -E  : {gw:6.2f} s  {mb / gw:7.1f} MB/s  ({len(ws)} words)  ratio tool/grep {tw / gw:.2f}x")
    if nv:
        nw = med(nv)
        print(f"  naive loop  : {nw:6.2f} s  {mb / nw:7.1f} MB/s  {nw / max(nlines, 1) * 1e6:6.2f} us/line  "
              f"ratio tool/naive {tw / nw:.2f}x")
    try:
        rep = json.loads(out)
        print(f"  findings    : {[f['rule_id'] for f in rep.get('findings', [])]}")
    except ValueError:
        print("  findings    : (no JSON report)")


def main() -> None:
    argv = sys.argv[1:]

    def opt(name: str, default: str | None = None) -> str | None:
        return argv[argv.index(name) + 1] if name in argv else default

    takes = {"--size", "--rows", "--runs", "--keep", "--root", "--matcher", "--env"}
    mixes = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] not in takes)]
    mixes = mixes or ["short", "dense", "jsonl"]
    runs = int(opt("--runs", "3") or 3)
    keep = Path(opt("--keep") or tempfile.mkdtemp(prefix="grpo-doctor-mix-"))
    keep.mkdir(parents=True, exist_ok=True)
    root = Path(opt("--root") or ROOT).resolve()
    exe = Path(sys.executable).with_name("grpo-doctor")
    tool = [str(exe)] if exe.exists() and root == ROOT else [sys.executable, "-m", "doctor.cli"]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if opt("--matcher"):
        env["GRPO_DOCTOR_MATCHER"] = opt("--matcher") or ""
    for i, a in enumerate(argv):
        if a == "--env" and i + 1 < len(argv) and "=" in argv[i + 1]:
            k, v = argv[i + 1].split("=", 1)
            env[k] = v
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {runs}")
    for mix in mixes:
        size_mb = int(opt("--size", {"short": "520", "dense": "300"}.get(mix, "0")) or 0)
        rows = int(opt("--rows", "1000000") or 1000000)
        name = {"jsonl": f"jsonl-{rows}/logging.jsonl", "longerr": "longerr.log", "oneline": "oneline.log"}.get(
            mix, f"{mix}-{size_mb}.log")
        path = keep / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            {"short": lambda: build_short(path, size_mb * 1_000_000), "dense": lambda: build_dense(path, size_mb * 1_000_000),
             "jsonl": lambda: build_jsonl(path, rows), "longerr": lambda: build_longerr(path),
             "oneline": lambda: build_oneline(path)}[mix]()
            print(f"built {path} in {time.perf_counter() - t0:.1f} s")
        measure(mix, path, runs, tool, env, root)


if __name__ == "__main__":
    main()
