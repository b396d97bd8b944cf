"""Benchmark: peak RSS and time of hostile inputs within their caps (issue 30 points 2, 6, 7): JSON side files made
of small containers (json.loads takes ~25x their size) and ~200 MB of fat NCCL debug output, through analyze,
standard input, check-ckpt, preflight and watch. Peak RSS is the command's own (wait4: its waited-for children
included). Prints one line per case; asserts nothing (the bounds are asserted by tests/test_json_cost.py; the README's
"Bounds per input kind" table holds the figures).

Usage: python bench/bench_bombs.py [NCCL_MB] [SCRATCH_DIR]      (default 200 MB, a temporary folder)
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# Linux carries the spawning process's peak RSS into the child's ru_maxrss at exec (this script holds a 16 MiB header
# for a moment): a small process started fresh forks the command and reports wait4's figure
_MEASURE = ("import os, sys\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.execv(sys.executable, [sys.executable, '-m', 'doctor.cli', *sys.argv[1:]])\n"
            "_, status, ru = os.wait4(pid, 0)\n"
            "sys.stderr.write(f'{ru.ru_maxrss} {os.waitstatus_to_exitcode(status)}\\n')\n")


def run(args: list[str], stdin: str | None = None) -> tuple[float, float, int]:
    """(seconds, peak MiB, exit status) of `python -m doctor.cli ARGS`, its output dropped."""
    t = time.perf_counter()
    with open(os.devnull, "wb") as null, open(stdin or os.devnull, "rb") as inp:
        p = subprocess.run([sys.executable, "-c", _MEASURE, *args], stdin=inp, stdout=null, stderr=subprocess.PIPE,
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    kib, rc = p.stderr.decode().split()[-2:]
    return time.perf_counter() - t, int(kib) / 1024, int(rc)


def repeat(head: bytes, item: bytes, tail: bytes, size: int) -> bytes:
    return head + item * ((size - len(head) - len(tail)) // len(item)) + tail


def nccl(kind: str, path: Path, mb: int) -> None:
    """~MB megabytes of one shape of NCCL_DEBUG output, ending with NCCL's error."""
    def line(i: int) -> str:
        if kind == "info-ring":   # a ring of 4,096 ranks listed per channel: ~20 kB
            return f"node{i % 512}:{i}:{i} [{i % 8}] NCCL INFO Channel {i % 32:02d}/32 : " + " ".join(
                f"{(r + i) % 4096:4d}" for r in range(4096))
        if kind == "info-tree":   # Trees of 1,600 channels: ~45 kB
            return f"node{i % 64}:1:2 [{i % 8}] NCCL INFO Trees " + " ".join(
                f"[{c}] {c + 1}/{c + 2}/-1->{c}->{c - 1}" for c in range(1600))
        if kind == "warn":
            return (f"node{i % 512}:{i}:{i} [{i % 8}] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                    f"10.0.{i % 256}.1<{40000 + i % 20000}> failed : Software caused connection abort " + "x" * (i % 20000))
        if kind == "trace":
            return (f"node{i % 64}:1:{i % 8} [{i % 8}] {i * 0.000123:.6f} ncclProxyProgress:{i % 700} NCCL TRACE "
                    f"[{i % 32}] op {i} step {i * 2} posted {i * 3} received {i * 4} transmitted {i * 5} done {i * 6}")
        n = (1 << 20) + (i * 7919) % (3 << 20)   # huge: a rank table of 1-4 MB on one line
        return (f"node0:1:2 [0] NCCL INFO comm 0x{i:x} nranks 65536 ranks " + " ".join(map(str, range(n // 6))))[:n]
    with open(path, "w") as f:
        i = 0
        while f.tell() < mb << 20:
            f.write(line(i) + "\n")
            i += 1
        f.write("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n")


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    scratch = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="grpo-doctor-bombs-"))
    print(f"{'case':58} {'s':>7} {'MiB':>7} rc")

    def show(name: str, r: tuple[float, float, int]) -> None:
        print(f"{name:58} {r[0]:7.2f} {r[1]:7.1f} {r[2]}", flush=True)

    ck = scratch / "ts" / "checkpoint-3"
    ck.mkdir(parents=True, exist_ok=True)
    (ck / "trainer_state.json").write_bytes(repeat(b'{"global_step": 7, "log_history": [', b"{},", b"{}]}", 8 << 20))
    show("check-ckpt: trainer_state.json, 8 MiB of {}", run(["check-ckpt", str(ck.parent)]))
    show("analyze: run folder with that checkpoint", run(["analyze", str(ck.parent)]))
    hdr = repeat(b'{"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}, "z": [', b"[],", b"[]]}", 16 << 20)
    st = scratch / "st" / "checkpoint-1"
    st.mkdir(parents=True, exist_ok=True)
    (st / "model.safetensors").write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0\0")
    show("check-ckpt: safetensors header, 16 MiB of []", run(["check-ckpt", str(st)]))
    args = scratch / "args" / "args.json"
    args.parent.mkdir(exist_ok=True)
    args.write_bytes(repeat(b'{"model": "x", "junk": [', b'{"a":[]},', b"{}]}", (4 << 20) - 64))
    (args.parent / "train.log").write_text("ValueError: generation_batch_size (3) must be divisible by num_generations (2).\n")
    show('analyze: run folder, args.json of 4 MiB of {"a":[]}', run(["analyze", str(args.parent)]))
    show('preflight: that args.json', run(["preflight", str(args)]))
    for kind in ("info-ring", "info-tree", "warn", "trace", "huge"):
        log = scratch / f"nccl-{kind}.log"
        nccl(kind, log, mb)
        show(f"analyze: {mb} MB of NCCL {kind} lines", run(["analyze", str(log)]))
        show("analyze -: the same on standard input", run(["analyze", "-"], stdin=str(log)))
        show("watch -- cat: the same", run(["watch", "--no-preflight", "--gpu-interval", "0", "--run-dir",
                                              str(scratch / f"w-{kind}"), "--", "cat", str(log)]))
        log.unlink()


if __name__ == "__main__":
    main()
