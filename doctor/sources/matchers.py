"""Which lines of a log a rule may care about: the trigger words of a session (its gate words, plus the few that
change line numbering or the traceback tracker) matched over raw byte chunks, by Hyperscan when it imports, else
by a trie-shaped ``re`` pattern (same candidates, slower). The chunk scanner (sources/scan.py) decodes only the
lines these matchers name."""
from __future__ import annotations

import re
from collections.abc import Iterable

from .. import lazyre
from ..gate import engine, hs_database, hs_literal, trie_pattern

EXTRA_TRIGGERS = ("StopIteration", "it/s]", "s/it]", "B/s]", "```")
# control bytes that clean() removes or that split a line (\r), tab and newline excepted
_CTRL_CLASS = rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r[^\n]"


def trigger_bytes(words: Iterable[str]) -> list[bytes]:
    """Byte forms of the trigger words: UTF-8, and GB18030 for non-ASCII words (GBK consoles)."""
    out: set[bytes] = set()
    for w in set(words) | set(EXTRA_TRIGGERS):
        if not w:
            continue
        out.add(w.encode("utf-8"))
        if not w.isascii():
            try:
                out.add(w.encode("gb18030"))
            except UnicodeEncodeError:
                pass
    return sorted(out, key=lambda b: (-len(b), b))


class Matcher:
    """``ends(buf, view, n)``: increasing end offsets of trigger matches in ``buf[:n]`` (at least one per
    candidate line; the scanner skips further matches on a line it has fed).

    Pure Python: the words as one trie-shaped ``re`` pattern (a flat alternation is ~4x slower, and
    mixing in the control-byte class ~6x), searched once per candidate line; control bytes are looked
    for only when ``bytes.translate`` finds any in the chunk. Install Hyperscan for speed."""

    name = "re"

    def __init__(self, words: Iterable[str]):
        lits = trigger_bytes(words)
        self._re = re.compile(trie_pattern([w.decode("latin-1") for w in lits]).encode("latin-1"))

    def ends(self, buf: bytearray, view: memoryview, n: int) -> Iterable[int]:
        search = self._re.search
        find = buf.find
        out: list[int] = []
        pos = 0
        while True:
            m = search(buf, pos, n)
            if m is None:
                break
            out.append(m.end())
            pos = find(b"\n", m.end(), n) + 1  # the rest of this line cannot add a candidate
            if pos <= 0:
                break
        if buf.translate(None, _NOT_CTRL):  # rare: some control byte in the buffer (maybe past n)
            ctrl = [m.end() for m in _CTRL_ONE.finditer(buf, 0, n) if buf[m.start()] != 13 or
                    m.end() < n and buf[m.end()] != 10]
            if ctrl:
                out = sorted(set(out).union(ctrl))
        return out


_CTRL_ONE = lazyre.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")   # the control bytes, \r included
_NOT_CTRL = bytes(b for b in range(256) if not (b < 9 or 11 <= b <= 31 or b == 127))


class HyperscanMatcher(Matcher):
    """Hyperscan over the whole chunk, one callback per match (the database is cached on disk)."""

    name = "hyperscan"

    def __init__(self, words: Iterable[str]):
        import hyperscan  # optional dependency

        lits = trigger_bytes(words)
        # one expression per word and the control-byte class apart: one alternation of everything makes
        # Hyperscan ~1.5x slower here
        self._db = hs_database([hs_literal(w) for w in lits] + [_CTRL_CLASS])
        self.max_len = max([2] + [len(w) for w in lits])  # the longest match (``\r`` + a byte: 2)
        self._scratch = hyperscan.Scratch(self._db)

    def ends(self, buf: bytearray, view: memoryview, n: int) -> Iterable[int]:
        out: list[int] = []
        add = out.append
        find = buf.find
        line_end = [-1]  # the newline of the last line reported: later matches on it are dropped

        def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            if end > line_end[0]:
                add(end)
                line_end[0] = find(b"\n", end - 1, n)

        self._db.scan(view[:n], match_event_handler=on_match, scratch=self._scratch)
        return out


_CACHE: dict[frozenset[str], Matcher] = {}


def matcher_for(words: frozenset[str], use: str | None = None) -> Matcher:
    """The best matcher available (``use``: "hyperscan" or "re"; default: env GRPO_DOCTOR_MATCHER, else
    Hyperscan when it imports)."""
    use = use or engine()
    key = frozenset(words | {f"\0engine={use}"})
    m = _CACHE.get(key)
    if m is None:
        m = _CACHE[key] = HyperscanMatcher(words) if use == "hyperscan" else Matcher(words)
    return m
