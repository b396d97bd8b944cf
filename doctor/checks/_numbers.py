"""Honest numbers (issue 15 point 6, issue 17 point 17): every value a message or fix shows is read from the
inputs, computed from read values, or assumed. ``Num`` carries the value and how it is known; ``show`` writes it
with a mark: nothing for a value read from the log or configuration, ``(computed)`` and ``(assumed)`` otherwise.
A value computed from an assumed one is assumed too. A default that the run did not set (a framework's default
world size, batch or length) is assumed: the inputs do not say it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

READ, COMPUTED, ASSUMED = "read", "computed", "assumed"
_RANK = {READ: 0, COMPUTED: 1, ASSUMED: 2}
T = TypeVar("T", int, float)


def mark(text: str, how: str) -> str:
    """``text`` with the mark of ``how``: bare when read."""
    return text if how == READ else f"{text} ({how})"


@dataclass(frozen=True)
class Num(Generic[T]):
    """A number in a message and how it was had: read from the run, computed or assumed."""
    value: T
    how: str = READ

    @property
    def assumed(self) -> bool:
        return self.how == ASSUMED

    def __str__(self) -> str:
        return mark(f"{self.value:g}" if isinstance(self.value, float) else str(self.value), self.how)


def first(*candidates: tuple[int | None, str], default: int = 1) -> Num[int]:
    """The first candidate value that is known, with its provenance; else ``default``, assumed."""
    for value, how in candidates:
        if value is not None:
            return Num(value, how)
    return Num(default, ASSUMED)


def read_or(value: T | None, default: T) -> Num[T]:
    """A value read from the inputs, else ``default`` (the framework's default, or a value taken to get on),
    assumed."""
    return Num(value, READ) if value is not None else Num(default, ASSUMED)


def computed(value: T, *inputs: Num) -> Num[T]:
    """A value computed from ``inputs``: assumed when any input is."""
    worst = max((_RANK[i.how] for i in inputs), default=0)
    return Num(value, ASSUMED if worst == 2 else COMPUTED)


def show(name: str, num: Num) -> str:
    return f"{name} {num}"


def assumptions(*named: tuple[str, Num], why: str = "not in the log") -> str:
    """'' when nothing is assumed, else ' (assumes world size 1 and per_device_train_batch_size 1: not in the
    log)' for the fixes built on those values."""
    names = [f"{n} {v.value:g}" if isinstance(v.value, float) else f"{n} {v.value}" for n, v in named if v.assumed]
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f" (assumes {listed}: {why})"


def sure_first(fixes: list[tuple[str, bool]]) -> list[str]:
    """Fix lines, those that rest on no assumption first (a stable order otherwise)."""
    return [text for text, _ in sorted(fixes, key=lambda f: f[1])]


def now(value: object) -> str:
    """'now 1e-05' for a flag read from the run, 'now the default' when the inputs do not give it (never 'now ?')."""
    return f"now {value}" if value is not None and value != "" else "now the default"
