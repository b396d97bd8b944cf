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

# the wrapped exception's type alone, where it names the failure's category whatever its cut message said: a failed
# import (CPython raises ImportError/ModuleNotFoundError only from an import statement or importlib)
CATEGORY_OF_TYPE = {"ImportError": "import-or-dependency-error", "ModuleNotFoundError": "import-or-dependency-error"}


def _unescape(s: str) -> str:
    return s.replace("\\'", "'").replace('\\"', '"').replace("\\n", " ")


# transformers' lazy import (utils/import_utils.py _LazyModule._get_module, copied by trl and peft):
# `raise RuntimeError(f"Failed to import {name} because of the following error (look up to see its traceback):\n{e}")`
# prints the inner exception's message without its type
_LAZY = lazyre.compile(r"^Failed to import [\w.]+ because of the following error \(look up to see its traceback\):\s*"
                       r"(?P<inner>\S.*)$")


def _lazy_inner(exc: ExceptionInfo) -> ExceptionInfo | None:
    """The exception a lazy import wrapped, its message on the wrapper's own line: its type (``Type: msg``) or, for a bare
    message, from the raise-site index when one library raises that wording; None when neither tells it."""
    # (the inner message on the next line, as transformers prints it, is read by the lazy-import advice of the
    # version-clash reading; a paste that joined it to the wrapper's line leaves it here)
    m = _LAZY.match(exc.message)
    inner = m.group("inner").strip() if m else None
    where, raw = exc.where, exc.raw
    if not inner:
        return None
    typed = _PLAIN.match(inner)
    if typed:
        return ExceptionInfo(typed.group(1), typed.group(2), exc.frames, where, exc.rank, exc.seq, raw)
    from .structure import site_matches
    try:
        best = next(iter(site_matches(inner)), None)
    except (OSError, ValueError):
        return None
    if best is None or best.score < 0.95:
        return None
    return ExceptionInfo(best.kind, inner, exc.frames, where, exc.rank, exc.seq, raw)


def unwrap(exc: ExceptionInfo, following: Iterable[LogLine]) -> ExceptionInfo:
    """The exception ``exc`` wraps (its frames and seq kept, its line the one that names it), or ``exc``."""
    if exc.message.startswith("Failed to import "):
        lazy = _lazy_inner(exc)
        if lazy is not None:
            return lazy
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
