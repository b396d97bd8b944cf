"""Check rules built on their first signal (``Session(lazy=True)``, what `watch` uses): a rule whose module is never
needed is never imported.

`watch -- true` imported ~110 check modules to build the catalog's rules, though most of them are fed nothing in a
run: a rule that reads GPU samples, checkpoints, an exception or a line with one of its words waits for it. Such a
rule is a ``LazyRule`` here: it is routed as the real one would be (its signal types, its words, ``per_run``), and
the real rule is built, its module imported, when its first signal comes. A lazy rule that was fed nothing finishes
with nothing, so it may stand in for a real rule only when the real rule's class says an instance fed nothing
finishes with nothing, whatever the run state holds (``Rule.idle_silent``, a reviewed declaration per class;
tests/test_lazy_rules.py finishes every such rule, unfed, on the state of every golden log). A rule that shares
state through the session's pool (``share``), reads signals watch always emits (its host and disk samples, the run's
exit) or judges the run state at finish without a signal stays built at start.

What each rule's routing is cannot be known without importing its module, so it is kept in the cache folder
(``cachefiles.ROUTES``) as the process that built every rule found it, keyed by the catalog's key (its rule files'
sizes and mtimes, registry.catalog_key) and the interpreter, with the size and mtime of every module of the package
that process had loaded once the rules were built (their code decides the routing; a stat of each, ~0.5 ms, where
hashing the whole tree's listing as gate._code_key does costs ~5 ms); a table whose modules changed, or none, and
every rule is built at start, as before, and the table written.
"""
from __future__ import annotations

import importlib
import marshal
import os
import sys
from collections.abc import Iterable
from typing import Any

from . import cachefiles
from .registry import RuleMeta
from .rules import Rule, build_rule

_VERSION = 1
# signals watch emits in every run (doctor/live/): a rule reading one is built at start, lazily it would be at once
_ALWAYS = frozenset({"doctor.signals_live:HostTick", "doctor.signals_live:RunExit", "doctor.signals_live:DiskTick"})


def _name(k: type) -> str:
    return f"{k.__module__}:{k.__qualname__}"


def _kind(name: str) -> type:
    mod, _, qual = name.partition(":")
    return getattr(sys.modules.get(mod) or importlib.import_module(mod), qual)


def _key(directory: str | None) -> str | None:
    from .registry import catalog_key
    cat = catalog_key(directory)
    if cat is None:
        return None
    return cachefiles.key_of(f"{_VERSION}\0{sys.version}\0{cat}".encode("utf-8", "surrogatepass"))


def _modules() -> list[tuple[str, int, int]]:
    """(file, size, mtime) of every module of this package loaded now."""
    out = []
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None) if name == "doctor" or name.startswith("doctor.") else None
        if path:
            st = os.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns))
    return sorted(out)


def _same(files: Any) -> bool:
    try:
        for path, size, mtime in files:
            st = os.stat(path)
            if st.st_size != size or st.st_mtime_ns != mtime:
                return False
    except (OSError, TypeError, ValueError):
        return False
    return True


class LazyRule(Rule):
    """A check rule, routed as the real one, built on its first signal (the module's docstring)."""

    def __init__(self, meta: RuleMeta, kinds: frozenset[type], literals: tuple[str, ...], wants_all_lines: bool,
                 per_run: bool):
        self._rule: Rule | None = None
        super().__init__(meta)
        self.kinds = kinds
        self.literals = literals
        self.wants_all_lines = wants_all_lines
        self.per_run = per_run

    def rule(self) -> Rule:
        """The real rule, built now if it was not."""
        if self._rule is None:
            self._rule = build_rule(self.meta)
        return self._rule

    @property
    def built(self) -> bool:
        return self._rule is not None

    def feed(self, signal: Any) -> None:
        self.rule().feed(signal)

    def feed_many(self, signals: list[Any]) -> None:
        self.rule().feed_many(signals)

    def finish(self, ctx: Any) -> list:
        return [] if self._rule is None else self._rule.finish(ctx)

    def __getattr__(self, name: str) -> Any:
        # anything else a caller reads of the rule (feed_between, hits): the real rule's
        if name.startswith("__") or name == "_rule":
            raise AttributeError(name)
        return getattr(self.rule(), name)


def routable(rule: Rule) -> tuple | None:
    """The routing of a built rule that a LazyRule may stand in for, as plain values, or None."""
    cls = type(rule)
    if not rule.meta.check or not getattr(cls, "idle_silent", False) or cls.share is not Rule.share:
        return None
    kinds = sorted(_name(k) for k in rule.kinds)
    if not kinds or _ALWAYS.intersection(kinds):
        return None
    return (rule.meta.check, tuple(kinds), tuple(rule.literals), bool(rule.wants_all_lines), bool(rule.per_run))


def build(metas: Iterable[RuleMeta], directory: str | None = None) -> list[Rule]:
    """The session's rules (of the catalog ``load_catalog(directory)``, or a part of it): a LazyRule where the cached
    routing says one may stand in, the real rule elsewhere; every rule built (and the routing kept) when the cache has
    none for this code."""
    metas = list(metas)
    key = _key(directory)
    table = cachefiles.read_table(cachefiles.ROUTES, key) if key is not None else {}
    if not table or not _same(table.get("modules")):
        rules = [build_rule(m) for m in metas]
        if key is not None:
            found = {r.meta.id: route for r in rules if (route := routable(r)) is not None}
            try:
                cachefiles.write(cachefiles.ROUTES, key, marshal.dumps({"routes": found, "modules": _modules()}))
            except (OSError, ValueError, TypeError):
                pass
        return rules
    routes = table.get("routes") or {}
    from .registry import catalog
    ours = {id(m) for m in catalog(directory)}   # a rule record from elsewhere (a test's) is built at once
    out: list[Rule] = []
    for m in metas:
        route = routes.get(m.id) if id(m) in ours else None
        if route is None or route[0] != m.check:
            out.append(build_rule(m))
            continue
        try:
            kinds = frozenset(_kind(k) for k in route[1])
        except (ImportError, AttributeError):
            out.append(build_rule(m))
            continue
        out.append(LazyRule(m, kinds, tuple(route[2]), bool(route[3]), bool(route[4])))
    return out
