"""Module-level regular expressions compiled on first use.

A process of grpo-doctor imports ~110 modules holding ~490 patterns; most of them (a rule's, a source format's) never
see a line they could match in one run, and compiling them all took ~0.07 s of CPU at every start (measured: import
plus Session, median of 7). ``compile`` returns a stand-in that compiles on its first attribute access and then keeps
the compiled pattern's methods as plain attributes, so a hot loop's ``rx.search`` is one attribute lookup, as on a
compiled pattern. Typed as ``re.Pattern``: every use of a compiled pattern works, except passing it to the ``re``
module's functions (``re.sub(rx, ...)``), which no caller does.

Compiling is itself mostly pure Python (re._parser, re._compiler): ~0.3 ms a pattern, and a failed run's final
analysis compiles ~170 of them (~60 ms of CPU under watch). ``compiled`` keeps what the compiler produced (the
opcode list _sre.compile takes) in a cache file of the interpreter that made it (doctor/cachefiles.py ``REGEX``),
so a later process builds the same pattern object in C from it. An entry is kept only when the object built from
it equals the one ``re.compile`` returned (Pattern equality compares flags and code), so a Python whose internals
differ keeps compiling as before. Only static patterns come here (module constants, the catalog's), so the file is
bounded by the package's own patterns.
"""
from __future__ import annotations

import re
from typing import Any, cast

try:
    import _sre
except ImportError:  # not CPython: compile every pattern with re
    _sre = None  # type: ignore[assignment]

# (pattern, flags) -> marshal of the arguments of _sre.compile after the pattern (each read when its pattern is used:
# the whole table's opcode lists cost ~10 M instructions to unmarshal at every start); None until the file is read
_table: dict | None = None
_new: dict = {}   # entries this process compiled, written at exit
# the same for the raise-site index's templates (doctor/classify/raise_sites.py), in a file of their own: those a failed
# run's exceptions are looked up with (~60 for a long argument error, ~30 ms of CPU to compile), which every start
# would otherwise read with the package's own patterns; at most SITE_MAX entries, the file starts over beyond
_site_table: dict | None = None
_site_new: dict = {}
SITE_MAX = 4000

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
        rx = compiled(*self._args)
        for attr in _KEPT:
            setattr(self, attr, getattr(rx, attr))
        return getattr(rx, name)

    def __repr__(self) -> str:
        return f"lazyre.compile({self._args[0]!r}, {self._args[1]!r})"


def _key() -> str:
    import sys

    from .cachefiles import key_of
    # "2": each entry marshalled on its own
    return key_of(f"2\0{sys.version}\0{_sre.MAGIC}\0{_sre.CODESIZE}".encode())


def _load() -> dict:
    global _table
    from . import cachefiles
    _table = cachefiles.read_table(cachefiles.REGEX, _key())
    return _table


def _record(pattern: str | bytes, flags: int, rx: re.Pattern) -> tuple | None:
    """The _sre.compile arguments of ``pattern`` as re._compiler.compile computes them, when they give ``rx``."""
    try:
        from re import _compiler, _parser  # type: ignore[attr-defined]
        p = _parser.parse(pattern, flags)
        code = [int(c) for c in _compiler._code(p, flags)]   # plain ints: the opcodes are an int subclass
        indexgroup: list = [None] * p.state.groups
        for k, i in p.state.groupdict.items():
            indexgroup[i] = k
        args = (flags | p.state.flags, code, p.state.groups - 1, dict(p.state.groupdict), tuple(indexgroup))
        return args if _sre.compile(pattern, *args) == rx else None
    except Exception:  # noqa: BLE001 - another Python's internals: this pattern is compiled by re every time
        return None


def _save() -> None:
    """Add this process's new entries to the cache file (re-read first: another process may have added others)."""
    from . import cachefiles
    cachefiles.merge_table(cachefiles.REGEX, _key(), _new)


def _site_save() -> None:
    from . import cachefiles
    merged = cachefiles.read_table(cachefiles.SITE_REGEX, _key())
    merged.update(_site_new)
    if len(merged) > SITE_MAX:   # bounded: the lookups of many different exceptions start the file over
        merged = dict(_site_new)
    import marshal
    try:
        cachefiles.write(cachefiles.SITE_REGEX, _key(), marshal.dumps(merged))
    except (ValueError, TypeError):
        pass


def compiled(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """``re.compile(pattern, flags)`` of a static pattern, built from the cache file's entry when it has one."""
    if _sre is None or flags & re.DEBUG:
        return re.compile(pattern, flags)
    flags = int(flags)
    table = _load() if _table is None else _table
    return _from(table, _new, _save, pattern, flags)


def site_compiled(pattern: str, flags: int = 0) -> re.Pattern[Any]:
    """``re.compile(pattern, flags)`` of a raise-site template's pattern, from the templates' own cache file."""
    global _site_table
    if _sre is None or flags & re.DEBUG:
        return re.compile(pattern, flags)
    if _site_table is None:
        from . import cachefiles
        _site_table = cachefiles.read_table(cachefiles.SITE_REGEX, _key())
    return _from(_site_table, _site_new, _site_save, pattern, int(flags))


def _from(table: dict, new: dict, save: Any, pattern: str | bytes, flags: int) -> re.Pattern[Any]:
    """The pattern built from ``table``'s entry, else compiled by re and its entry added to ``new`` (``save`` writes
    it at exit)."""
    packed = table.get((pattern, flags))
    if packed is not None:
        try:
            import marshal
            return _sre.compile(pattern, *marshal.loads(packed))
        except Exception:  # noqa: BLE001 - a damaged entry: compile as if it were absent
            pass
    rx = re.compile(pattern, flags)
    got = _record(pattern, flags, rx)
    if got is not None:
        if not new:
            import atexit
            atexit.register(save)
        import marshal
        new[(pattern, flags)] = marshal.dumps(got)
    return rx


def compile(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any]:  # noqa: A001 - the name of re's function
    """A pattern compiled when first used (module and class level only: a function's pattern is compiled at once)."""
    return cast("re.Pattern[Any]", LazyPattern(pattern, flags))


__all__ = ["LazyPattern", "compile", "compiled", "site_compiled"]
