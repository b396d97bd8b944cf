"""The cache folder, ``$XDG_CACHE_HOME/grpo-doctor`` (default ``~/.cache/grpo-doctor``), and its files: compiled
Hyperscan databases and the catalog's trigger words (gate.py), the parsed rule files and the catalog as built
(registry.py), the parsed TOML tables of doctor/data (``toml_table``), the compiled regular expressions (lazyre.py), the
known-issues index as built (known/index.py), the compiled methods of dataclasses (fastclasses.py) and what @dataclass
does to each class of the package (classplans.py), the raise sites of the known threads' signatures
(known/mechanism.py), the routing of the rules built on their first signal (lazyrules.py), the raise-site index's
buckets decompressed (classify/raise_store.py), the raise-site templates' compiled patterns (lazyre.py
``site_compiled``).

Every file there is a speed-up only: one that cannot be read, written or pruned costs the work it would have saved,
never the run. Each kind is named ``<prefix>-<24 hex digits><suffix>``, the digits a key of what the file holds, so
every new release, edited rule or other Hyperscan build adds a file; each write therefore prunes its own kind to the
few most recently used (a read refreshes a file's mtime, so a file in use stays among them). Nothing else in the
folder is touched: not another kind's files, not a name outside the pattern, not a symlink or what it points to.
"""
from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from .live.atomic import write_atomic


class Kind(NamedTuple):
    prefix: str
    suffix: str
    keep: int   # how many files of this kind a write leaves, the one it wrote included

    def name(self, key: str) -> str:
        return f"{self.prefix}-{key}{self.suffix}"

    def owns(self, name: str) -> bool:
        return re.fullmatch(rf"{re.escape(self.prefix)}-[0-9a-f]{{24}}{re.escape(self.suffix)}", name) is not None


# one analyze or watch compiles three databases (the gate's words, the line matchers, the quiet forms), and a
# --select or --ignore run others: room for a few catalog versions of each
HS = Kind("hs", ".db", 16)
WORDS = Kind("words", ".json", 4)
RULES = Kind("rules", ".json", 4)
CATALOG = Kind("catalog", ".marshal", 4)   # the rule catalog as built, keyed by its files' sizes and mtimes (registry.py)
TABLES = Kind("table", ".json", 8)   # the shipped TOML tables (doctor/data/structure.toml, cut_stages.toml) parsed
KNOWN = Kind("known", ".marshal", 2)   # the known-issues index with its tf-idf vectors (doctor/known/index.py)
REGEX = Kind("re", ".marshal", 4)   # compiled regular expressions of one interpreter (doctor/lazyre.py)
# the raise-site templates' patterns compiled by re (lazyre.site_compiled): read by a report that looks an exception up
SITE_REGEX = Kind("sitere", ".marshal", 2)
CLASSES = Kind("dataclasses", ".marshal", 4)   # the methods @dataclass generates, compiled (doctor/fastclasses.py)
CLASS_PLANS = Kind("classplans", ".marshal", 4)   # what @dataclass does to each class, recorded (doctor/classplans.py)
SITES = Kind("sites", ".marshal", 2)   # the raise sites of the known threads' signatures (doctor/known/mechanism.py)
RAW_SITES = Kind("rawsites", ".bin", 2)   # the raise-site index's buckets decompressed (doctor/classify/raise_store.py)
ROUTES = Kind("routes", ".marshal", 4)   # how each check rule built on its first signal is routed (doctor/lazyrules.py)


def hasher(data: bytes = b"") -> Any:
    """A hash object whose ``hexdigest()`` is a file key (24 hex digits): blake2b from the interpreter's own _blake2
    module, as hashlib gives it, without importing hashlib, which loads OpenSSL's library (~11 M instructions at
    every start of every command; each cache's key is made at start)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=12)


def key_of(data: bytes) -> str:
    return str(hasher(data).hexdigest())


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "grpo-doctor")


def path_of(kind: Kind, key: str) -> str:
    """Where the file of ``kind`` under ``key`` is (or would be)."""
    return os.path.join(cache_dir(), kind.name(key))


def read(kind: Kind, key: str) -> bytes | None:
    """The bytes of the cached file, or None when it is absent or unreadable; a file read is marked as just used."""
    path = os.path.join(cache_dir(), kind.name(key))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    mark_used(path)
    return data


def mark_used(path: str) -> None:
    """Refresh the file's mtime: pruning keeps the most recently used files, not the most recently written."""
    try:
        os.utime(path)
    except OSError:  # a read-only cache: pruning may then drop a file still in use, which only costs its rebuild
        pass


def write(kind: Kind, key: str, data: bytes) -> None:
    """Write the file atomically (readers see the old file or the whole new one), then prune its kind."""
    folder = cache_dir()
    name = kind.name(key)
    try:
        os.makedirs(folder, exist_ok=True)
        write_atomic(os.path.join(folder, name), data)  # a random temporary name, no link followed, removed on failure
    except OSError:
        return
    prune(kind, folder, name)


def read_table(kind: Kind, key: str) -> dict:
    """The marshalled dict kept under ``key``; {} when there is none or the file is unreadable or not a dict."""
    data = read(kind, key)
    if not data:
        return {}
    import marshal
    try:
        table = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


def merge_table(kind: Kind, key: str, new: dict) -> None:
    """Add ``new`` to the marshalled dict kept under ``key`` (re-read first: another process may have added entries
    since this one read); an unreadable or foreign file is replaced, a value marshal cannot write is not cached."""
    import marshal
    merged = read_table(kind, key)
    merged.update(new)
    try:
        write(kind, key, marshal.dumps(merged))
    except (ValueError, TypeError):
        pass


def prune(kind: Kind, folder: str, keep_name: str) -> None:
    """Delete the regular files of ``kind`` in ``folder`` beyond its ``keep`` most recently used, never
    ``keep_name`` (the file just written, whatever the clock says of it)."""
    try:
        with os.scandir(folder) as it:
            found = []
            for e in it:
                if e.name == keep_name or not kind.owns(e.name):
                    continue
                try:
                    if e.is_file(follow_symlinks=False):
                        found.append((e.stat(follow_symlinks=False).st_mtime_ns, e.name))
                except OSError:
                    continue
    except OSError:
        return
    found.sort(reverse=True)
    for _, name in found[max(0, kind.keep - 1):]:
        try:
            os.unlink(os.path.join(folder, name))   # unlink removes the entry itself, never what a link points to
        except OSError:  # already gone (another process pruned it) or not ours to delete
            pass


def toml_table(text: str) -> dict:
    """``tomllib.loads(text)``, from the cache when it parsed this very text before: tomllib is pure Python, and the
    structure table (70 KB) took ~40 ms of CPU to parse in every analyze or watch whose run failed. Only what JSON
    gives back unchanged is cached (a TOML date would come back a string)."""
    import json
    import sys
    key = key_of(f"{sys.version_info[:2]}\0".encode() + text.encode("utf-8", "surrogatepass"))
    data = read(TABLES, key)
    if data is not None:
        try:
            cached = json.loads(data)
            if isinstance(cached, dict):
                return cached
        except (ValueError, RecursionError):
            pass
    import tomllib
    parsed = tomllib.loads(text)
    try:
        dumped = json.dumps(parsed, ensure_ascii=False)
        if json.loads(dumped) == parsed:
            write(TABLES, key, dumped.encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        pass
    return parsed
