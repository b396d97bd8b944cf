"""The live side of the GPU rules GD502 and GD504: what ``grpo-doctor watch`` samples through NVML (``GpuTick``)
judged over time, where a snapshot is judged at one moment. The rules feed these trackers and report their
result next to the snapshot findings; ``analyze`` never emits ``GpuTick``, so post-mortem they stay empty.
Like every rule they do no I/O and never print. (Until 0.2 these were the rules GD903 and GD904.)
"""
from __future__ import annotations

from typing import Any

from ...signals import Gpu, GpuTick
from .._units import GIB, gib


class IdleHeldTracker:
    """GPUs that hold memory at ~0% utilisation for at least ``live_idle_seconds`` while the run is alive."""

    def __init__(self, opt: dict[str, Any]):
        self.idle_seconds = float(opt.get("live_idle_seconds", 300))
        self.idle_util = float(opt.get("live_idle_util", 2))
        self.held = float(opt.get("live_min_mem_gib", 1.0)) * GIB
        self.since: dict[int, float] = {}
        self.longest: dict[int, tuple[float, float, Gpu]] = {}  # index -> (start, end, sample)

    def feed(self, tick: GpuTick) -> None:
        for g in tick.gpus:
            idle = tick.alive and g.util is not None and g.util <= self.idle_util and g.mem_used >= self.held
            if not idle:
                self.since.pop(g.index, None)
                continue
            start = self.since.setdefault(g.index, tick.t)
            prev = self.longest.get(g.index)
            if prev is None or tick.t - start >= prev[1] - prev[0]:
                self.longest[g.index] = (start, tick.t, g)

    def message(self) -> tuple[str, int] | None:
        idle = {i: v for i, v in self.longest.items() if v[1] - v[0] >= self.idle_seconds}
        if not idle:
            return None
        desc = ", ".join(f"GPU {i} ({v[1] - v[0]:.0f} s at {v[2].util:.0f}% holding {gib(v[2].mem_used)})"
                         for i, v in sorted(idle.items()))
        return (f"{len(idle)} GPU(s) sat idle while holding memory for longer than {self.idle_seconds:.0f} s: {desc}. "
                "The run is alive but these GPUs do no work: the ranks wait for something (a collective, the rollout "
                "server, a reward function, data), or the run hangs."), len(idle)


class NearFullTracker:
    """GPU memory at or above ``live_fraction`` of the card for ``live_samples`` samples in a row."""

    def __init__(self, opt: dict[str, Any]):
        self.fraction = float(opt.get("live_fraction", 0.98))
        self.samples = int(opt.get("live_samples", 3))
        self.streak: dict[int, int] = {}
        self.hit: dict[int, Gpu] = {}

    def feed(self, tick: GpuTick) -> None:
        for g in tick.gpus:
            if g.mem_total and g.mem_used >= self.fraction * g.mem_total:
                self.streak[g.index] = self.streak.get(g.index, 0) + 1
                if self.streak[g.index] >= self.samples:
                    worst = self.hit.get(g.index)
                    if worst is None or g.mem_used > worst.mem_used:
                        self.hit[g.index] = g
            else:
                self.streak[g.index] = 0

    def message(self) -> tuple[str, int] | None:
        if not self.hit:
            return None
        desc = ", ".join(f"GPU {i} {gib(g.mem_used)} of {gib(g.mem_total)}" for i, g in sorted(self.hit.items()))
        return (f"GPU memory stayed near full ({desc}); the next longer batch or completion can fail with CUDA out "
                "of memory."), len(self.hit)


class OtherJobTracker:
    """Memory on the run's GPUs held by processes that are not the watched run's (neither the child nor one of its
    descendants) in ``live_samples`` samples in a row: another job started on them, or a previous run's worker
    is still there."""

    def __init__(self, opt: dict[str, Any]):
        self.samples = int(opt.get("live_samples", 3))
        self.held = float(opt.get("live_min_mem_gib", 1.0)) * GIB
        self.streak: dict[tuple[int, int], int] = {}
        self.hit: dict[tuple[int, int], int] = {}   # (gpu, pid) -> most bytes seen

    def feed(self, tick: GpuTick) -> None:
        if not tick.own:   # the run's processes are not known: nothing to tell another job by
            return
        seen = set()
        for g in tick.gpus:
            for pid, used in g.procs:
                if pid in tick.own or used < self.held:
                    continue
                key = (g.index, pid)
                seen.add(key)
                self.streak[key] = self.streak.get(key, 0) + 1
                if self.streak[key] >= self.samples:
                    self.hit[key] = max(used, self.hit.get(key, 0))
        for key in list(self.streak):
            if key not in seen:
                del self.streak[key]

    def message(self) -> tuple[str, int] | None:
        if not self.hit:
            return None
        desc = ", ".join(f"GPU {i}: process {pid} {gib(b)}" for (i, pid), b in sorted(self.hit.items()))
        return (f"Processes that are not part of the watched run held memory on its GPUs ({desc}): another job "
                "shares them, or a worker of an earlier run is still alive; the run has that much less memory, and "
                "vLLM's start-up check counts it against vllm_gpu_memory_utilization."), len(self.hit)
