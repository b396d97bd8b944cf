"""What rules read about the ms-swift of the run at hand: its version as a label for messages, an at-least test
that knows "unknown", and the name the tuner flag has in that version.

When the log printed no ms-swift version, the releases inferred from the wording of its errors
(``run.inferred_versions``, doctor/classify/provenance.py) stand in: at-least is answered when the whole range
is on one side, a flag exists when the newest release of the range has it, and the label says it is inferred.
"""
from __future__ import annotations

from ..sources.swiftconfig import RunConfig
from . import version
from .flags import flag_exists

INFERRED = "inferred from the wording of the error"


def inferred(run: RunConfig) -> tuple[version.MajorMinor, version.MajorMinor] | None:
    """(oldest, newest) ms-swift release inferred for a run whose version is unknown; None otherwise."""
    if run.swift_major_minor is not None:
        return None
    return version.span(getattr(run, "inferred_versions", {}).get("ms-swift"))


def version_label(run: RunConfig) -> str:
    if run.swift_version:
        return f"ms-swift {run.swift_version}"
    if inferred(run) is not None:
        from ..classify.raise_sites import open_below
        return f"ms-swift {open_below('ms-swift', run.inferred_versions['ms-swift'])} ({INFERRED})"
    if run.major:
        return f"ms-swift {run.major}.x"
    return "ms-swift"


def at_least(run: RunConfig, major: int, minor: int = 0) -> bool | None:
    """Is the run's ms-swift at least major.minor? None when unknown (an inferred range or the major hint may
    still tell)."""
    span = inferred(run)
    if span is not None:
        if span[0] >= (major, minor):
            return True
        if span[1] < (major, minor):
            return False
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
    """Does the run's ms-swift have this flag (the flag table of flags.py; an unknown version is a recent one, an
    inferred range its newest release)?"""
    span = inferred(run)
    return flag_exists(span[1] if span else run.swift_major_minor, flag)
