"""A pure function of one text, cached for short texts: watch asks the same questions of the same last lines, commands
and findings at every live evaluation. A long text (a log line may be 64 KiB) is computed each time, never kept."""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

SHORT = 8192   # characters: the last lines of each log and the findings' sentences fit
_SIZE = 512    # texts kept per function
T = TypeVar("T")


def for_short_texts(fn: Callable[[str], T]) -> Callable[[str], T]:
    cached = lru_cache(maxsize=_SIZE)(fn)

    @wraps(fn)
    def call(text: str) -> T:
        return cached(text) if len(text) <= SHORT else fn(text)
    return call


__all__ = ["SHORT", "for_short_texts"]
