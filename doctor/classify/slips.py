"""A message as a person retyped it: its quotes changed (a backtick of the source typed as ' or a typographic quote)
and words with a typing slip (one letter wrong, missing or extra, or two neighbours swapped: `ValieError`, `Zreo-3`).
The raise-site lookup tries these readings of a message no template takes as written; a retyped message is still its
template's when each differing word is one slip from the template's word."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .. import lazyre
from .raise_store import TOKEN


def one_slip(typed: str, word: str) -> bool:
    """``typed`` is ``word`` with one letter replaced, dropped or added, or two neighbours swapped."""
    if typed == word or abs(len(typed) - len(word)) > 1:
        return False
    i = next((k for k, (a, b) in enumerate(zip(typed, word)) if a != b), min(len(typed), len(word)))
    return (typed[i + 1:] == word[i + 1:] or typed[i:] == word[i + 1:] or typed[i + 1:] == word[i:]
            or (typed[i:i + 2] == word[i:i + 2][::-1] and typed[i + 2:] == word[i + 2:]))


# the quotes a person retypes a message with (a backtick of the source becomes ' or a typographic quote)
_QUOTES = lazyre.compile("[`'\"\u2018\u2019\u201c\u201d]")
REQUOTED = 0.95  # a match found only with the message's quotes changed: the words are the template's, the quotes not
RETYPED = 0.9    # a match found only with typing slips put right (still reported: 0.9 x 1.0 of a whole match)
SLIP_MIN_WORDS = 5  # a template of this many literal words or more, all but one or two typed as they are, may show
                    # its other words with a slip each (`Zreo-3`)


# CPython's own quoting (Objects/object.c, Python/import.c, Objects/dictobject.c): those quotes are as printed, and a
# library template with the same words in backticks is another message
_CPYTHON_QUOTES = lazyre.compile(r"object has no attribute '|No module named '|cannot import name '|KeyError: '")


def retyped(text: str, idx: Any) -> Iterator[tuple[str, float]]:
    """(the text as its author may have meant it, the score factor): quotes all backticks, all single, all double
    quotes; then the words one slip from a long template's put right, with each quoting again."""
    tokens = set(TOKEN.findall(text.lower()))
    plain_quotes = bool(_QUOTES.search(text)) and not _CPYTHON_QUOTES.search(text)
    # quotes are worth retyping only where a template holding every word of the message quotes something itself
    if plain_quotes and any(site.words <= tokens and _QUOTES.search(site.row[5])
                            for site in idx.candidates(tokens, second=False)):
        for quote in "`'\"":
            yield _QUOTES.sub(quote, text), REQUOTED
    fixed = _unslipped(text, tokens, idx)
    if fixed is not None:
        yield fixed[0], RETYPED
        for quote in "`'\"" if plain_quotes and _QUOTES.search(fixed[1]) else "":
            yield _QUOTES.sub(quote, fixed[0]), RETYPED * REQUOTED


def _unslipped(text: str, tokens: set[str], idx: Any) -> tuple[str, str] | None:
    """(``text`` with each word that is one typing slip from a word of a long template, all of whose other words it
    holds, spelt as the template spells it; that template), or None when no template is that close."""
    if len(tokens) < SLIP_MIN_WORDS:
        return None
    for site in idx.candidates(tokens, second=True):
        missing = site.words - tokens
        if len(site.words) < SLIP_MIN_WORDS or not 1 <= len(missing) <= 2:
            continue
        fixes = {t: w for w in missing for t in tokens - site.words if len(t) >= 4 and one_slip(t, w)}
        if len(set(fixes.values())) != len(missing):
            continue
        template = site.row[5]
        for typed, word in fixes.items():
            spelt = re.search(re.escape(word), template, re.I)
            text = re.sub(rf"(?i)(?<![a-z0-9_]){re.escape(typed)}(?![a-z0-9_])", (spelt.group(0) if spelt else word)
                          .replace("\\", "\\\\"), text)
        return text, template
    return None
