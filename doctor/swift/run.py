"""What rules read about the ms-swift of the run at hand: its version as a label for messages, an at-least test
that knows "unknown", and the name the tuner flag has in that version."""
from __future__ import annotations

from ..sources.swiftconfig import RunConfig
from . import version
from .flags import flag_exists


def version_label(run: RunConfig) -> str:
    if run.swift_version:
        return f"ms-swift {run.swift_version}"
    if run.major:
        return f"ms-swift {run.major}.x"
    return "ms-swift"


def at_least(run: RunConfig, major: int, minor: int = 0) -> bool | None:
    """Is the run's ms-swift at least major.minor? None when unknown (only the major hint may help)."""
    return version.at_least(run.swift_major_minor, (major, minor), run.major)


def tuner_flag(run: RunConfig) -> str:
    """The tuner flag name that exists in this version."""
    new = at_least(run, 4, 0)
    if new is False:
        return "train_type"
    if new is None and "train_type" in run.args and "tuner_type" not in run.args:
        return "train_type"
    return "tuner_type"


def flag_in_version(run: RunConfig, flag: str) -> bool:
    """Does the run's ms-swift have this flag (the flag table of flags.py; an unknown version is a recent one)?"""
    return flag_exists(run.swift_major_minor, flag)
