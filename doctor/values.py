"""Reading a number that a rule matched or a run configured: one reader for the whole tool (nvidia-smi cells,
with their units and N/A spellings, have their own in sources/gpu_model.py)."""
from __future__ import annotations

from typing import Any


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
