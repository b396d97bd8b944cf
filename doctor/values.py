"""Reading a number that a rule matched or a run configured: one reader for the whole tool (nvidia-smi cells,
with their units and N/A spellings, have their own in sources/gpu_model.py)."""
from __future__ import annotations

import math
from typing import Any

from . import lazyre

_DIGITS = lazyre.compile(r"\d+")


def version_key(v: str) -> tuple[int, ...]:
    """A release's text as numbers to compare ('0.7.3' -> (0, 7, 3); 'v4.46.0rc1' -> (4, 46, 0)): its first three."""
    return tuple(int(x) for x in _DIGITS.findall(v)[:3])


def minor(v: str) -> str:
    """'4.46.3' -> '4.46' (the raise-site index's release labels); a text without two numbers as it is."""
    parts = _DIGITS.findall(v)
    return ".".join(parts[:2]) if len(parts) >= 2 else v


def as_int(v: Any, *, floats: bool = False) -> int | None:
    """A captured or configured value as an int; None for missing, '?', a bool, or text that is not a number.

    ``floats``: also read float text and values ('2048.0', '1e3', 7.9 -> 7), as configuration files write them;
    NaN and infinity are None."""
    if v is None or isinstance(v, bool) or v == "?":
        return None
    try:
        return int(float(v)) if floats else int(v)
    except (TypeError, ValueError, OverflowError):
        return None


def as_number(v: Any) -> float | None:
    """A configured value as a float, NaN and infinity included; None for missing, a bool or text that is not a number
    (the memory plan's and the OOM fixes' number reader, doctor/swift/planner.py, kept here: the planner module costs
    ~9 M instructions to import and the memory facts every watch builds at start need this function only)."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a 400-digit integer from a log (issue 18)
        return None


def as_float(v: Any) -> float | None:
    """A logged or configured value as a finite float ('0.99', 0.99); None for missing, a bool, NaN, infinity or text
    that is not a number."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None
