"""Honest numbers (issue 15 point 6, issue 17 point 17): every value a message or fix shows is read from the
inputs, computed from read values, or assumed. ``Num`` carries the value and how it is known; ``show`` writes it
with a mark: nothing for a value read from the log or configuration, ``(computed)`` and ``(assumed)`` otherwise.
A value computed from an assumed one is assumed too.
"""
from __future__ import annotations

from dataclasses import dataclass

READ, COMPUTED, ASSUMED = "read", "computed", "assumed"
_RANK = {READ: 0, COMPUTED: 1, ASSUMED: 2}


@dataclass(frozen=True)
class Num:
    value: int
    how: str = READ

    @property
    def assumed(self) -> bool:
        return self.how == ASSUMED

    def __str__(self) -> str:
        return str(self.value) if self.how == READ else f"{self.value} ({self.how})"


def first(*candidates: tuple[int | None, str], default: int = 1) -> Num:
    """The first candidate value that is known, with its provenance; else ``default``, assumed."""
    for value, how in candidates:
        if value is not None:
            return Num(value, how)
    return Num(default, ASSUMED)


def computed(value: int, *inputs: Num) -> Num:
    """A value computed from ``inputs``: assumed when any input is."""
    worst = max((_RANK[i.how] for i in inputs), default=0)
    return Num(value, ASSUMED if worst == 2 else COMPUTED)


def show(name: str, num: Num) -> str:
    return f"{name} {num}"


def assumptions(*named: tuple[str, Num], why: str = "not in the log") -> str:
    """'' when nothing is assumed, else ' (assumes world size 1 and per_device_train_batch_size 1: not in the
    log)' for the fixes built on those values."""
    names = [f"{n} {v.value}" for n, v in named if v.assumed]
    if not names:
        return ""
    return f" (assumes {' and '.join(names)}: {why})"


def now(value: object) -> str:
    """'now 1e-05' for a flag read from the run, 'now the default' when the inputs do not give it (never 'now ?')."""
    return f"now {value}" if value is not None and value != "" else "now the default"
