"""Module-level regular expressions compiled on first use.

A process of grpo-doctor imports ~110 modules holding ~490 patterns; most of them (a rule's, a source format's) never
see a line they could match in one run, and compiling them all took ~0.07 s of CPU at every start (measured: import
plus Session, median of 7). ``compile`` returns a stand-in that compiles on its first attribute access and then keeps
the compiled pattern's methods as plain attributes, so a hot loop's ``rx.search`` is one attribute lookup, as on a
compiled pattern. Typed as ``re.Pattern``: every use of a compiled pattern works, except passing it to the ``re``
module's functions (``re.sub(rx, ...)``), which no caller does.
"""
from __future__ import annotations

import re
from typing import Any, cast

# copied onto the stand-in at first use; any other attribute is read through __getattr__
_KEPT = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner", "pattern", "flags",
         "groups", "groupindex")


class LazyPattern:
    """``re.compile(pattern, flags)``, done at the first attribute access."""

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name == "_args":  # not set yet (copy/pickle probe an empty instance): no pattern to compile
            raise AttributeError(name)
        rx = re.compile(*self._args)
        for attr in _KEPT:
            setattr(self, attr, getattr(rx, attr))
        return getattr(rx, name)

    def __repr__(self) -> str:
        return f"lazyre.compile({self._args[0]!r}, {self._args[1]!r})"


def compile(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any]:  # noqa: A001 - the name of re's function
    """A pattern compiled when first used (module and class level only: a function's pattern is compiled at once)."""
    return cast("re.Pattern[Any]", LazyPattern(pattern, flags))


__all__ = ["LazyPattern", "compile"]
