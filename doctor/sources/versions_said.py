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
# a sentence that says which release ran: "使用 ms_swift 3.12.4 微调 ...", "I'm using trl 0.19.1 with ..."; not one that
# advises or blames a release ("try trl 0.14", "works with 0.14", "instead")
_USED = lazyre.compile(r"(?i)(?:\busing|\bi use|\bwe use|使用|用的是?|版本是)\s*`?(?P<pkg>" + PACKAGES + r"|swift)`?\s*(?:==\s*)?"
                       + _VER + r"(?![\d.])")
# the packages listed after it: "using torch==2.1.0 deepspeed==0.9.5 transformers==4.39.2"
_PINNED = lazyre.compile(r"(?i)(?<![\w.-])(?P<pkg>" + PACKAGES + r")\s*==\s*" + _VER + r"(?![\d.])")
_NOT_USED = lazyre.compile(r"(?i)\binstead\b|\bshould\b|\btry\b|\brecommend|\bworks?\b|\bworked\b|\bruns?\b|"
                           r"\bnormally\b|\bfine\b|\bsuccess|\bdowngrad|\bupgrad|\bswitch|建议|换成|降级|升级|回退|正常|成功")
# the words that send a line here (the session's gate): every form above holds one
VERSION_WORDS = ("version:", " version (", "Name: ", "Version: ", "版本", "ms_swift", "ms-swift")


class VersionsSaid:
    """Reads lines in order (a `pip show` block spans two) and returns ``(package, version)`` for a line that reports
    an installed release; ``used_in`` reads the releases a sentence says it ran with, which a report outranks."""

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

    @staticmethod
    def used_in(text: str) -> list[tuple[str, str]]:
        """The releases a sentence says the run used ("using torch==2.1.0 deepspeed==0.9.5"), none when it advises,
        compares or reports an outcome ("it runs normally with transformers==4.28.1")."""
        m = _USED.search(text)
        if m is None or _NOT_USED.search(text):
            return []
        found = [(canonical(m.group("pkg")), m.group("ver"))]
        found += [(canonical(p.group("pkg")), p.group("ver")) for p in _PINNED.finditer(text, m.end())]
        return found
