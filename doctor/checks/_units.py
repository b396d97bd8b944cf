"""Units of the rules' messages: bytes as GiB, seconds, durations."""
from __future__ import annotations

GIB = 1024 ** 3


def secs(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def _trim(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def duration(seconds: float) -> str:
    """A duration as people say it, one unit: 45 s, 10 min, 3.6 min, 5.4 h, 2.3 days (a unit from twice its size)."""
    if seconds >= 2 * 86400:
        return f"{_trim(seconds / 86400)} days"
    if seconds >= 2 * 3600:
        return f"{_trim(seconds / 3600)} h"
    if seconds >= 120:
        return f"{_trim(seconds / 60)} min"
    return f"{seconds:.0f} s"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
