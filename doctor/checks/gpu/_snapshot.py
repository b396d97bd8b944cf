"""What the GPU snapshot rules (GD501-GD506) share: the thresholds, the base rule that keeps the snapshots
and picks the run's GPUs, and the text of a GPU row.

A snapshot is one moment: the messages say what it shows and what a second snapshot would settle.
GPUs the run uses are the ones in CUDA_VISIBLE_DEVICES when the configuration names them, else all.
"""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import GpuSnapshot, GpuTick

IDLE_UTIL = 5.0       # % at or below: not computing
BUSY_UTIL = 50.0
HELD_FRAC = 0.10      # a GPU holding this much of its memory is in use by someone
NEAR_FULL = 0.95
HOT_C = 85.0
SLOWDOWN = ("HW Slowdown", "HW Thermal Slowdown", "SW Thermal Slowdown", "HW Power Brake Slowdown")


# the GPUs of one process that drives several (torch's nn.DataParallel, which transformers' Trainer uses when a plain
# `python` process sees several GPUs): the first holds the master weights, the optimizer and the gathered outputs and
# computes, the others hold a replica a fraction of its size and wait (transformers#4622: 30.9 GB on GPU 0 against
# 19.0 GB on the others; vid2vid#93: 11.4 GB against 3.0 GB). Ranks of one distributed job hold about the same memory
# whether they work or wait (pytorch#36285: four DDP ranks at 9.2 GB, one of them idle)
ONE_PROCESS_RATIO = 0.5


def serves_inference(sample) -> bool:
    """A process of this GPU is an inference server (vLLM, sglang), which sits idle between requests."""
    return any(p.name and ("vllm" in p.name.lower() or "sglang" in p.name.lower()) for p in (sample.processes or ()))


def one_process_shape(gpus) -> tuple[list, list] | None:
    """(busy, waiting): one GPU computes and every other GPU that holds memory is idle with at most half of the busy
    one's memory, none of it an inference server's; None otherwise."""
    busy = [s for s in gpus if s.util_pct is not None and s.util_pct >= BUSY_UTIL and s.mem_used_mib]
    held = [s for s in gpus if s.util_pct is not None and s.util_pct <= IDLE_UTIL and s.mem_frac is not None
            and s.mem_frac >= HELD_FRAC]
    if len(busy) != 1 or not held:
        return None
    if any(serves_inference(s) for s in held):
        return None
    if not all(s.mem_used_mib <= ONE_PROCESS_RATIO * busy[0].mem_used_mib for s in held):
        return None
    return busy, held


def _gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f} GiB"


def _ids(samples) -> str:
    return ", ".join(str(s.index) if s.index is not None else (s.uuid or "?") for s in samples)


class GpuRule(Rule):
    kinds = frozenset({GpuSnapshot})
    tracker: Any = None  # a tracker class of doctor/checks/gpu/live.py: the rule also judges watch's live samples
    # fed nothing: no snapshot, and a live tracker fed no sample says nothing
    idle_silent = True   # (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.snaps: list[GpuSnapshot] = []
        self.live = self.tracker(meta.options) if self.tracker is not None else None
        if self.live is not None:
            self.kinds = frozenset({GpuSnapshot, GpuTick})

    def feed(self, signal: Any) -> None:
        if type(signal) is GpuTick:
            self.live.feed(signal)
        elif len(self.snaps) < 1000:
            self.snaps.append(signal)

    def used(self, ctx: RunState, samples: list) -> list:
        """The GPUs of the run: process-only rows (compute-apps CSV) joined onto their GPU, then the
        CUDA_VISIBLE_DEVICES subset when the configuration names one."""
        from ...sources.gpu import merge  # with its snapshot parsers: imported once a GPU was seen, not at every start
        merged = merge(samples)
        vis = ctx.run.env.get("CUDA_VISIBLE_DEVICES")
        if not vis:
            return merged
        ids = {x.strip() for x in vis.split(",") if x.strip()}
        mine = [s for s in merged if (s.index is not None and str(s.index) in ids) or (s.uuid and s.uuid in ids)]
        return mine or merged

    def ev(self, path: str, text: str, line: int | None = None) -> Evidence:
        return Evidence(path, line or 0, text)

    def finish(self, ctx: RunState) -> list[Finding]:
        out: list[Finding] = []
        for snap in self.snaps:
            path, samples, seq = snap.path, snap.samples, snap.seq
            f = self.check(ctx, path, self.used(ctx, samples), samples, seq)
            if f is not None:
                out.append(f)
                break  # one finding per rule: the first snapshot that shows it
        if self.live is not None and (got := self.live.message()) is not None:
            out.append(self.make(message=got[0], fix=self.live_fix(ctx), count=got[1]))
        return out

    def live_fix(self, ctx: RunState) -> list[str]:
        """The fix lines of a finding from live samples: the rule's ``live_fix`` option, else its own fix."""
        return list(self.meta.options.get("live_fix", self.meta.fix))

    def check(self, ctx, path, gpus, all_samples, seq) -> Finding | None:  # pragma: no cover - interface
        return None


def row(s) -> str:
    parts = [s.label]
    if s.name:
        parts.append(s.name)
    if s.mem_used_mib is not None:
        parts.append(f"{s.mem_used_mib:.0f}/{s.mem_total_mib:.0f} MiB" if s.mem_total_mib else f"{s.mem_used_mib:.0f} MiB")
    if s.util_pct is not None:
        parts.append(f"{s.util_pct:.0f}%")
    if s.temp_c is not None:
        parts.append(f"{s.temp_c:.0f}C")
    if s.power_w is not None:
        parts.append(f"{s.power_w:.0f}W" + (f"/{s.power_cap_w:.0f}W" if s.power_cap_w else ""))
    if s.error:
        parts.append(s.error)
    return " | ".join(parts)
