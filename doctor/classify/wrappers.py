"""Exceptions that only wrap another one: the wrapped exception is the failure to classify.

A wrapper prints the original exception inside its own message, as ``repr(e)`` (``AttributeError("...")``) or as
``Type: msg``, on the same line or on the line after its own; its stack is the wrapper's (the call that failed
went through it). Sources:
- hydra 1.2-1.3 ``hydra/_internal/instantiate/_instantiate2.py`` ``_call_target``:
  ``msg = f"Error in call to target '{...}':\\n{repr(e)}"`` then ``raise InstantiationException(msg) from e``;
- any wrapper written as ``raise XError(f"...: {e!r}")`` or ``f"...:\\n{e}"`` (a message that ends with ``:`` and
  continues on the next line with the original exception), e.g. ray ``RayTaskError`` and accelerate's launch.

Pure: takes the exception and the lines that follow it.
"""
from __future__ import annotations

from collections.abc import Iterable

from .. import lazyre
from ..signals import ExceptionInfo, LogLine

_TYPE = r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout))"
_REPR = lazyre.compile(_TYPE + r"""\((['"])(.*)\2,?\)\s*$""")
_PLAIN = lazyre.compile(r"^" + _TYPE + r":\s+(.+)$")
_INLINE = lazyre.compile(r":\s*" + _TYPE + r"""\((['"])(.*)\2,?\)\s*$""")
WRAPPERS = frozenset({"InstantiationException", "RayTaskError", "TaskError", "RetryError"})


def _unescape(s: str) -> str:
    return s.replace("\\'", "'").replace('\\"', '"').replace("\\n", " ")


def unwrap(exc: ExceptionInfo, following: Iterable[LogLine]) -> ExceptionInfo:
    """The exception ``exc`` wraps (its frames and seq kept, its line the one that names it), or ``exc``."""
    m = _INLINE.search(exc.message)
    if m:
        return ExceptionInfo(m.group(1), _unescape(m.group(3)), exc.frames, exc.where, exc.rank, exc.seq, exc.raw)
    if not (exc.message.rstrip().endswith(":") or exc.short_type in WRAPPERS):
        return exc
    for n, line in enumerate(following):
        if n >= 2:
            break
        t = line.text.strip()
        if not t:
            continue
        m = _REPR.match(t)
        if m:
            return ExceptionInfo(m.group(1), _unescape(m.group(3)), exc.frames, line.where, exc.rank, exc.seq, line.raw)
        m = _PLAIN.match(t)
        if m:
            return ExceptionInfo(m.group(1), m.group(2), exc.frames, line.where, exc.rank, exc.seq, line.raw)
        break
    return exc
