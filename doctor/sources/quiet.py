"""Logger-prefix lines the chunk scanner need not decode (issue 19): most of a short-line console log's candidates are
ms-swift's ``[INFO:swift] ...`` / ``[WARNING:swift] ...`` lines, candidates only because the hang rules take those
two prefixes as literals (every phase marker of ms-swift carries one, so the prefix routes them all).

What the readers of ``Session.feed_line`` do with a line that starts with one of the prefixes and holds none of
``QuietLines``' danger words (every other gate word of the session, the hang rules' own markers and vLLM words,
a case-insensitive ``vllm``, the trigger words of line splitting: ``\\r``, control bytes, tqdm rates, fences):

- the tail: the scanner rebuilds it from the file's end;
- the configuration and the traceback tracker (``RunState.read``): ``RunConfig.feed`` acts only on its own
  literals (gate words) and a case-insensitive ``vllm``; the tracker acts on a line starting with ``[`` only
  through gate words (``Traceback``, ``, line ``, ``.py:``) or while a frame waits for its code line (then the
  scanner feeds every line: sticky); end markers and metric rows are gate words;
- the rules: only those in ``READERS`` take the two prefixes, and ``_Progress.feed`` acts on such a line only
  to keep the first one as ms-swift evidence, or through its markers and vLLM words (danger words here), so
  the first prefix line is always fed;
- line numbering: one message (no ``\\r``, no rate, no fence), so one seq.

So such a line changes nothing but the counters, and the scanner only counts it. Hyperscan only (one small
database, one scan per prefix line, stopping at the first danger word); without it every line is fed as before.
``GRPO_DOCTOR_BARS=all`` turns it off with the bar short cut. ``tests/test_bars.py`` compares both paths.
"""
from __future__ import annotations

from typing import Any

from ..gate import engine, hs_database, hs_literal
from .matchers import _CTRL_CLASS, EXTRA_TRIGGERS

PREFIXES = (b"[INFO:swift] ", b"[WARNING:swift] ")
PREFIX_WORDS = frozenset({"[INFO:swift]", "[WARNING:swift]"})
READERS = frozenset({"doctor.checks.hang.post_mortem.HangCheck"})
# what else makes logtext.segments split or clean a line
_SPLIT = ("\r", "/s]", "/it]", "```")


def _stop(_i: int, _s: int, _e: int, _f: int, _c: object) -> bool:
    return True  # stop at the first danger word (the scan raises ScanTerminated)


def _reads_prefix(rule: Any) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" in READERS for c in type(rule).__mro__)


class AnyWord:
    """``found(data)``: whether any of ``words`` (their byte forms as the scan matches them: UTF-8 and GB18030) or
    of the extra Hyperscan expressions occurs in the bytes ``data``; one scan that stops at the first. Hyperscan
    only: the caller checks ``engine()``. The database is loaded (or compiled, once, into the cache) on the first
    question: a log that never asks pays nothing."""

    def __init__(self, words: set[str] | frozenset[str], exprs: tuple[bytes, ...] = ()):
        self._words, self._extra = frozenset(words), exprs
        self._db: Any = None

    def _load(self) -> None:
        import hyperscan

        forms = {w.encode("utf-8") for w in self._words if w}
        for w in self._words:
            if not w.isascii():
                try:
                    forms.add(w.encode("gb18030"))
                except UnicodeEncodeError:
                    pass
        self._db = hs_database([hs_literal(b) for b in sorted(forms)] + list(self._extra))
        self._scratch = hyperscan.Scratch(self._db)
        self._stopped = hyperscan.ScanTerminated

    def found(self, data: bytes) -> bool:
        if self._db is None:
            self._load()
        try:
            self._db.scan(data, match_event_handler=_stop, scratch=self._scratch)
        except self._stopped:
            return True
        return False

    def first(self, data: bytes) -> int:
        """The end offset of the first match in ``data`` (the one that ends first), or -1: none."""
        if self._db is None:
            self._load()
        at = [-1]

        def stop(_i: int, _s: int, end: int, _f: int, _c: object) -> bool:
            at[0] = end
            return True

        try:
            self._db.scan(data, match_event_handler=stop, scratch=self._scratch)
        except self._stopped:
            pass
        return at[0]


class QuietLines:
    """``skip(data)``: the physical line ``data`` (a scan candidate, not in a sticky state) is a prefix line no
    reader acts on (see the module)."""

    def __init__(self, words: frozenset[str], extra: tuple[str, ...]):
        danger = (set(words) | set(EXTRA_TRIGGERS) | set(extra) | set(_SPLIT)) - PREFIX_WORDS
        self._danger = AnyWord(danger, (_CTRL_CLASS, rb"[vV][lL][lL][mM]"))
        self._fed = False  # the first prefix line is fed (the hang rules keep it as evidence)

    @classmethod
    def of(cls, session: Any) -> QuietLines | None:
        """The filter of this session, or None: no Hyperscan, or a rule outside ``READERS`` takes a prefix."""
        if engine() != "hyperscan":
            return None
        extra: list[str] = []
        for r in session.rules:
            if PREFIX_WORDS.intersection(getattr(r, "literals", ()) or ()):
                if not _reads_prefix(r):
                    return None
                extra.extend(getattr(r, "line_words", ()))
        if not extra:
            return None
        return cls(session.gate_words, tuple(extra))

    def skip(self, data: bytes) -> bool:
        if not data.startswith(PREFIXES):
            return False
        if not self._fed:
            self._fed = True
            return False
        return not self._danger.found(data)


__all__ = ["AnyWord", "QuietLines", "PREFIXES", "READERS"]
