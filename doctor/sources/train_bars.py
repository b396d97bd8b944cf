"""A pure ``Train`` bar held among console metric rows for the hang rules, read by its step, total and seq: the
LogLine that ``Session.feed_line`` would make of it is built only when a rule keeps the bar as evidence.

Between two console rows of a dense log there is one tqdm redraw; the hang rules (the only readers of both bars and
rows: sources/bars.py) read it in file order with the rows. Of such a bar (``Train:`` before the percentage, so its
description is ``Train``) ``_Progress`` reads only the step, the total, the seq and the path, and keeps the line itself
as the step's line or a phase's line, which the next bar replaces: so of a block's ~256 bars at most three lines are
built (``_Progress.feed_between`` settles them at its end). A rule takes such bars only if it says so
(``takes_train_bars``); its ``feed`` builds the line of one it is handed alone.
"""
from __future__ import annotations

from .. import lazyre
from ..signals import LogLine, Where
from .logtext import EVIDENCE_MAX

TRAIN_PRES = (b"Train:", b"Train")   # a pure bar's text before the percentage, spaces cut: its description is Train


def bar_line(data: bytes, path: str, lineno: int, seq: int) -> LogLine:
    """The LogLine feed_line makes of the pure bar ``data`` (ASCII and block characters, one message)."""
    text = data.decode("utf-8")
    if text.endswith("\r"):
        text = text[:-1]
    raw = text if len(text) <= EVIDENCE_MAX else text[:EVIDENCE_MAX] + "…"
    return LogLine(text, raw, Where(path, lineno), None, seq, "")


_TOTAL = lazyre.compile(rb"\| *\d+/(\d+) \[")   # a pure bar's "| k/n [": its first "|" is followed by blocks or "|"


class TrainBar:
    """A pure Train bar at step ``k`` of ``n`` (line ``lineno`` of ``path``, message ``seq``); ``total()`` is ``n`` (-1:
    read from the line when first asked), ``line()`` its LogLine, built once."""

    __slots__ = ("k", "n", "seq", "lineno", "data", "path", "_line")

    def __init__(self, k: int, n: int, seq: int, lineno: int, data: bytes, path: str):
        self.k, self.n, self.seq, self.lineno, self.data, self.path = k, n, seq, lineno, data, path
        self._line: LogLine | None = None

    def total(self) -> int:
        if self.n < 0:
            self.n = int(_TOTAL.search(self.data).group(1))  # type: ignore[union-attr]
        return self.n

    def line(self) -> LogLine:
        if self._line is None:
            self._line = bar_line(self.data, self.path, self.lineno, self.seq)
        return self._line


__all__ = ["TRAIN_PRES", "TrainBar", "bar_line"]
