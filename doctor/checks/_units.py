"""Units of the live rules' messages: bytes as GiB, seconds."""
from __future__ import annotations

GIB = 1024 ** 3


def secs(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
