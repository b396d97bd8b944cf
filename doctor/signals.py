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
from typing import TYPE_CHECKING, Any

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
    """One frame of a Python traceback: file, line, function and the code shown."""
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
    """One row of metrics (a logging.jsonl line or a printed metric dict) and where it was read."""
    values: dict[str, Any]
    where: Where
    seq: int
    source: str  # "jsonl" or "console"
    finite: bool | None = None  # True: no value is NaN/inf (known from parsing); else: not known


# A frozen dataclass's __init__ sets each field through object.__setattr__: 3.4 us for a Metrics and its Where, paid per
# row of a dense console log. Its slots' own setters give the same objects (same fields, still frozen) in 1.0 us.
_new = object.__new__
_SET_WHERE = tuple(getattr(Where, k).__set__ for k in ("path", "line"))
_SET_METRICS = tuple(getattr(Metrics, k).__set__ for k in ("values", "where", "seq", "source", "finite"))


def console_row(values: dict[str, Any], path: str, line: int, seq: int, finite: bool | None,
                source: str = "console") -> Metrics:
    """``Metrics(values, Where(path, line), seq, source, finite)``, built faster (see above)."""
    set_path, set_line = _SET_WHERE
    where = _new(Where)
    set_path(where, path)
    set_line(where, line)
    set_values, set_where, set_seq, set_source, set_finite = _SET_METRICS
    m = _new(Metrics)
    set_values(m, values)
    set_where(m, where)
    set_seq(m, seq)
    set_source(m, source)
    set_finite(m, finite)
    return m


class LazyMetrics(Metrics):
    """A Metrics of a console run's row (sources/step_runs.py) whose ``values`` is built on first read: a run's values
    go to its block's columns, and most rows are never read as a dict (only those a finding quotes, and the series'
    kept rows). The same values, the same objects, in the same key order as the dict built at once; a reader takes
    it for a Metrics (``isinstance``; the session routes it with them, ``METRICS_TYPES``)."""

    __slots__ = ("lazy",)
    lazy: Any   # (keys, the run's values row after row, this row's first place in them), then the dict

    @property  # type: ignore[misc]
    def values(self) -> dict[str, Any]:  # type: ignore[override]
        row = self.lazy
        if type(row) is not dict:
            keys, values, at = row
            row = dict(zip(keys, values[at:at + len(keys)]))
            _SET_LAZY(self, row)
        return row  # type: ignore[no-any-return]

    def eager(self) -> Metrics:
        return Metrics(self.values, self.where, self.seq, self.source, self.finite)

    def __eq__(self, other: object) -> bool:
        return self.eager() == (other.eager() if isinstance(other, LazyMetrics) else other)

    def __repr__(self) -> str:
        return repr(self.eager())

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy or a pickle is the Metrics it stands for (the dataclass's own state would set ``values``, a property)
        return Metrics, (self.values, self.where, self.seq, self.source, self.finite)


_SET_LAZY = LazyMetrics.lazy.__set__  # type: ignore[attr-defined]   # past the frozen __setattr__, as _SET_METRICS
METRICS_TYPES = frozenset((Metrics, LazyMetrics))   # the types of a metric row (a block may hold both)


def console_run_row(row: tuple[tuple[str, ...], list[Any], int], path: str, line: int, seq: int,
                    finite: bool) -> Metrics:
    """``console_row`` of a run's row (keys, the run's values row after row, the row's first place in them) as a
    LazyMetrics: its dict is built only if read."""
    set_path, set_line = _SET_WHERE
    where = _new(Where)
    set_path(where, path)
    set_line(where, line)
    _, set_where, set_seq, set_source, set_finite = _SET_METRICS
    m = _new(LazyMetrics)
    _SET_LAZY(m, row)
    set_where(m, where)
    set_seq(m, seq)
    set_source(m, "console")
    set_finite(m, finite)
    return m


# The three signals below are plain slotted classes: a dataclass costs ~1.5 ms of every command's start-up.
class Completions:
    """One table of completions.jsonl (the rows of one step) and where it was read."""

    __slots__ = ("row", "where")

    def __init__(self, row: Any, where: Where):
        self.row = row
        self.where = where


class GpuSnapshot:
    """One nvidia-smi snapshot or NVML sample: the file (or pseudo-path) it came from, its GpuSample rows."""

    __slots__ = ("path", "samples", "seq")

    def __init__(self, path: str, samples: list, seq: int = 0):
        self.path = path
        self.samples = samples
        self.seq = seq


class CheckpointInput:
    """The facts of one checkpoint directory (file sizes and headers only) and what the user said to expect."""

    __slots__ = ("facts", "expect", "gate")

    def __init__(self, facts: CheckpointFacts, expect: str | None = None, gate: bool = False):
        self.facts = facts
        self.expect = expect  # "full" | "lora" | None
        # check-ckpt, where the folder is the thing judged: a run folder shared for analyze often leaves the weights out
        self.gate = gate


# the live-only signals are defined in doctor/signals_live.py, imported on first use: a post-mortem (and every
# command's start-up) never pays for their classes
_LIVE = ("Gpu", "GpuTick", "HostTick", "DiskTick", "HangReport", "RunExit")


def __getattr__(name: str) -> Any:
    if name in _LIVE:
        from . import signals_live
        return getattr(signals_live, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
