"""GD903 / GD904 (``grpo-doctor watch``): GPUs idle while holding memory, GPU memory near full, from the
GPU samples of a live run.

Their signals come from ``doctor/live`` (doctor/checks/_units.py); ``analyze`` never emits them, so
in a post-mortem these rules stay silent. Like every rule they do no I/O and never print.
"""
from __future__ import annotations

from typing import Any

from ...model import Finding
from ...rules import FinishContext, Rule
from ...signals import Gpu, GpuTick
from .._units import GIB, gib


class GpuIdleMemoryHeld(Rule):
    """Every sampled GPU that holds memory shows ~0% utilisation for at least ``idle_seconds``."""

    kinds = frozenset({GpuTick})

    def __init__(self, meta):
        super().__init__(meta)
        self.opt = meta.options
        self.since: dict[int, float] = {}
        self.longest: dict[int, tuple[float, float, Gpu]] = {}  # index -> (start, end, sample)

    def feed(self, signal: Any) -> None:
        tick: GpuTick = signal
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


class GpuMemoryNearFull(Rule):
    kinds = frozenset({GpuTick})

    def __init__(self, meta):
        super().__init__(meta)
        self.opt = meta.options
        self.streak: dict[int, int] = {}
        self.hit: dict[int, Gpu] = {}

    def feed(self, signal: Any) -> None:
        tick: GpuTick = signal
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
