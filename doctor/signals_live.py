"""The signals only ``grpo-doctor watch`` emits: samples of the machine and the hang watchdog's verdict. Part of the
list in doctor/signals.py (``from doctor.signals import GpuTick`` works); defined here so that nothing else pays
for them."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One GPU's sample: utilisation and memory."""
    index: int
    util: float | None      # percent
    mem_used: int           # bytes
    mem_total: int          # bytes
    procs: tuple[tuple[int, int], ...] = ()   # (pid, bytes) of the compute processes NVML lists on it


@dataclass(frozen=True)
class GpuTick:
    """The GPUs sampled at one moment of a watched run."""
    t: float                # seconds since watch started
    gpus: tuple[Gpu, ...]
    alive: bool = True      # the child was running when sampled
    own: frozenset[int] = frozenset()   # pids of the watched run (the child and its descendants)


@dataclass(frozen=True)
class HostTick:
    """The host memory sampled at one moment of a watched run."""
    t: float
    available: int
    total: int
    swap_free: int = 0


@dataclass(frozen=True)
class DiskTick:
    """The free space of the output folder's disk at one moment of a watched run."""
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


@dataclass(frozen=True)
class RunExit:
    """How the watched command ended when it ended badly by itself (built by doctor.live at the end)."""

    t: float
    code: int               # the exit status, or -N when killed by signal N
    signal_name: str | None  # "SIGKILL", ...
    kernel_lines: tuple[str, ...] = ()   # the kernel log's OOM lines about the run's processes
    kernel_note: str | None = None       # why the kernel log could not be read
