"""Rules that only a live run can feed (``grpo-doctor watch``): no progress for longer than the phase
allows, GPUs idle while holding memory, GPU memory near full, host memory near the OOM killer, a disk
too small for the next checkpoint.

Their signals come from ``doctor/live`` (the supervisor samples GPUs, host memory, disk space and
decides when a run stopped making progress); ``analyze`` never emits them, so in a post-mortem these
rules stay silent. Like every rule they do no I/O and never print: they turn samples into findings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Evidence, Finding, Severity
from ..rules import FinishContext, Rule

# signal kinds only watch emits (model.GPU is the snapshot kind of doctor/checks/gpu.py: not these)
GPU = "live-gpu"    # payload: GpuTick
HOST = "live-host"  # payload: HostTick
DISK = "live-disk"  # payload: DiskTick
HANG = "live-hang"  # payload: HangReport

GIB = 1024 ** 3


@dataclass(frozen=True)
class Gpu:
    index: int
    util: float | None      # percent
    mem_used: int           # bytes
    mem_total: int          # bytes


@dataclass(frozen=True)
class GpuTick:
    t: float                # seconds since watch started
    gpus: tuple[Gpu, ...]
    alive: bool = True      # the child was running when sampled


@dataclass(frozen=True)
class HostTick:
    t: float
    available: int
    total: int
    swap_free: int = 0


@dataclass(frozen=True)
class DiskTick:
    t: float
    path: str
    free: int
    need: int               # bytes the next checkpoint is expected to take
    basis: str              # how `need` was estimated


@dataclass(frozen=True)
class HangReport:
    """What the live hang watchdog saw when a phase's limit passed without progress (built by doctor.live)."""

    t: float
    phase: str              # startup | vllm-init | first-step | steady | eval | checkpoint-save
    phase_text: str
    silent_s: float
    limit_s: float
    limit_basis: str        # e.g. "5 x slowest step 12.0 s, floor 300 s" or "--hang-timeout"
    steps: int
    last_progress: str      # what the last progress was ("step 3", "metric row", "checkpoint-2", ...)
    last_line: str
    where: str | None       # rollout-generation | weight-sync | reward-function | nccl-collective | ...
    where_text: str
    outlier: str | None     # "rank 3 is in the reward function while ranks 0-2,4-7 wait in a collective"
    stacks: tuple[str, ...] = ()   # short per-process summaries (rank, pid, innermost frames)
    stacks_file: str | None = None
    missing: tuple[str, ...] = ()  # what could not be captured and how to get it
    gpu_text: str = ""
    proc_text: str = ""
    stopped: bool = False
    last_path: str = "<watch>"
    last_lineno: int = 0


def secs(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


class LiveHang(Rule):
    kinds = frozenset({HANG})
    want = ""

    def __init__(self, meta):
        super().__init__(meta)
        self.reports: list[HangReport] = []

    def feed(self, kind: str, payload: Any) -> None:
        self.reports.append(payload)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        mine = [r for r in self.reports if (r.steps > 0) == (self.want == "mid")]
        if not mine:
            return []
        r = mine[-1]
        parts = [f"No progress for {secs(r.silent_s)} s during {r.phase_text} (limit {secs(r.limit_s)} s: {r.limit_basis})"
                 + (f", after training step {r.steps}" if r.steps else "") + f"; last progress: {r.last_progress}."]
        if r.where:
            parts.append(f"It stopped {r.where_text}.")
        if r.outlier:
            parts.append(r.outlier + ".")
        if r.stacks:
            parts.append("Stacks: " + " | ".join(r.stacks[:8]) + ".")
        if r.stacks_file:
            parts.append(f"Full stacks, process states and GPU snapshot: {r.stacks_file}.")
        if r.missing:
            parts.append("Not captured: " + "; ".join(r.missing) + ".")
        if r.stopped:
            parts.append("grpo-doctor stopped the run (--on-hang stop).")
        fix = list(_WHERE_FIX.get(r.where or "", ()))
        fix += list(self.meta.fix)
        ev = [Evidence(r.last_path, r.last_lineno, r.last_line[:400])] if r.last_line else []
        sev = Severity.error if r.stopped else self.meta.severity
        return [self.make(message=" ".join(parts), fix=fix, evidence=ev, severity=sev, count=len(mine))]


class LiveHangAtStart(LiveHang):
    want = "start"


class LiveHangMidTraining(LiveHang):
    want = "mid"


_WHERE_FIX = {
    "reward-function": ("A reward function never returned: add a timeout to its network / subprocess / sandbox calls "
                        "(and return a reward of 0 on timeout) so one slow sample cannot stall every rank.",),
    "rollout-generation": ("vLLM generation never finished: lower --max_completion_length or --vllm_max_model_len, "
                           "check the vLLM engine log lines above for an engine error, and set --vllm_gpu_memory_utilization "
                           "so the KV cache is not starved.",),
    "weight-sync": ("Weight sync to vLLM stalled: in server mode check that `swift rollout` is alive and that the "
                    "group port is reachable; in colocate mode try --move_model_batches / --offload_model.",),
    "nccl-collective": ("Ranks wait in a collective that one rank never reached: look at the outlier rank's stack; "
                        "--ddp_timeout 1800 turns such a silent desync into an NCCL timeout with a traceback.",),
    "data-loading": ("The dataloader stalled: try --dataloader_num_workers 0 to see the real error, and check the "
                     "dataset storage (network file system, image URLs).",),
    "checkpoint-save": ("The checkpoint save stalled: check free disk space and the file system of --output_dir; with "
                        "ZeRO-3 the 16-bit gather needs every rank.",),
}


class _SampleRule(Rule):
    """Shared state: the first and the worst sample that crossed the threshold, and for how long."""

    def __init__(self, meta):
        super().__init__(meta)
        self.opt = meta.options


class GpuIdleMemoryHeld(_SampleRule):
    """Every sampled GPU that holds memory shows ~0% utilisation for at least ``idle_seconds``."""

    kinds = frozenset({GPU})

    def __init__(self, meta):
        super().__init__(meta)
        self.since: dict[int, float] = {}
        self.longest: dict[int, tuple[float, float, Gpu]] = {}  # index -> (start, end, sample)

    def feed(self, kind: str, payload: Any) -> None:
        tick: GpuTick = payload
        held = float(self.opt.get("min_mem_gib", 1.0)) * GIB
        for g in tick.gpus:
            idle = tick.alive and g.util is not None and g.util <= float(self.opt.get("idle_util", 2)) and g.mem_used >= held
            if not idle:
                self.since.pop(g.index, None)
                continue
            start = self.since.setdefault(g.index, tick.t)
            prev = self.longest.get(g.index)
            if prev is None or tick.t - start >= prev[1] - prev[0]:
                self.longest[g.index] = (start, tick.t, g)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        need = float(self.opt.get("idle_seconds", 300))
        idle = {i: v for i, v in self.longest.items() if v[1] - v[0] >= need}
        if not idle:
            return []
        desc = ", ".join(f"GPU {i} ({v[1] - v[0]:.0f} s at {v[2].util:.0f}% holding {gib(v[2].mem_used)})"
                         for i, v in sorted(idle.items()))
        msg = (f"{len(idle)} GPU(s) sat idle while holding memory for longer than {need:.0f} s: {desc}. The run is "
               "alive but these GPUs do no work: the ranks wait for something (a collective, the rollout server, a "
               "reward function, data), or the run hangs.")
        return [self.make(message=msg, count=len(idle))]


class GpuMemoryNearFull(_SampleRule):
    kinds = frozenset({GPU})

    def __init__(self, meta):
        super().__init__(meta)
        self.streak: dict[int, int] = {}
        self.hit: dict[int, Gpu] = {}

    def feed(self, kind: str, payload: Any) -> None:
        tick: GpuTick = payload
        frac = float(self.opt.get("fraction", 0.98))
        for g in tick.gpus:
            if g.mem_total and g.mem_used >= frac * g.mem_total:
                self.streak[g.index] = self.streak.get(g.index, 0) + 1
                if self.streak[g.index] >= int(self.opt.get("samples", 3)):
                    worst = self.hit.get(g.index)
                    if worst is None or g.mem_used > worst.mem_used:
                        self.hit[g.index] = g
            else:
                self.streak[g.index] = 0

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if not self.hit:
            return []
        desc = ", ".join(f"GPU {i} {gib(g.mem_used)} of {gib(g.mem_total)}" for i, g in sorted(self.hit.items()))
        msg = (f"GPU memory stayed near full ({desc}); the next longer batch or completion can fail with CUDA out of "
               "memory.")
        fix = list(self.meta.fix)
        vu = ctx.run.get("vllm_gpu_memory_utilization") if ctx.run else None
        if vu is not None:
            fix.insert(0, f"vLLM reserves --vllm_gpu_memory_utilization {vu} of each GPU in colocate mode: lower it "
                          "(e.g. by 0.1) to leave room for training activations.")
        return [self.make(message=msg, fix=fix, count=len(self.hit))]


class HostMemoryLow(_SampleRule):
    kinds = frozenset({HOST})

    def __init__(self, meta):
        super().__init__(meta)
        self.worst: HostTick | None = None

    def feed(self, kind: str, payload: Any) -> None:
        h: HostTick = payload
        frac = float(self.opt.get("fraction", 0.05))
        if h.total and h.available < frac * h.total:
            if self.worst is None or h.available < self.worst.available:
                self.worst = h

    def finish(self, ctx: FinishContext) -> list[Finding]:
        h = self.worst
        if h is None:
            return []
        msg = (f"Host memory ran low: {gib(h.available)} available of {gib(h.total)} ({100 * h.available / h.total:.1f}%) "
               f"at {h.t:.0f} s. The kernel's OOM killer ends the biggest process without a Python traceback (the log "
               "then stops or torchrun reports SIGKILL / exit code -9).")
        return [self.make(message=msg)]


class DiskTooSmall(_SampleRule):
    kinds = frozenset({DISK})

    def __init__(self, meta):
        super().__init__(meta)
        self.worst: DiskTick | None = None

    def feed(self, kind: str, payload: Any) -> None:
        d: DiskTick = payload
        if d.need > 0 and d.free < d.need:
            if self.worst is None or d.free < self.worst.free:
                self.worst = d

    def finish(self, ctx: FinishContext) -> list[Finding]:
        d = self.worst
        if d is None:
            return []
        msg = (f"The disk holding {d.path} has {gib(d.free)} free, less than the next checkpoint needs "
               f"(~{gib(d.need)}, {d.basis}); the save will fail half-written.")
        fix = [f"Free at least {gib(d.need - d.free)} on that file system, or point --output_dir elsewhere.",
               "Keep fewer checkpoints (--save_total_limit 2) and, for full training, --save_only_model true "
               "(no optimizer state)."]
        return [self.make(message=msg, fix=fix)]
