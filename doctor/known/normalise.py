"""Messages as the known-issues index stores and compares them (pure functions, no I/O).

``signature(type, message)`` is the exact key: the exception's short type and the message with what changes from
run to run replaced by placeholders (numbers, paths, hex ids, quoted values other than identifiers, sizes),
lowercased, spaces collapsed (a quoted identifier such as ``'prompt'`` stays: it names what failed):

    signature("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 1.17 GiB. GPU 0 ...")
    -> "OutOfMemoryError: cuda out of memory. tried to allocate <n> gib. gpu <n> ..."

``words(message)`` is the bag of words the similarity uses: identifiers and words of 3+ letters (quoted values
kept as words, since ``KeyError: 'prompt'`` is about ``prompt``), numbers and paths dropped, a few stop words out.
"""
from __future__ import annotations

import re

from .. import lazyre

_PATH = lazyre.compile(r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[\w.\-+@]+){2,}/?")
_HEX = lazyre.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,}\b")
_QUOTED = lazyre.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`")
_NUM = lazyre.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WS = lazyre.compile(r"\s+")
_WORD = lazyre.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
MAX_MESSAGE = 600  # a signature keeps this much of a message: the rest is seldom stable (shapes, dumps, lists)
STOP = frozenset("""the and for with that this was are not but you your from have has had its into out all any can
could did does may might must should would will when where which while who why how than then there their them they
were been being also only some such other more most very use used using see got get please error errors exception
none true false self""".split())


def short_type(exc_type: str | None) -> str:
    """``torch.OutOfMemoryError`` -> ``OutOfMemoryError`` (qualified names vary with the version)."""
    return (exc_type or "").rsplit(".", 1)[-1]


_IDENT = lazyre.compile(r"[A-Za-z_][\w.\-]{0,39}")


def _quoted(m: re.Match) -> str:
    """A quoted identifier ('prompt', 'vllm_client') names what failed and stays; other quoted values go."""
    inner = m.group()[1:-1]
    return m.group() if _IDENT.fullmatch(inner) else "<q>"


def normalise(message: str) -> str:
    s = message[:MAX_MESSAGE]
    s = _PATH.sub("<path>", s)
    s = _HEX.sub("<hex>", s)
    s = _QUOTED.sub(_quoted, s)
    s = _NUM.sub("<n>", s)
    return _WS.sub(" ", s).strip().lower()


def signature(exc_type: str | None, message: str) -> str:
    return f"{short_type(exc_type)}: {normalise(message)}"


def words(message: str) -> list[str]:
    s = _PATH.sub(" ", message[:MAX_MESSAGE * 2])
    s = _HEX.sub(" ", s)
    out = []
    for w in _WORD.findall(s):
        w = w.lower()
        if w not in STOP:
            out.append(w)
    return out
