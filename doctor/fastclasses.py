"""The methods that ``@dataclass`` writes, compiled once per interpreter instead of at every start.

Python's dataclasses module writes each generated method (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` of a frozen class) as source text and runs it with ``exec`` (dataclasses._create_fn). Compiling that
text was the largest single cost of starting grpo-doctor: 342 functions for the 73 dataclasses `watch` imports,
~40 ms of the ~146 ms of CPU of `watch -- true` (measured in process, 3 runs). ``install`` gives the dataclasses
module an ``exec`` of its own (a module global, which its ``exec(txt, globals, ns)`` finds before the builtin) that
runs the code object compiled from the same text, kept in a cache file of this interpreter (doctor/cachefiles.py
``CLASSES``): ``exec`` of a string compiles it with filename ``<string>`` in the dataclasses module's context (no
``from __future__`` flag there, hence ``dont_inherit``), so the code object, and every function made from it, is
the one the string would give. The text names fields and methods only (values are passed in as arguments), so the
file is bounded by the classes that are made; an unreadable or damaged file costs the compiling, nothing else.
"""
from __future__ import annotations

import builtins
from _thread import get_ident
from typing import Any

_table: dict[str, bytes] | None = None   # source text -> marshal of its code object; None until the file is read
_new: dict[str, bytes] = {}   # compiled in this process, written at exit
# set by doctor/classplans.py while it records a class: (the recording thread, the codes it runs, marshalled)
seen: tuple[int, list[bytes]] | None = None


def _key() -> str:
    import sys
    from importlib.util import MAGIC_NUMBER

    from .cachefiles import key_of
    return key_of(f"{sys.version}\0{sys.flags.optimize}\0".encode() + MAGIC_NUMBER)


def _load() -> dict[str, bytes]:
    global _table
    _table = {}   # first: a dataclass made while the cache module is imported must not read the file again
    from . import cachefiles
    _table.update(cachefiles.read_table(cachefiles.CLASSES, _key()))
    return _table


def _save() -> None:
    from . import cachefiles
    cachefiles.merge_table(cachefiles.CLASSES, _key(), _new)   # another process may have added entries since


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:  # noqa: A002 - exec's own parameters
    import marshal
    if not isinstance(source, str):
        return builtins.exec(source, globals, locals)
    table = _load() if _table is None else _table
    packed = table.get(source)
    code = None
    if packed is not None:
        try:
            code = marshal.loads(packed)
        except (EOFError, ValueError, TypeError):
            code = None
    if code is None:
        code = builtins.compile(source, "<string>", "exec", dont_inherit=True)
        if not _new:
            import atexit
            atexit.register(_save)
        _new[source] = packed = marshal.dumps(code)
    if seen is not None and seen[0] == get_ident():
        seen[1].append(packed)   # type: ignore[arg-type]
    return builtins.exec(code, globals, locals)


def install() -> None:
    """Route the dataclasses module's ``exec`` through the cache, where that module compiles generated methods with a
    plain ``exec`` of source text and holds no ``from __future__`` flag (CPython 3.10-3.12); otherwise nothing."""
    import dataclasses
    import sys
    if sys.implementation.name != "cpython" or "exec" in vars(dataclasses) or hasattr(dataclasses, "annotations"):
        return
    if not hasattr(dataclasses, "_create_fn"):   # another layout of the module (3.13's _FuncBuilder): leave it
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    from . import classplans  # and whole classes replayed from their recorded plans (CPython 3.11)
    classplans.install()
