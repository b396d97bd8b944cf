"""The signals only a live run emits (``grpo-doctor watch``): their kinds and the samples they carry.

``doctor/live`` samples GPUs, host memory and disk space and feeds them to the live rules (gpu/live.py,
memory/host_live.py, checkpoint/disk_live.py; hang/live.py takes the hang watchdog's HangReport);
``analyze`` never emits them, so in a post-mortem those rules stay silent.
"""
from __future__ import annotations

from dataclasses import dataclass

# signal kinds only watch emits (model.GPU is the snapshot kind of doctor/checks/gpu/: not these)
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



def secs(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
