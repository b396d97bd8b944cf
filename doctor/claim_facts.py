"""The facts a claim is checked against (``RunFacts``: the run's configuration, ranks, metric rows, CUDA OOM
messages, trainer kind) and the claim types themselves; the checker and its kinds are doctor/claims.py."""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import lazyre

GIB = 1024 ** 3


# ------------------------------------------------------------------------------------------------ the run's facts

@dataclass
class MetricFacts:
    """What the logged rows say of one metric key: rows logged, rows at zero, rows NaN/inf, a non-zero example."""
    logged: int = 0
    zero: int = 0
    nonfinite: int = 0
    example: float | None = None   # a finite non-zero value (for the reason shown in tests and --debug)

    def add(self, v: float) -> None:
        self.logged += 1
        if not math.isfinite(v):
            self.nonfinite += 1
        elif abs(v) <= 1e-6:
            self.zero += 1
        elif self.example is None:
            self.example = v


METRIC_KEYS = ("loss", "grad_norm", "reward", "reward_std")


@dataclass(frozen=True)
class Oom:
    """One CUDA out-of-memory message: GiB requested, free and the GPU's total (None when it does not say)."""
    requested: float
    free: float
    total: float | None = None
    allowed: float | None = None   # a per-process cap torch printed ("<size> allowed;")

    @property
    def ample(self) -> bool:
        """Free memory far above the request: not a shortage of memory."""
        return self.free >= max(2 * self.requested, self.requested + 1.0)


@dataclass
class RunFacts:
    """The facts a claim is checked against (all optional: an unknown fact contradicts nothing)."""
    args: dict[str, Any] = field(default_factory=dict)
    cli: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    world: int | None = None           # the training processes (rank line, launcher)
    max_rank: int | None = None        # the highest training rank in the log ([rankN]: prefixes, exceptions)
    model: str | None = None
    params_read: bool = False          # the log printed a parameter count (model_parameter_info, trainable params)
    metrics: dict[str, MetricFacts] = field(default_factory=dict)
    ooms: tuple[Oom, ...] = ()
    config_read: bool = True           # a command, an argument dump or args.json was read (False: "unset" is unknown)
    command_given: bool = False        # the launch command was read (a command file, a launch line): no request for it
    trainer: str | None = None         # GRPO, DPO, SFT, a server... (doctor/swift/trainer_kind.py); None: not told
    trainer_label: str = ""            # how the report names it ("DPO")
    trainer_config: str | None = None  # its trl config class ("DPOConfig")

    @property
    def world_at_least(self) -> int | None:
        """The fewest processes the run can have had: its world size, or the highest rank seen + 1."""
        got = [w for w in (self.world, (self.max_rank + 1) if self.max_rank is not None else None) if w]
        return max(got) if got else None

    def value(self, name: str) -> Any:
        """The run's value of a flag or environment variable, or None when the run does not set it."""
        key = name[2:] if name.startswith("--") else name
        for src in ((self.env,) if key.isupper() else (self.cli, self.args)):
            v = src.get(key)
            if v is not None and str(v).strip() not in ("", "None", "null"):
                return v
        return None


_ALLOC = lazyre.compile(r"Tried to allocate ([\d.]+) ?([KMGT]i?B|bytes)", re.I)
_FREE = lazyre.compile(r"(?:of which ([\d.]+) ?([KMGT]i?B|bytes) (?:is )?free|;\s*([\d.]+) ?([KMGT]i?B) free)", re.I)
_CAP = lazyre.compile(r"([\d.]+) ?([KMGT]i?B) allowed;")   # c10/cuda/CUDACachingAllocator.cpp allowed_info
_TOTAL = lazyre.compile(r"(?:total capacity of ([\d.]+) ?([KMGT]i?B)|([\d.]+) ?([KMGT]i?B) total capacity)", re.I)
_UNIT = {"k": 1 / 1024 ** 2, "m": 1 / 1024, "g": 1.0, "t": 1024.0, "b": 1 / GIB}


def _gib(value: str, unit: str) -> float:
    return float(value) * _UNIT[unit[0].lower()]


def read_oom(text: str) -> Oom | None:
    """The numbers of a CUDA OOM message (both PyTorch wordings), or None when it gives no request and free."""
    a, f = _ALLOC.search(text), _FREE.search(text)
    if a is None or f is None:
        return None
    try:
        free = _gib(f.group(1), f.group(2)) if f.group(1) else _gib(f.group(3), f.group(4))
        t = _TOTAL.search(text)
        total = None if t is None else _gib(t.group(1), t.group(2)) if t.group(1) else _gib(t.group(3), t.group(4))
        cap = _CAP.search(text)
        return Oom(_gib(a.group(1), a.group(2)), free, total, _gib(cap.group(1), cap.group(2)) if cap else None)
    except (ValueError, KeyError):
        return None


# ----------------------------------------------------------------------------------------------- claims and kinds

@dataclass(frozen=True)
class Claim:
    """One fact a sentence states: its kind (``KINDS``), what it is about (a flag, a metric key, a package...),
    the value it states, and where it sits in the sentence (``start``/``end``; -1 for a declared claim)."""
    kind: str
    subject: str
    value: str = ""
    start: int = -1
    end: int = -1


@dataclass(frozen=True)
class Verdict:
    """A contradicted claim: why, and the sentence that replaces it (None: the sentence goes)."""
    why: str
    rewrite: str | None = None


@dataclass(frozen=True)
class Kind:
    """A kind of claim a message can make, and the run fact it rests on."""
    name: str
    fact: str                                                     # the run fact it rests on (documentation)
    find: Callable[[str, str], Iterator[Claim]]                   # (sentence, masked sentence) -> claims
    judge: Callable[[Claim, str, RunFacts], Verdict | None]       # None: the facts do not contradict it


# quoted log text is not a claim of ours: `...` spans and '...' quotes are masked before recognition
_QUOTED = lazyre.compile(r"`[^`]*`|(?<![\w])'[^'\n]{2,}?'(?![\w])|\"[^\"\n]{2,}?\"")
# words that make what follows in its clause a condition or a test, not a statement about this run
_CONDITION = lazyre.compile(r"\b(?:if|when|whether|unless|until|once|where|whenever|suppose|e\.g\.|say)\b[^,;:()]*$", re.I)


def mask(sentence: str) -> str:
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), sentence)


def conditional(masked: str, start: int) -> bool:
    return _CONDITION.search(masked[:start]) is not None
