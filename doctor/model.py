"""The records that flow through grpo-doctor: signals in, findings out.

Everything here is a plain frozen dataclass (or a small mutable accumulator where noted) so that
rules stay pure and the renderers can serialise without surprises.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    info = 0
    warning = 1
    error = 2

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}: use info, warning or error") from None


class Role(str, enum.Enum):
    root = "root"
    consequence = "consequence"
    standalone = "standalone"


# Signal kinds. A rule declares which of these it wants to see.
LINE = "line"            # one decoded, cleaned log line
METRICS = "metrics"      # one step's metrics (logging.jsonl or a printed dict)
EXCEPTION = "exception"  # a Python exception with its last frames, parsed from the log
COMPLETIONS = "completions"  # one row group of completions.jsonl
RUN_END = "run_end"      # the run reached its normal end (summary line, End time of running main)
EOF = "eof"              # one input file is exhausted
CHECKPOINT = "checkpoint"  # the facts of one checkpoint directory (doctor.sources.checkpoint)
GPU = "gpu"              # one nvidia-smi snapshot / NVML sample: (path, list[GpuSample])


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


@dataclass(frozen=True, slots=True)
class Signal:
    kind: str
    payload: Any


@dataclass(frozen=True, slots=True)
class Evidence:
    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True)
class Finding:
    rule_id: str
    slug: str
    category: str
    severity: Severity
    title: str
    message: str
    fix: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    count: int = 1
    ranks: tuple[int, ...] = ()
    role: Role = Role.standalone
    first_seq: int = 0  # ordering: where in the inputs the finding first appeared
    priority: int = 50  # within one severity: higher is more specific / more likely the cause

    def to_json(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "slug": self.slug,
            "category": self.category,
            "severity": self.severity.name,
            "title": self.title,
            "message": self.message,
            "fix": list(self.fix),
            "evidence": [e.to_json() for e in self.evidence],
            "count": self.count,
            "ranks": list(self.ranks),
            "role": self.role.value,
        }


@dataclass(frozen=True)
class InputInfo:
    path: str
    kind: str  # log | metrics | args | gpu | checkpoint | completions | skipped
    note: str = ""  # why a "skipped" input was not read (a link out of the run dir, a FIFO, permission denied)

    def to_json(self) -> dict[str, str]:
        out = {"path": self.path, "kind": self.kind}
        if self.note:
            out["note"] = self.note  # additive (schema 1): only on skipped inputs
        return out


@dataclass
class Report:
    tool_version: str
    inputs: list[InputInfo]
    run: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "tool": {"name": "grpo-doctor", "version": self.tool_version},
            "inputs": [i.to_json() for i in self.inputs],
            "run": self.run,
            "findings": [f.to_json() for f in self.findings],
        }
