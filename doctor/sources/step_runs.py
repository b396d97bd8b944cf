"""Runs of step lines read at once: consecutive candidate lines that are each a pure tqdm bar or a lone printed metric
dict (a dense console log is made of little else: per step a bar and a dict), checked and parsed per run with a few
C-level calls instead of the per-line short cuts of sources/bars.py (``BarStretch.take`` and ``metric_line``: ~20 us
of Python checks per line, ~20 us more per row to parse it).

``StepRuns.take`` reads a run up to its first line that those short cuts would not take as a pure bar or a row, and
leaves the bars' stretch and the gathered rows exactly as they would, line after line (the same kept bars with their
line numbers and seqs, the same rows, the same blocks handed to the session); the scanner feeds that line as any. What
the checks over a run stand for:

- a bar line: ``BAR`` matches it whole (one multi-line ``findall`` over the run's bar lines gives each one's text before
  the percentage and its step), that text is not one the hang rules keep every bar of, no trigger word but
  ``BAR_WORDS`` is in it (one Hyperscan scan over all of them: no word holds a newline), and its key is not one past
  ``MAX_KEYS``; a bar's words are read off the first bar with its text before the percentage and its rate (a pure bar
  holds ``BAR_WORDS`` nowhere else);
- a dict line: ``{'key': 'value', ...}`` with the keys of the run's first row, every key and value free of quotes
  and newlines (one multi-line ``findall`` of that layout's pattern reads the values of every row), printable ASCII, none
  of the words that send a line elsewhere (``/s]``, ``/it]``, a ``vllm`` of any case, verl's and Megatron's marks, a
  double quote) and no trigger word but the metric literals (one scan over all rows). The layout has a key that is a
  metric literal (so the metric test holds for every row), none that is ``': '`` (the one way a printed dict of
  quote-free pieces holds ``', ': '``) and two trainer keys, or their aliases. ``metrics.read_console`` reads such a
  line by the same pieces (``_quoted_pairs``; a learned layout gives the same groups) into the same keys, values and
  ``finite`` (its conversion and cache, ``metrics._convert``);
- a checkpoint save line (sources/saves.py ``in_run``) while a row waits in the stretch to be held among: its bar as a
  bar line; then, the bars kept before it handed to the rules that read rows as before a row, its message as
  ``SaveLines.feed_in_run`` feeds it. A save glued to its bar is two messages: the seqs after it move on by one.

Hyperscan only (the purity tests above are its scans); ``GRPO_DOCTOR_BARS=all`` turns it off with the short cuts.
``tests/test_step_runs.py`` compares the state before every line fed whole, and after the log, with the per-line path
on hostile runs.
"""
from __future__ import annotations

import re
from itertools import chain, compress, repeat
from operator import not_
from typing import Any

from .. import lazyre
from ..signals import console_run_row
from . import bars as bars_mod
from . import console_rows
from . import metrics as msrc
from . import saves as saves_mod
from .bars import BAR_TEXT, TRAIN, BarStretch, _keep
from .matchers import EXTRA_TRIGGERS
from .quiet import AnyWord
from .saves import SaveLines
from .train_bars import TrainBar

ON = True        # False: every line goes the per-line way (the equivalence tests compare both)
RUN_MAX = 512    # lines in one run at most (the scanner looks ahead for RUN_MIN, doubling while runs are read whole)
RUN_MIN = 8
# BAR.fullmatch of each line of a block, over its text (bars.BAR_TEXT: the same language where the block is UTF-8)
_BARS_TEXT = lazyre.compile(r"(?m)^(?:" + BAR_TEXT + r")$")
_ELSEWHERE = ("/s]", "/it]", msrc.VERL_MARK, msrc.VERL_ACTOR_MARK, "elapsed time per iteration", '"')


def _since(since: dict[Any, list[Any]], bars: list[tuple[Any, tuple[Any, ...]]]) -> None:
    """Keep these (key, entry) bars in BarStretch._since_row, in order, as BarStretch.take does."""
    for key, entry in bars:
        near = since.get(key)
        if near is None:
            near = since[key] = [None, None, None, None, -1]
        _keep(near, entry, entry[4])


class StepRuns:
    """``take(lines, lineno, seq, path)``: a run of step lines read at once (see the module)."""

    def __init__(self, stretch: BarStretch, saves: SaveLines | None = None):
        self.stretch = stretch
        self.saves = saves if saves_mod.IN_RUNS else None   # save lines read in a run (sources/saves.py), or None
        self.rows_read = 0   # rows among the lines the last take read
        self.saves_read = 0  # save lines among them
        self.extra = 0       # messages among them past one a line (a save glued to its bar)
        # keys as printed -> (as read, the pattern of such lines in a block, of one line), None: refused
        self._layouts: dict[tuple[str, ...], tuple[tuple[str, ...], Any, Any] | None] = {}
        self._trains: dict[frozenset[str], tuple[Any, ...]] = {}   # a Train bar's words -> the rules holding it (_held)
        # (a pure bar's text before the percentage, as text, its rate's last 6 bytes) -> BarStretch.bar_key of them
        self._keys_of: dict[tuple[str, bytes], tuple[int, tuple[bytes, frozenset[str]]]] = {}
        self._quoted = frozenset(w[1:-1] for w in stretch.metric_words if len(w) > 2 and w[0] == w[-1] == "'")
        # a dict line holding any of these is not read here: a trigger word but the metric literals, what sends a line
        # elsewhere, a vllm of any case, a byte that is not printable ASCII (the scan stops at the first)
        vocab = set(stretch.session.gate_words) | set(EXTRA_TRIGGERS)
        self._danger = AnyWord((vocab - stretch.metric_words) | set(_ELSEWHERE), (rb"[lL][lL][mM]", rb"[^\x20-\x7e\n]"))

    @classmethod
    def of(cls, stretch: BarStretch | None, saves: SaveLines | None = None) -> StepRuns | None:
        """The reader of this stretch, or None: no stretch, no Hyperscan (its word tests), or the metric short cut off."""
        if (not ON or stretch is None or stretch._gate is not None or stretch._not_metric is None
                or not console_rows.GATHER):
            return None
        return cls(stretch, saves)

    def take(self, lines: list[bytes], lineno: int, seq: int, path: str) -> int:
        """Read the run ``lines`` (physical lines, the first one line ``lineno``, message ``seq``; each line one message)
        into the stretch, as BarStretch.take and metric_line of each in turn would, up to the first line that is not
        a step line as they take it: returns how many lines were read (0: none, nothing changed)."""
        stretch = self.stretch
        self.rows_read = self.saves_read = self.extra = 0
        if not stretch.session.state.console_metrics:
            return 0
        isrow = list(map(bytes.startswith, lines, repeat(b"{'")))
        dicts = list(compress(lines, isrow))
        bar_lines = list(compress(lines, map(not_, isrow))) if len(dicts) < len(lines) else []
        saved = self._saved(bar_lines) if self.saves is not None and b"Saving model" in b"".join(bar_lines) \
            else None
        if saved is not None:   # a save line's bar, if any, is read with the bars; its message below
            bar_lines = [sv[0] if sv else ln for ln, sv in zip(bar_lines, saved) if not sv or sv[0] is not None]
        rows, cols = self._rows(dicts) if dicts else ([], None)
        width = len(cols[0]) if cols is not None else 0
        got = self._bars(bar_lines) if bar_lines else []
        n_rows, n_bars = len(rows), len(got)
        keys, since = stretch._keys, stretch._since_row
        block = stretch.gathered   # the rows gathered and the lines held among them (sources/console_rows.py)
        gathered = block.rows
        # the bars since the last row of this run, not kept in since yet: one alone is what _bars_before_row would feed
        # at the next row (since is empty after a row), so it is fed straight; None: no row of this run yet
        gap: list[tuple[Any, tuple[Any, ...]]] | None = None
        ri = bi = 0
        first = off = -1   # the place in the stretch's rows of this run's first row there, and its place in cols
        parts = block.parts
        extra = 0   # the messages before line j past one a line (a save glued to its bar is two)
        si = -1     # the place of line j among the lines that are not rows
        rules = None   # those a save message goes to
        for j, row in enumerate(isrow):
            sv = None
            if not row:
                si += 1
                if saved is not None and (sv := saved[si]) is not None:
                    if not sv or not gathered or sv[0] is not None and bi == n_bars:
                        break   # refused, or no row to be held among (fed whole then, as the scanner would)
                    if sv[0] is None:
                        row = True   # no bar: only its message, below
            if row:
                if sv is None and ri == n_rows:
                    break   # not a row as metric_line reads it here: the lines before it are read
                if gap and len(gap) == 1 and gathered and (bar := gap[0][1])[5] is not None and \
                        (held_by := self._held(bar[3])):
                    # the one Train bar since the last row, held among the rows for rules that all take it by its
                    # step: what _before -> BarStretch.feed_bar does with it, without their calls
                    held = TrainBar(bar[4], bar[5], bar[1], bar[0], bar[2], path)
                    between: list[Any] = block.between
                    at = len(gathered)
                    for r in held_by:
                        between.append((at, held, r))
                    gap = []
                else:
                    gap = self._before(gap, path)
                if sv is not None:
                    rules = self.saves.feed_in_run(stretch.session, block.hold, sv[1], path, lineno + j,  # type: ignore[union-attr]
                                                   seq + j + extra, rules)
                    self.saves_read += 1
                    continue
                if len(gathered) >= console_rows.ROWS_MAX:
                    # a full block goes when the next row comes, not after its last row: a save line between them is
                    # then held among its rows, not fed whole (which would end this run and read its lines again)
                    if first >= 0:
                        parts.append((first, len(gathered) - first, cols, off))
                    first = -1
                    block.emit()
                    gathered, parts = block.rows, block.parts
                finite = rows[ri]
                if first < 0:
                    first, off = len(gathered), ri
                gathered.append(console_run_row((cols[0], cols[1], ri * width), path, lineno + j,  # type: ignore[index]
                                                seq + j + extra, finite))
                ri += 1
                continue
            if bi == n_bars:
                break   # not a pure bar
            key, k, total = got[bi]
            entry = (lineno + j, seq + j + extra, bar_lines[bi], key[1], k, total)
            bi += 1
            slot = keys.get(key)
            if slot is None:
                slot = keys[key] = [None, None, None, None, -1]
            _keep(slot, entry, k)
            if gap is not None:
                gap.append((key, entry))
            elif stretch._row_seen:
                _since(since, [(key, entry)])
            if sv is not None:   # the message glued after this bar: after the bars kept so far, as before a row
                extra += 1
                gap = self._before(gap, path)
                rules = self.saves.feed_in_run(stretch.session, block.hold, sv[1], path, lineno + j,  # type: ignore[union-attr]
                                               seq + j + extra, rules)
                self.saves_read += 1
        else:
            j = len(lines)
        if gap:
            _since(since, gap)   # as line by line: the bars after the last row wait for the next one
        if first >= 0:
            parts.append((first, len(gathered) - first, cols, off))
        if len(gathered) >= console_rows.ROWS_MAX:
            block.emit()   # as metric_line: at most ROWS_MAX rows wait past a run
        self.rows_read = ri
        self.extra = extra
        return j

    def _before(self, gap: list[tuple[Any, tuple[Any, ...]]] | None, path: str) -> list[tuple[Any, tuple[Any, ...]]]:
        """A rule that reads rows takes the bars kept before a row (or a save message) first: the one bar since the last
        row straight, more as _bars_before_row feeds them, or those kept before this run's first row (``gap`` None).
        Returns the new gap."""
        stretch = self.stretch
        if gap is None:
            stretch._bars_before_row(path)
        elif len(gap) == 1:
            stretch.feed_bar(path, gap[0][1])
        elif gap:
            _since(stretch._since_row, gap)
            stretch._bars_before_row(path)
        return []

    def _held(self, words: frozenset[str]) -> tuple[Any, ...]:
        """The rules that read rows a Train bar holding ``words`` goes to, when every one of them takes it by its step
        (BarStretch.feed_bar holds a TrainBar for them), else ()."""
        got = self._trains.get(words)
        if got is None:
            stretch = self.stretch
            rules = stretch._rules(words, True)
            got = self._trains[words] = rules if stretch._train_bars(words, rules) else ()
        return got

    def _saved(self, others: list[bytes]) -> list[Any]:
        """Per line of ``others`` (the run's lines that are not dicts): None (not a save line), False (one a run does not
        read: it ends the run), or (its bar or None, its message) (sources/saves.py ``in_run``)."""
        in_run = self.saves.in_run   # type: ignore[union-attr]
        return [None if b"Saving model" not in ln else (in_run(ln) or False) for ln in others]

    @staticmethod
    def _upto(block: bytes, end: int) -> int:
        """The index of the line of ``block`` (lines joined by newlines) that holds offset ``end - 1``."""
        return block.count(b"\n", 0, max(end - 1, 0))

    # ------------------------------------------------------------------ bars
    def _bars(self, lines: list[bytes]) -> list[tuple[tuple[bytes, frozenset[str]], int, int | None]]:
        """(key, step, total of a Train bar or None) of the bar lines, as BarStretch.take keeps them, up to the first
        that is not a pure bar (or whose key is one too many)."""
        stretch = self.stretch
        block = b"\n".join(lines)
        while lines and (at := stretch._not_bar.first(block)) >= 0:   # cut before the first line with such a word
            lines = lines[:self._upto(block, at)]
            block = b"\n".join(lines)
        try:
            found = _BARS_TEXT.findall(block.decode("utf-8")) if lines else []
        except UnicodeDecodeError:   # a line BAR matches whole is ASCII and block characters: one of them is not a bar
            found = None
        if found is None or len(found) != len(lines):
            full = bars_mod.BAR.fullmatch
            lines = lines[:next(i for i, ln in enumerate(lines) if full(ln) is None)]
            found = _BARS_TEXT.findall(b"\n".join(lines).decode("utf-8")) if lines else []
        out = []
        keys_of, bar_key, have = self._keys_of, stretch.bar_key, stretch._keys
        room = bars_mod.MAX_KEYS - len(have)
        new: set[Any] = set()
        for (pre, k, n), line in zip(found, lines):
            rate = line[-6:] if line[-1:] != b"\r" else line[-7:-1]
            got = keys_of.get((pre, rate))
            if got is None:   # BarStretch.bar_key of the bytes before the percentage, kept by their text here
                got = bar_key(pre.encode("ascii"), rate, line)
                if len(keys_of) < 4096:
                    keys_of[(pre, rate)] = got
            ok, key = got
            if not ok:
                break
            if key not in have and key not in new:
                if len(new) >= room:
                    break   # BarStretch.take refuses a key past MAX_KEYS
                new.add(key)
            out.append((key, int(k), int(n) if ok == TRAIN else None))
        return out

    # ------------------------------------------------------------------ rows
    def _rows(self, lines: list[bytes]) -> tuple[list[bool], Any]:
        """``finite`` of the dict lines, as metric_line reads them, up to the first that is not read that way here
        (another key layout among them); and (keys, their values row after row) of those rows: a row's dict is built
        from them only if read (signals.LazyMetrics)."""
        first = lines[0].decode("ascii", "replace").split("'")
        pairs = len(first) // 4
        if first[0] != "{" or first[-1] != "}" or len(first) % 4 != 1 or first[2::4].count(": ") != pairs or \
                first[4:-1:4].count(", ") != pairs - 1:
            # not {'key': 'value', ...} with every key and value quoted (a transformers 4 row prints its numbers bare):
            # no layout reads it, the one of its own pieces included (that would match it only if so split), and those
            # pieces hold its values (a step counter new on every row): asking for their layout compiled a pattern a row
            return [], None
        layout = self._layout(tuple(first[1::4]))
        if layout is None:
            return [], None
        keys, rx, one = layout
        block = b"\n".join(lines)
        while (at := self._danger.first(block)) >= 0:   # cut before the first line with such a word
            lines = lines[:self._upto(block, at)]
            if not lines:
                return [], None
            block = b"\n".join(lines)
        got = rx.findall(block.decode("ascii"))
        if len(got) != len(lines):
            lines = lines[:next(i for i, ln in enumerate(lines) if one(ln.decode("ascii")) is None)]
            got = rx.findall(b"\n".join(lines).decode("ascii")) if lines else []
        width = len(keys)
        # as metrics._convert: the cached number of each text, a miss read by the cache's __missing__ (a step counter
        # or a time as itself, else remember(); metrics._Converted), so no pass over the values looks for misses
        conv = msrc._CONVERTED
        conv.nonfinite = False
        values = list(map(conv.__getitem__, chain.from_iterable(got) if width > 1 else got))
        if not conv.nonfinite:
            rows = [True] * len(got)
        else:   # nan or +-inf: never cached, so only a miss gives one, and __missing__ said so
            bad = {i // width for i, x in enumerate(values) if type(x) is float and x - x != 0}
            rows = [r not in bad for r in range(len(got))]
        return rows, (keys, values)

    def _layout(self, printed: tuple[str, ...]) -> tuple[tuple[str, ...], Any, Any] | None:
        """(the keys read_console gives a row printed with these keys, aliases named; a pattern reading the values of
        every such line of a block), or None: it gives no row for it, the metric test needs its values, or a key is one
        _QUOTED_DICT refuses or ': ' (see the module)."""
        got = self._layouts.get(printed, ())
        if got != ():
            return got  # type: ignore[return-value]
        if len(self._layouts) >= 256:
            self._layouts.clear()
        keys: tuple[str, ...] | None = printed
        if not printed or not all(0 < len(k) <= 120 and '"' not in k and "\ufffd" not in k for k in printed) or \
                ": " in printed or not self._quoted.intersection(printed):
            keys = None
        elif len(msrc.TRAINER_KEYS.intersection(printed)) < 2:
            keys = tuple(msrc._ALIASES.get(k, k) for k in printed)
            if keys == printed or len(msrc.TRAINER_KEYS.intersection(keys)) < 2:
                keys = None
        out = None
        if keys is not None:
            # possessive: the closing quote is not in the class, so giving characters back never finds another match,
            # and the engine keeps no backtracking state for each value (the block's findall -15 %)
            value = "'([^'\"\n]*+)'"
            line = "\\{" + ", ".join(f"'{re.escape(k)}': {value}" for k in printed) + "\\}"
            out = keys, re.compile("(?m)^" + line + "$"), re.compile(line).fullmatch
        self._layouts[printed] = out
        return out


__all__ = ["RUN_MAX", "RUN_MIN", "StepRuns"]
