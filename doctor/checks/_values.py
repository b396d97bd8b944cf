"""Reading a number that a rule matched or a run configured: one reader for every check."""
from __future__ import annotations

from typing import Any


def as_int(v: Any) -> int | None:
    """A captured or configured value as an int; None for missing, '?' or a bool."""
    try:
        return int(v) if v is not None and v != "?" and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None
