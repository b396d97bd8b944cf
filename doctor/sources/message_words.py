"""The words of library messages (every literal word of the raise-site index's templates), to tell where a paste that
wrapped an exception line cut it: inside a word (the two pieces are joined as they are) or between two words (the
space the wrap took is put back).

doctor/data/message_words.txt.gz is derived from doctor/data/raise_sites.idx by ``words_of_index`` (written by
tools/build_raise_index.py after the index; tests/test_message_words.py checks the two agree). It is read only when a
paste holds such a cut, which few logs do.
"""
from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

from .. import lazyre

WORDS_FILE = Path(__file__).resolve().parent.parent / "data" / "message_words.txt.gz"
_WORD = lazyre.compile(r"[a-z]{2,}")
_HOLE = lazyre.compile(r"\{(?:int|float|name|quoted|any)\}")
_TAIL = lazyre.compile(rb"[A-Za-z]+$")
_HEAD = lazyre.compile(rb"^[A-Za-z]+")


def words_of_index(templates) -> bytes:
    """The words file's bytes for these templates: one lower-case word per line, sorted, gzip'd without a date."""
    found: set[str] = set()
    for template in templates:
        found.update(_WORD.findall(_HOLE.sub(" ", template).lower()))
    return gzip.compress("\n".join(sorted(found)).encode(), compresslevel=9, mtime=0)


@cache
def words() -> frozenset[str]:
    try:
        return frozenset(gzip.decompress(WORDS_FILE.read_bytes()).decode().split())
    except (OSError, EOFError, UnicodeDecodeError):
        return frozenset()  # without the file every cut is read as inside a word, as before it existed


def between_words(left: bytes, right: bytes) -> bool:
    """The cut between ``left``'s end and ``right``'s start falls between two words: each piece's letters there are a
    message word and the two glued are not one ("per" | "prompt"; not "gener" | "ations", not "out" | "put")."""
    tail, head = _TAIL.search(left), _HEAD.match(right)
    if tail is None or head is None:
        return False
    a, b = tail.group().decode().lower(), head.group().decode().lower()
    known = words()
    return a in known and b in known and a + b not in known


__all__ = ["WORDS_FILE", "between_words", "words", "words_of_index"]
