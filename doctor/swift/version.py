"""Library versions as grpo-doctor reads them: one parser, one meaning of "unknown" (None)."""
from __future__ import annotations

import re

from .. import lazyre

MajorMinor = tuple[int, int]

_MM = lazyre.compile(r"v?(\d+)\.(\d+)")


def major_minor(text: object) -> MajorMinor | None:
    """``"3.12.0.dev0"`` -> (3, 12); None when the text holds no version (unknown)."""
    if not isinstance(text, str):
        return None
    m = _MM.match(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def at_least(version: MajorMinor | None, want: MajorMinor, major_hint: int | None = None) -> bool | None:
    """Is ``version`` at least ``want``? None when it cannot be told (no version, or only a major hint that
    equals ``want``'s major)."""
    if version is not None:
        return version >= want
    if major_hint is not None and major_hint != want[0]:
        return major_hint > want[0]
    return None


def span(ranges: str | None) -> tuple[MajorMinor, MajorMinor] | None:
    """The oldest and newest release of a range text ("3.5-3.11,4.2-4.6" -> ((3, 5), (4, 6))), or None."""
    found = [mm for mm in (major_minor(p) for p in re.split(r"[-,]", ranges or "")) if mm is not None]
    return (min(found), max(found)) if found else None
