"""Multi-word matching: which of a fixed set of literal words occur in a text.

Two engines give the same answers. Hyperscan (the optional ``hyperscan`` package) reports every
occurrence of every word in one C call. The pure-Python engine is one stdlib ``re`` pattern shaped as
a trie of the words (several times faster than a flat alternation): a search from position p returns
the longest word starting at the first start position >= p, and every word starting there is a prefix
of it, so searching again from that start + 1 visits every occurrence; the words *inside* the matched
one are added through a closure table. ``GRPO_DOCTOR_MATCHER=re`` forces the pure-Python engine.

Compiling ~250 words takes Hyperscan about a second, so compiled databases are cached under
``$XDG_CACHE_HOME/grpo-doctor`` (cachefiles.py; keyed by the patterns and the Hyperscan version); an unwritable
cache only costs the compile.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from . import cachefiles, lazyre

T = TypeVar("T")


def engine() -> str:
    """'hyperscan' when it imports and is not disabled, else 're'."""
    want = os.environ.get("GRPO_DOCTOR_MATCHER", "auto")
    if want == "re":
        return "re"
    try:
        import hyperscan  # noqa: F401  (optional dependency)
    except Exception:
        if want == "hyperscan":
            raise
        return "re"
    return "hyperscan"


_NOT_ALNUM = lazyre.compile(rb"[^0-9A-Za-z]")


def _hex_escape(m: re.Match[bytes]) -> bytes:
    return b"\\x%02x" % m.group()[0]


def hs_literal(word: bytes) -> bytes:
    """A literal in Hyperscan's syntax: letters and digits as they are, every other byte as \\xHH (one ``sub`` over
    the word: a generator over its bytes cost ~3.6 ms of every start for the gate's ~420 words)."""
    return word if word.isalnum() else _NOT_ALNUM.sub(_hex_escape, word)


def hs_database(exprs: list[bytes]) -> Any:
    """A block-mode Hyperscan database of ``exprs`` (id = index), from the cache when it is there."""
    return _hs_cached(b"\0".join(exprs), lambda: exprs)


def hs_words_database(words: list[str]) -> Any:
    """``hs_database`` of the words as literals (``hs_literal`` of each), keyed by the words themselves: escaping the
    ~420 words of a session's gate (a regex callback per byte that is no letter or digit) cost ~7 M instructions of
    every start of watch, so it is done only when the database is compiled, not when the cache holds it."""
    import marshal
    return _hs_cached(_LITERAL_FORM + marshal.dumps(words), lambda: [hs_literal(w.encode("utf-8")) for w in words])


# in the key of a words database: it stands for hs_literal's output, so any change of that escaping changes this tag
_LITERAL_FORM = b"literals 1\0"


def _hs_cached(what: bytes, exprs_of: Any) -> Any:
    """The database of ``exprs_of()``, read from the cache file keyed by ``what`` (which determines those
    expressions) and the Hyperscan version, else compiled and written there."""
    import hyperscan

    key = cachefiles.key_of(what + repr(getattr(hyperscan, "__version__", "")).encode())
    data = cachefiles.read(cachefiles.HS, key)
    if data is not None:
        try:
            return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        except Exception:  # from another Hyperscan build, or cut short
            pass
    exprs = exprs_of()
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=0)
    cachefiles.write(cachefiles.HS, key, hyperscan.dumpb(db))
    return db


@functools.lru_cache(maxsize=1)
def _code_key() -> str:
    """A key for what decides the trigger words: this package's version and the size and mtime of every
    module and rule file (an edit anywhere gives a new key). ~150 stat calls, about a millisecond, made
    once per process."""
    from . import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    parts = [__version__]
    stack = [here, os.path.join(here, "_rules"), os.path.join(os.path.dirname(here), "rules")]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False) and not e.name.startswith((".", "__")):
                stack.append(e.path)
            elif e.name.endswith((".py", ".toml")):
                st = e.stat()
                parts.append(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}")
    return cachefiles.key_of("\n".join(parts).encode("utf-8", "surrogatepass"))


def cached_words() -> frozenset[str] | None:
    """The trigger words of the whole catalog as the last run of this very code stored them, or None."""
    import json

    data = cachefiles.read(cachefiles.WORDS, _code_key())
    if data is None:
        return None
    try:
        words = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return None
    return frozenset(words)


def store_words(words: Iterable[str]) -> None:
    """Keep the whole catalog's trigger words for the next run (``doctor.sources.scan.start_early``); an
    unwritable cache only costs that head start."""
    import json

    key = _code_key()
    path = os.path.join(cachefiles.cache_dir(), cachefiles.WORDS.name(key))
    if os.path.exists(path):
        cachefiles.mark_used(path)
    else:
        cachefiles.write(cachefiles.WORDS, key, json.dumps(sorted(words)).encode("utf-8"))


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching the longest of ``words`` at the leftmost position (greedy optional tails)."""
    root: dict[str, dict] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def rx(node: dict[str, dict]) -> str:
        alts = [re.escape(ch) + rx(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return rx(root)


class WordGate(Generic[T]):
    """``hits(text)``: the payloads of the words occurring in ``text`` (a list of tuples, empty when no
    word occurs; a payload may repeat). ``words`` maps each word to its payload tuple."""

    def __init__(self, words: dict[str, tuple[T, ...]], use: str | None = None):
        self.words = {w: tuple(p) for w, p in words.items() if w}
        self.engine = use or engine()
        if self.engine == "hyperscan":
            order = sorted(self.words)
            self._payload = [self.words[w] for w in order]
            self._db = hs_words_database(order)
            import hyperscan

            self._scratch = hyperscan.Scratch(self._db)
        else:
            self._re = re.compile(trie_pattern(self.words))
            # a matched word stands for every word inside it
            self._closure: dict[str, tuple[T, ...]] = {}
            for w in self.words:
                seen: dict[int, T] = {}
                for v, p in self.words.items():
                    if v in w:
                        for x in p:
                            seen.setdefault(id(x), x)
                self._closure[w] = tuple(seen.values())

    def substitute(self, new: dict[int, T]) -> None:
        """Each payload ``x`` with ``id(x)`` in ``new`` replaced by ``new[id(x)]``, the words and their pattern kept
        (no recompiling: a rule rebuilt for the next run of a log takes its predecessor's place)."""
        def sub(p: tuple[T, ...]) -> tuple[T, ...]:
            return tuple(new.get(id(x), x) for x in p)
        index = self._holders()
        for old_id, x in new.items():
            where = index.pop(old_id, ())
            index[id(x)] = where
            for table, key in where:
                target = self.words if table == 0 else (self._payload if table == 1 else self._closure)
                target[key] = sub(target[key])  # type: ignore[index]

    def _holders(self) -> dict[int, list[tuple[int, Any]]]:
        """id of a payload -> the entries holding it ((0, word) in words, (1, i) in the hyperscan payloads, (2, word)
        in the closure): built at the first substitute, kept up to date by it."""
        if getattr(self, "_index", None) is None:
            index: dict[int, list[tuple[int, Any]]] = {}
            tables: list[tuple[int, Any]] = [(0, self.words)]
            tables.append((1, dict(enumerate(self._payload))) if self.engine == "hyperscan" else (2, self._closure))
            for table, entries in tables:
                for key, p in entries.items():
                    for x in p:
                        index.setdefault(id(x), []).append((table, key))
            self._index = index
        return self._index

    def hits(self, text: str) -> list[tuple[T, ...]]:
        if self.engine == "hyperscan":
            out: list[tuple[T, ...]] = []
            payload = self._payload
            add = out.append

            def on_match(i: int, _s: int, _e: int, _f: int, _c: object) -> None:
                add(payload[i])

            self._db.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=on_match,
                          scratch=self._scratch)
            return out
        search = self._re.search
        m = search(text)
        if m is None:
            return []
        closure = self._closure
        out = [closure[m.group()]]
        m = search(text, m.start() + 1)
        while m is not None:
            out.append(closure[m.group()])
            m = search(text, m.start() + 1)
        return out
