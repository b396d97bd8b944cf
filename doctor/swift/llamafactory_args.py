"""LLaMA-Factory's argument names by release: doctor/data/llamafactory_args.json, written by
tools/build_llamafactory_args.py from the release wheels (llmtuner 0.1.8-0.6.3, llamafactory 0.7.1-0.9.5).

Per argument, the spans of the releases that declare it; the renames and removals read from its source history
(each with the release and commit); transformers' Seq2SeqTrainingArguments fields, which its train command also
takes. A version between two releases of the table is answered from both neighbours (None when they differ), and
exactly where a rename's release is known.
"""
from __future__ import annotations

import difflib
import functools
import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "llamafactory_args.json"
Version = tuple[int, ...]


def version_key(text: str | None) -> Version | None:
    """(0, 9, 1) for "0.9.1.dev0" or "v0.9.1"; None for no version."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", (text or "").strip())
    return tuple(int(x or 0) for x in m.groups()) if m else None


@functools.cache
def _table() -> dict[str, Any]:
    t: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    t["_keys"] = [version_key(v) for v in t["releases"]]
    t["_hf"] = frozenset(t["transformers"])
    return t


def releases() -> list[str]:
    return list(_table()["releases"])


def label(version: str) -> str:
    """How the release is named: ``llmtuner 0.5.3`` up to 0.6, ``LLaMA-Factory 0.9.1`` after."""
    return f"llmtuner {version}" if version in _table()["llmtuner"] else f"LLaMA-Factory {version}"


def _at(name: str, i: int) -> bool:
    s = _table()["args"].get(name, [])
    return any(a <= i <= b for a, b in zip(s[::2], s[1::2]))


def span(name: str) -> tuple[str, str] | None:
    """The first and the last release of the table that declare ``name``."""
    s = _table()["args"].get(name)
    return (releases()[s[0]], releases()[s[-1]]) if s else None


def renamed(name: str) -> tuple[str, str, str] | None:
    """(new name, the release that renamed it, why) for an argument LLaMA-Factory renamed."""
    r = _table()["renamed"].get(name)
    return (r[0], r[1], r[2]) if r else None


def removed(name: str) -> tuple[str, str, bool, str] | None:
    """(the last release of the table that declares it, the first without it, whether that is the exact release
    that removed it (read from the source history) or only the next release of the table, why or "") for an
    argument no longer declared that was not renamed."""
    s = span(name)
    if s is None or renamed(name) or s[1] == releases()[-1]:
        return None
    note = _table()["removed"].get(name)
    if note:
        return s[1], note[0], True, note[1]
    return s[1], releases()[releases().index(s[1]) + 1], False, ""


def renamed_to(name: str) -> tuple[str, str, str] | None:
    """(old name, release, why) when ``name`` arrived as another argument's new name."""
    for old, (new, rel, why) in _table()["renamed"].items():
        if new == name and old in _table()["args"]:
            return old, rel, why
    return None


def declared(name: str, version: str | None = None) -> bool | None:
    """Does LLaMA-Factory ``version`` (the latest release when None) declare ``name``? None: not known (a version
    between two releases of the table that disagree, or before the first one)."""
    t = _table()
    keys: list[Version] = t["_keys"]
    v = version_key(version) if version else keys[-1]
    if v is None:
        return None
    old = renamed(name)
    gone = _table()["removed"].get(name)
    until = version_key(old[1]) if old else version_key(gone[0]) if gone else None
    if until is not None and v >= until:
        return False
    new = renamed_to(name)
    if new and name in t["args"]:
        return v >= version_key(new[1])    # type: ignore[operator]
    if v in keys:
        return _at(name, keys.index(v))
    if v > keys[-1]:
        return _at(name, len(keys) - 1)
    hi = next(i for i, k in enumerate(keys) if k > v)
    if hi == 0:
        return False if not _at(name, 0) and name in t["args"] else None
    lo, up = _at(name, hi - 1), _at(name, hi)
    if lo and until is not None:   # before the release that renamed or removed it
        return True
    return lo if lo == up else None


def is_transformers(name: str) -> bool:
    """A field of transformers' Seq2SeqTrainingArguments (4.45-5.24), which the train command takes."""
    return name in _table()["_hf"]


def only(name: str) -> str | None:
    """"eval" or "train" for an argument of LLaMA-Factory that only that command parses."""
    return next((cmd for cmd, names in _table()["only"].items() if name in names), None)


def closest(name: str, version: str | None = None, n: int = 2) -> list[str]:
    """The names closest to ``name`` among those ``version`` (the latest when None) declares and transformers'."""
    pool = [a for a in _table()["args"] if declared(a, version) is not False] + sorted(_table()["_hf"])
    return difflib.get_close_matches(name, pool, n=n, cutoff=0.75)
