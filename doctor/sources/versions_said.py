"""The releases a paste reports as installed, in the forms people paste them: the environment reports issue templates
ask for (`transformers env` / `trl env`: "- `transformers` version: 4.52.0", "- TRL version: 0.19.0", "- PyTorch
version (GPU?): 2.6.0+cu124 (True)"; `llamafactory-cli env`: "- `llamafactory` version: 0.9.1.dev0"), pip's own
listings (`pip show`: "Name: trl" then "Version: 0.17.0"; `pip list` / `conda list`: the name padded to its column),
and a bare "trl version: 0.18.2". One table of package names (release_fill.PACKAGES) serves both this reader and the
sentences that move a package to another release.
"""
from __future__ import annotations

from .. import lazyre
from ..release_fill import PACKAGES, canonical

_VER = r"v?(?P<ver>\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+|\.?dev\d+)?)"
# "- `transformers` version: 4.52.0", "- TRL version: 0.19.0+5206c92", "trl version: 0.18.2", "PyTorch version (GPU?): 2.6.0"
# (ms-swift's issue template asks for "swift版本" / "swift version": the bare name is ms-swift there)
_REPORT = lazyre.compile(r"(?i)^\s*(?:[-*]\s+)?`?(?P<pkg>" + PACKAGES + r"|swift)`?\s*(?:version|版本)(?:\s*\([^)]{0,20}\))?"
                         r"\s*[:=：]\s*" + _VER + r"(?![\d.])")
# `pip list` / `conda list`: the name at the line's start, padded to the version's column by two spaces or more
_LISTED = lazyre.compile(r"(?i)^(?P<pkg>" + PACKAGES + r")\s{2,}" + _VER + r"(?![\d.])")
_PIP_NAME = lazyre.compile(r"(?i)^Name:\s*(?P<pkg>" + PACKAGES + r")\s*$")
_PIP_VERSION = lazyre.compile(r"^Version:\s*" + _VER + r"\s*$")
# the words that send a line here (the session's gate): every form above holds one
VERSION_WORDS = ("version:", " version (", "Name: ", "Version: ", "版本", "ms_swift", "ms-swift")


class VersionsSaid:
    """Reads lines in order (a `pip show` block spans two) and returns ``(package, version)`` for a line that reports
    an installed release."""

    def __init__(self) -> None:
        self._pip_name: str | None = None

    def read(self, text: str) -> tuple[str, str] | None:
        pending, self._pip_name = self._pip_name, None
        if pending is not None:
            m = _PIP_VERSION.match(text)
            if m is not None:
                return pending, m.group("ver")
        if "ersion" in text or "版本" in text:
            m = _REPORT.match(text)
            if m is not None:
                return canonical(m.group("pkg")), m.group("ver")
        if text.startswith("Name:"):
            m = _PIP_NAME.match(text)
            if m is not None:
                self._pip_name = canonical(m.group("pkg"))
            return None
        m = _LISTED.match(text)
        return (canonical(m.group("pkg")), m.group("ver")) if m is not None else None
