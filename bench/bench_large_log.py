"""Benchmark: `grpo-doctor analyze` on a large console log against `grep -E` over the same file.

Usage:
  python bench/bench_large_log.py [SIZE_MB] [--mix realistic|dense] [--keep PATH] [--runs N] [--matcher re]
                                  [--completion-paras N]  (paragraphs per echoed completion, default 20)
                                  [--compare-lines]   (also run the line-by-line path; reports must be equal)
                                  [--root CHECKOUT]   (time another checkout's code, e.g. `git archive` of main)

Builds a log of SIZE_MB (default 1024) from real lines only, then, in the same run:
- times `grep -c -E '<the catalog's trigger words>'` over it (C locale and the default locale) and
  `grpo-doctor analyze LOG --format json`, interleaved, best wall time of --runs (default 3) each, and
  grpo-doctor's peak RSS (the larger of its processes: ``ru_maxrss`` of wait4 covers the scanning child);
- checks the findings: the failures placed at known lines must be reported with those line numbers;
- times `grpo-doctor --help` (start-up, best of 5) and, when the command exists, `check-ckpt` on a
  simulated 70B sharded checkpoint (sparse safetensors files: real headers, no data on disk).

Mixes (every line comes from a real log under fixtures/logs or ../shared):
- realistic: the header of a real ms-swift GRPO run (command, args dump, model print), then training
  steps, each: a real tqdm bar + metrics dict line, 3 real vLLM engine lines, a real UserWarning every 10
  steps, and 64 completions echoed to the console (each ~3 KB, about 750 tokens: 20 prose paragraphs of
  ../shared/seeds that hold no trigger word, on one line; ~190 KB per step, ~5500 steps per GB); one
  50 MB line at 50 % (SIZE/16 when smaller),
  an NCCL watchdog warning at 25 %, a DeepSpeed loss-scale exception at 75 %, and the real
  batch-divisibility traceback at the end.
- dense: the whole real healthy console log repeated (every line is a candidate: the worst case).

Nothing is asserted: speed is not a unit test. Figures go to stdout.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIX = ROOT / "fixtures/logs"
SHARED = ROOT.parent / "shared"
HEALTHY = FIX / "real-grpo-lora-healthy/log.txt"
TAIL = FIX / "real-batch-div-grad-accum/log.txt"
MiB = 1 << 20
COMPLETION_PARAS = 20  # --completion-paras: paragraphs (~150 bytes each) per echoed completion


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _gate_words() -> list[str]:
    from doctor.engine import Session
    return sorted(Session().gate_words)


def _first(path: Path, needle: str) -> bytes:
    for ln in _lines(path):
        if needle.encode() in ln:
            return ln if ln.endswith(b"\n") else ln + b"\n"
    raise SystemExit(f"{path}: no line with {needle!r}")


def sources() -> dict[str, list[bytes]]:
    healthy = _lines(HEALTHY)
    start = next(i for i, ln in enumerate(healthy) if ln.startswith(b"Train:"))
    header = healthy[:start]
    steps = [ln for p in sorted((SHARED / "real-swift/logs").glob("*/log.txt")) + [HEALTHY]
             for ln in _lines(p) if b"{'loss'" in ln and ln.startswith(b"Train:")] or \
        [ln for ln in healthy if b"{'loss'" in ln]
    vllm_re = re.compile(rb"^(INFO|WARNING) \d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+:\d+\] ")
    vllm = sorted({ln for p in FIX.glob("*/log.txt") for ln in _lines(p) if vllm_re.match(ln)})
    warn = sorted({ln for p in FIX.glob("*/log.txt") for ln in _lines(p)
                   if b"UserWarning: 'pin_memory'" in ln and not ln.startswith(b"Train")})
    gate = re.compile("|".join(re.escape(w) for w in _gate_words()).encode())
    prose = [ln for p in sorted((SHARED / "seeds").glob("*.md")) for ln in _lines(p)
             if len(ln) > 80 and not gate.search(ln) and b"```" not in ln and b"\r" not in ln]
    return {"header": header, "steps": steps, "vllm": vllm, "warn": warn, "prose": prose}


def build(path: Path, size_mb: int, mix: str) -> dict[str, int]:
    """Write the log; returns {what: 1-based line number} of the failures placed in it."""
    target = size_mb * MiB
    placed: dict[str, int] = {}
    tail = TAIL.read_bytes()
    nccl = _first(FIX / "dev-003-nccl-broadcast-timeout-seqnum4/log.txt", "Watchdog caught collective")
    scale = _first(FIX / "edge-deepspeed-fp16-loss-scale-min/log.txt", "loss scale already at minimum")
    with open(path, "wb") as f:
        written = 0
        lineno = 0

        def put(block: bytes) -> None:
            nonlocal written, lineno
            f.write(block)
            written += len(block)
            lineno += block.count(b"\n")

        big = min(50 * MiB, target // 16)
        marks = [(target // 4, "nccl-watchdog", nccl), (target // 2, "50MB-line", b"x" * big + b"\n"),
                 (3 * target // 4, "loss-scale-exception", scale)]
        if mix == "dense":
            body = HEALTHY.read_bytes()
            marks = [m for m in marks if m[1] == "50MB-line"]
            while written < target - len(tail):
                if marks and written >= marks[0][0]:
                    placed[marks[0][1]] = lineno + 1
                    put(marks.pop(0)[2])
                put(body)
        else:
            src = sources()
            put(b"".join(src["header"]))
            steps, vllm, warn, prose = src["steps"], src["vllm"], src["warn"], src["prose"]
            i = 0
            while written < target - len(tail):
                if marks and written >= marks[0][0]:
                    placed[marks[0][1]] = lineno + 1
                    put(marks.pop(0)[2])
                block = [steps[i % len(steps)]]
                block += [vllm[(i * 3 + k) % len(vllm)] for k in range(3)]
                if i % 10 == 0 and warn:
                    block.append(warn[i // 10 % len(warn)])
                for k in range(64):  # 64 completions echoed, each COMPLETION_PARAS real paragraphs on one line
                    block.append(b" ".join(prose[(i * 97 + k * 7 + j) % len(prose)].rstrip(b"\n")
                                           for j in range(COMPLETION_PARAS)) + b"\n")
                put(b"".join(block))
                i += 1
        placed["batch-div-traceback"] = lineno + tail.count(b"\n")
        put(tail)
    return placed


def _grep(path: Path, words: list[str], locale: str) -> tuple[float, float, int]:
    """(wall s, CPU s, matching lines) of grep -c -E over the file."""
    pat = "|".join(re.sub(r"([][.^$*+?(){}|\\])", r"\\\1", w) for w in words)
    env = dict(os.environ, LC_ALL=locale)
    wall, cpu, _, _, out = _timed(["grep", "-c", "-E", "-e", pat, str(path)], env)
    return wall, cpu, int(out or 0)


DOCTOR_ROOT: Path | None = None  # --root: measure another checkout (e.g. the code before a change)


def _doctor_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("grpo-doctor")
    return [str(exe)] if exe.exists() and DOCTOR_ROOT is None else [sys.executable, "-m", "doctor.cli"]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, int, bytes]:
    """(wall s, CPU s (user + sys), peak RSS MiB, exit code, stdout) of one child. On a shared machine the
    CPU time is the steadier figure: both grep and grpo-doctor run on one core."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=DOCTOR_ROOT or ROOT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode, out.read()


def simulated_70b(d: Path) -> Path:
    """A 70B bf16 checkpoint as sparse files: 30 shards with real safetensors headers, an index."""
    ckpt = d / "checkpoint-1000"
    ckpt.mkdir(parents=True, exist_ok=True)
    layers, hidden, inter, vocab = 80, 8192, 28672, 128256
    tensors = [("model.embed_tokens.weight", [vocab, hidden]), ("lm_head.weight", [vocab, hidden]),
               ("model.norm.weight", [hidden])]
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors += [(p + "self_attn.q_proj.weight", [hidden, hidden]), (p + "self_attn.k_proj.weight", [1024, hidden]),
                    (p + "self_attn.v_proj.weight", [1024, hidden]), (p + "self_attn.o_proj.weight", [hidden, hidden]),
                    (p + "mlp.gate_proj.weight", [inter, hidden]), (p + "mlp.up_proj.weight", [inter, hidden]),
                    (p + "mlp.down_proj.weight", [hidden, inter]), (p + "input_layernorm.weight", [hidden]),
                    (p + "post_attention_layernorm.weight", [hidden])]
    nshards = 30
    per = -(-len(tensors) // nshards)
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(nshards):
        name = f"model-{s + 1:05d}-of-{nshards:05d}.safetensors"
        header: dict[str, object] = {"__metadata__": {"format": "pt"}}
        off = 0
        for tname, shape in tensors[s * per:(s + 1) * per]:
            n = 2
            for x in shape:
                n *= x
            header[tname] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
            weight_map[tname] = name
            off += n
        raw = json.dumps(header).encode()
        raw += b" " * (-len(raw) % 8)
        with open(ckpt / name, "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw)
            f.truncate(8 + len(raw) + off)  # sparse: the size of the data, no blocks written
        total += off
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}))
    (ckpt / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
                                                  "num_hidden_layers": layers, "torch_dtype": "bfloat16"}))
    return ckpt


def main() -> None:
    argv = sys.argv[1:]

    def opt(name: str, default: str | None = None) -> str | None:
        return argv[argv.index(name) + 1] if name in argv else default

    pos = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or not argv[i - 1].startswith("--"))]
    size_mb = int(pos[0]) if pos else 1024
    mix = opt("--mix", "realistic")
    runs = int(opt("--runs", "3"))
    keep = opt("--keep")
    global COMPLETION_PARAS
    COMPLETION_PARAS = int(opt("--completion-paras", str(COMPLETION_PARAS)) or COMPLETION_PARAS)
    global DOCTOR_ROOT
    DOCTOR_ROOT = Path(opt("--root") or "").resolve() if opt("--root") else None
    tmpdir = Path(tempfile.mkdtemp(prefix="grpo-doctor-bench-"))
    path = Path(keep) if keep else tmpdir / "big.log"
    marks_file = path.with_name(path.name + ".marks.json")
    if path.exists() and marks_file.exists():
        placed = json.loads(marks_file.read_text())
    else:
        t0 = time.perf_counter()
        placed = build(path, size_mb, mix)
        marks_file.write_text(json.dumps(placed))
        print(f"built {path} ({mix}) in {time.perf_counter() - t0:.1f} s")
    size = path.stat().st_size / MiB
    words = _gate_words()
    print(f"log             : {path} {size:.0f} MiB, mix {mix}; failures placed at lines {placed}")

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time the installed state: modules compiled once, as pip does
    if opt("--matcher"):
        env["GRPO_DOCTOR_MATCHER"] = opt("--matcher") or ""
    loc = os.environ.get("LANG") or "C.UTF-8"
    loc = loc if "UTF" in loc.upper() else "C.UTF-8"
    _timed(_doctor_cmd() + ["analyze", str(path), "--format", "json"], env)  # warm-up: .pyc files, caches
    # interleaved, best wall time of each: on a shared machine the three see the same background load
    g_cs, g_us, docs = [], [], []
    for _ in range(runs):
        g_cs.append(_grep(path, words, "C"))
        g_us.append(_grep(path, words, loc))
        docs.append(_timed(_doctor_cmd() + ["analyze", str(path), "--format", "json"], env))
    g_c, g_u = min(g_cs), min(g_us)
    print(f"grep -c -E      : {len(words)} trigger words, {g_c[2]} matching lines (best wall of {runs}, interleaved)")
    print(f"  LC_ALL=C      : wall {g_c[0]:.2f} s ({size / g_c[0]:.0f} MiB/s)  CPU {g_c[1]:.2f} s ({size / g_c[1]:.0f} MiB/s)")
    print(f"  UTF-8 locale  : wall {g_u[0]:.2f} s ({size / g_u[0]:.0f} MiB/s)  CPU {g_u[1]:.2f} s ({size / g_u[1]:.0f} MiB/s)")
    best = min(docs, key=lambda r: r[0])
    wall, cpu, rss, code, out = best
    rep = json.loads(out) if out.strip() else {}
    findings = rep.get("findings", [])
    lines_seen = {(f["rule_id"], e["line"]) for f in findings for e in f.get("evidence", [])}
    print(f"analyze         : wall {wall:.2f} s ({size / wall:.0f} MiB/s)  CPU {cpu:.2f} s ({size / cpu:.0f} MiB/s; "
          f"both processes when a scanning child is forked)  peak RSS {rss:.0f} MiB (the larger process)  exit {code}  "
          f"(matcher: {env.get('GRPO_DOCTOR_MATCHER') or 'auto'}; walls {', '.join(f'{d[0]:.2f}' for d in docs)})")
    print(f"ratio (grep time / analyze time): wall {g_c[0] / wall:.2f} (C) {g_u[0] / wall:.2f} (UTF-8); "
          f"CPU {g_c[1] / cpu:.2f} (C) {g_u[1] / cpu:.2f} (UTF-8)")
    def med(rs):
        return sorted(r[0] for r in rs)[len(rs) // 2]

    print(f"  median walls  : grep {med(g_cs):.2f} s (C) {med(g_us):.2f} s (UTF-8), analyze {med(docs):.2f} s: "
          f"ratio {med(g_cs) / med(docs):.2f} (C) {med(g_us) / med(docs):.2f} (UTF-8)")
    print(f"findings        : {[(f['rule_id'], f['severity']) for f in findings]}")
    for what, ln in placed.items():
        if what == "50MB-line":
            continue
        hit = sorted(r for r, seen_ln in lines_seen if seen_ln == ln)
        print(f"  {what:22s}: line {ln}: {'reported by ' + ', '.join(hit) if hit else 'NOT REPORTED'}")

    if "--compare-lines" in argv:  # the line-by-line path on the same file: the reports must be equal
        lw, lc, lr, _lcode, lout = _timed(_doctor_cmd() + ["analyze", str(path), "--format", "json"],
                                         dict(env, GRPO_DOCTOR_SCAN="lines"))
        same = json.loads(lout) == rep if lout.strip() else False
        print(f"line-by-line    : wall {lw:.2f} s  CPU {lc:.2f} s ({size / lc:.0f} MiB/s)  peak RSS {lr:.0f} MiB; "
              f"report {'IDENTICAL' if same else 'DIFFERENT'} to the chunk path's")

    doctor = _doctor_cmd()
    starts = [_timed(doctor + ["--help"]) for _ in range(5)]
    print(f"start-up        : wall {min(r[0] for r in starts) * 1000:.0f} ms  CPU {min(r[1] for r in starts) * 1000:.0f} ms"
          f"  (`{' '.join(Path(c).name for c in doctor)} --help`, best of 5)")
    if _timed(doctor + ["check-ckpt", "--help"])[3] == 0:
        ckpt = simulated_70b(tmpdir / "ckpt70b")
        w, c, r, code, _ = min(_timed(doctor + ["check-ckpt", str(ckpt), "--format", "json"]) for _ in range(3))
        print(f"check-ckpt 70B  : wall {w * 1000:.0f} ms  CPU {c * 1000:.0f} ms  peak RSS {r:.0f} MiB  exit {code}")
    else:
        print("check-ckpt 70B  : skipped (no check-ckpt command on this branch)")
    if not keep:
        path.unlink()
        marks_file.unlink()
    shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    main()
