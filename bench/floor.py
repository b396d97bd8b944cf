"""Benchmark: the least work any CPython design of `analyze` must do on the issue-19 mixes, against grep.

Issue 19 asks SHORT and DENSE to run in at most 3x grep's wall time and a 1M-row logging.jsonl in 2 s, with the
rules seeing the same values. This script measures, on the same files and in the same minutes as grep, what is
left when everything a rule does is taken away, so the targets can be set against what the language allows:

- start  : `python -c "import hyperscan, msgspec"` (the interpreter and the two C libraries, nothing else);
- scan   : the file read in 512 KiB chunks and scanned by Hyperscan for the catalog's trigger words (the same words
           grep gets, compiled before the clock starts), a Python callback per match that only counts: the least
           a scanner does to find the candidate lines, since python-hyperscan calls back into Python per match;
- touch  : scan, plus one Python-level step per candidate line (its bounds found with `bytes.rfind`/`find` and
           the line sliced once): the least any Python handling of a candidate line costs, with no decoding and
           no rule;
- rows   : (dense, jsonl) no scan, only every metric row turned into a dict by msgspec, the fastest JSON decoder here, a
           256 rows per call, as the tool does (console dicts get their quotes swapped first; NaN rows of a jsonl are
           turned into nulls): the least for the rules to see every row's values, with no conversion and no rule.

Each floor runs as its own process (start-up included, as for the tool and grep), interleaved with grep, median
of --runs (default 3). Nothing is asserted.

Usage: python bench/floor.py [MIX ...] [--keep DIR] [--size MB] [--rows N] [--runs N]
       (mixes: short dense jsonl; the logs are bench_real_mix.py's, built there if missing)
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_real_mix as mix  # noqa: E402

CHUNK = 512 << 10   # the size the tool reads logging.jsonl by: its rows stay in the CPU caches

WORKER = r'''
import sys, time
import hyperscan, msgspec
kind, path, words = sys.argv[1], sys.argv[2], sys.argv[3:]
db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
db.compile(expressions=[w.encode() for w in words], ids=list(range(len(words))),
           elements=len(words), flags=[0] * len(words), literal=True)
hits = []
def on_match(i, frm, to, flags, ctx):
    hits.append(to)
n_cand = n_rows = 0
dec = msgspec.json.Decoder()
t0 = time.perf_counter()
with open(path, "rb") as f:
    rest = b""
    while True:
        data = f.read(%d)
        if not data:
            break
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest, data = data[cut:], data[:cut]
        if kind != "rows":
            hits.clear()
            db.scan(data, match_event_handler=on_match)
        if kind == "touch":
            last = -1
            for to in sorted(hits):
                if to <= last:
                    continue
                a = data.rfind(b"\n", 0, to) + 1
                last = data.find(b"\n", to)
                line = data[a:last]
                n_cand += 1
        elif kind == "rows":
            lines = [ln for ln in data.split(b"\n") if ln[:1] == b"{"]
            for i in range(0, len(lines), 256):
                part = b"[" + b",".join(lines[i:i + 256]) + b"]"
                if b"'" in part:
                    part = part.replace(b"'", b'"')
                if b"NaN" in part:
                    part = part.replace(b"NaN", b"null")
                n_rows += len(dec.decode(part))
        n_cand += len(hits) if kind == "scan" else 0
print(n_cand, n_rows, time.perf_counter() - t0)
''' % CHUNK


def _med(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def measure(name: str, path: Path, runs: int) -> None:
    ws = mix.words()
    pat = "|".join(re.sub(r"([][.^$*+?(){}|\\])", r"\\\1", w) for w in ws)
    genv = dict(os.environ, LC_ALL="C")
    kinds = ["start", "scan", "touch"] + (["rows"] if name in ("dense", "jsonl") else [])
    walls: dict[str, list[float]] = {k: [] for k in kinds + ["grep"]}
    counts: dict[str, bytes] = {}
    for _ in range(runs):
        walls["grep"].append(mix._timed(["grep", "-c", "-E", "-e", pat, str(path)], genv)[0])
        for k in kinds:
            cmd = ([sys.executable, "-c", "import hyperscan, msgspec"] if k == "start"
                   else [sys.executable, "-c", WORKER, k, str(path)] + ws)
            wall, _, code, out = mix._timed(cmd)
            walls[k].append(wall)
            counts[k] = out.strip() if code == 0 else b"(failed)"
    g = _med(walls["grep"])
    size = path.stat().st_size / 1e6
    print(f"== {name}: {size:.0f} MB ({path})")
    print(f"  grep -c -E : {g:6.2f} s   ({len(ws)} words; 3x grep = {3 * g:.2f} s)")
    for k in kinds:
        w = _med(walls[k])
        extra = ""
        if k != "start":
            cand, rows, _ = (counts[k].split() + [b"?", b"?", b"?"])[:3]
            extra = {"scan": f"{int(cand):,} matches", "touch": f"{int(cand):,} candidate lines",
                     "rows": f"{int(rows):,} rows decoded"}[k] if cand != b"(failed)" else "(failed)"
        print(f"  floor {k:6}: {w:6.2f} s   {w / g:6.1f}x grep   {extra}")


def main() -> None:
    argv = sys.argv[1:]

    def opt(name: str, default: str) -> str:
        return argv[argv.index(name) + 1] if name in argv else default

    takes = {"--keep", "--size", "--rows", "--runs"}
    names = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] not in takes)]
    keep = Path(opt("--keep", tempfile.mkdtemp(prefix="grpo-doctor-mix-")))
    runs = int(opt("--runs", "3"))
    rows = int(opt("--rows", "1000000"))
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {runs}")
    for name in names or ["short", "dense", "jsonl"]:
        size_mb = int(opt("--size", {"short": "520", "dense": "300"}.get(name, "0")))
        path = keep / ({"jsonl": f"jsonl-{rows}/logging.jsonl"}.get(name, f"{name}-{size_mb}.log"))
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            {"short": lambda: mix.build_short(path, size_mb * 1_000_000),
             "dense": lambda: mix.build_dense(path, size_mb * 1_000_000),
             "jsonl": lambda: mix.build_jsonl(path, rows)}[name]()
        measure(name, path, runs)


if __name__ == "__main__":
    main()
