"""The one list of what flows from sources to rules. A rule declares the signal types it reads (``kinds``) and
gets each one in ``feed(signal)``; the session routes by type. Sources make them, rules never do.

- post-mortem and live: LogLine (one decoded log line), ExceptionInfo (a Python exception parsed from the log),
  Metrics (one row of logging.jsonl or a printed metrics dict), Completions (one completions.jsonl table),
  GpuSnapshot (one nvidia-smi file or NVML sample), CheckpointInput (the facts of one checkpoint directory);
- live only (``grpo-doctor watch``): GpuTick, HostTick, DiskTick (samples of the machine) and HangReport (the
  hang watchdog's verdict).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .sources.checkpoint import CheckpointFacts


@dataclass(frozen=True, slots=True)
class Where:
    """A position in an input: the file (as given by the user) and a 1-based line number."""

    path: str
    line: int


@dataclass(frozen=True, slots=True)
class LogLine:
    """A log line after decoding: ANSI, NUL, rank and engine prefixes removed.

    ``raw`` keeps the line as it appeared (minus control characters) for evidence.
    ``rank`` is the distributed rank of a ``[rankN]:`` prefix, or None.
    ``seq`` is a global counter across all inputs (ordering of first causes).
    """

    text: str
    raw: str
    where: Where
    rank: int | None
    seq: int
    origin: str = ""  # "vllm-worker", "vllm-engine", "" ...


@dataclass(frozen=True, slots=True)
class Frame:
    path: str
    lineno: int
    func: str
    code: str = ""


@dataclass(frozen=True, slots=True)
class ExceptionInfo:
    """A Python exception as printed in a log: type, message and the frames above it."""

    type: str           # e.g. "ValueError", "torch.OutOfMemoryError"
    message: str
    frames: tuple[Frame, ...]
    where: Where        # the line holding "Type: message"
    rank: int | None
    seq: int
    raw: str

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]

    @property
    def raised_at(self) -> Frame | None:
        return self.frames[-1] if self.frames else None


@dataclass(frozen=True, slots=True)
class Metrics:
    values: dict[str, Any]
    where: Where
    seq: int
    source: str  # "jsonl" or "console"
    finite: bool | None = None  # True: no value is NaN/inf (known from parsing); else: not known


class Completions(NamedTuple):
    """One table of completions.jsonl (the rows of one step) and where it was read."""

    row: Any
    where: Where


class GpuSnapshot(NamedTuple):
    """One nvidia-smi snapshot or NVML sample: the file (or pseudo-path) it came from, its GpuSample rows."""

    path: str
    samples: list
    seq: int


@dataclass(frozen=True)
class CheckpointInput:
    """The facts of one checkpoint directory (file sizes and headers only) and what the user said to expect."""

    facts: CheckpointFacts
    expect: str | None = None  # "full" | "lora" | None


# ---------------------------------------------------------------------------------------------- live only
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
