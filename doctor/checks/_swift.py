"""What several rule families read about a run's ms-swift: its version (a label for messages, an at-least test
that knows "unknown"), the name the tuner flag has in that version, and integer-valued arguments."""
from __future__ import annotations

from typing import Any

from ..sources.swiftconfig import RunConfig


def version_label(run: RunConfig) -> str:
    if run.swift_version:
        return f"ms-swift {run.swift_version}"
    if run.major:
        return f"ms-swift {run.major}.x"
    return "ms-swift"


def at_least(run: RunConfig, major: int, minor: int = 0) -> bool | None:
    """Is the run's ms-swift at least major.minor? None when unknown (only the major hint may help)."""
    mm = run.swift_major_minor
    if mm is not None:
        return mm >= (major, minor)
    if run.major is not None:
        if run.major > major:
            return True
        if run.major < major:
            return False
    return None


def as_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def tuner_flag(run: RunConfig) -> str:
    """The tuner flag name that exists in this version."""
    new = at_least(run, 4, 0)
    if new is False:
        return "train_type"
    if new is None and "train_type" in run.args and "tuner_type" not in run.args:
        return "train_type"
    return "tuner_type"
