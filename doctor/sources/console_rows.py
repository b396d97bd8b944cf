"""Console metric rows gathered into blocks: the bulk path of the line path for metric rows (see docs/DEVELOPMENT.md,
"Performance"). The rows come from lone printed dicts (sources/bars.py ``metric_line``) and runs of step lines
(sources/step_runs.py); a block goes to ``Session.emit_many`` at once, so the Metrics readers take it in one call, over
columns (engine/columns.py), as the rows of a logging.jsonl.

A block is handed over before any other line is fed (the line sorter calls ``emit``), at most ``ROWS_MAX`` rows at a
time. The lines held among its rows (``between``: bars, and save lines, for a rule that reads rows too, which takes both
in file order) go with it. Fewer than ``ROWS_MIN`` rows are emitted one by one, each after the lines held before it. A
console log imports numpy once ``NUMPY_AFTER`` rows are emitted: its blocks are then read as columns, however few rows
each holds. Where every row of a block came from runs of one key layout, the block's columns are taken from the runs'
values (``seed_block``), so the block reads no row for them.

Nothing here calls back into the stages before it: they append rows and held lines, this hands them to the session.
"""
from __future__ import annotations

from typing import Any

from ..engine.columns import Block, Seed
from ..signals import LogLine, Metrics

ROWS_MAX = 256   # console metric rows gathered at most before they are emitted (a block: engine/columns.py)
ROWS_MIN = 16    # fewer are emitted one by one: a block's columns cost more than reading a few rows (measured)
NUMPY_AFTER = 64   # console metric rows after which numpy is imported (engine/columns.MIN_ROWS: a run this long pays it back)
GATHER = True    # False: each console metric row is emitted alone (the equivalence tests compare both)


class GatheredRows:
    """The console metric rows not emitted yet (``rows``), the lines held among them (``between``: (place in rows, line,
    rule)) and, of the rows that runs read, (place in rows, how many, (keys, values), place in values) (``parts``)."""

    __slots__ = ("session", "rows", "parts", "between", "emitted")

    def __init__(self, session: Any):
        self.session = session
        self.rows: list[Metrics] = []
        self.parts: list[tuple[int, int, Any, int]] = []
        self.between: list[tuple[int, Any, Any]] = []
        self.emitted = 0   # console metric rows emitted so far

    def hold(self, line: LogLine, rule: Any) -> None:
        """``rule`` reads rows too: it takes ``line`` after the rows gathered so far (a line among them, sources/saves.py)."""
        self.between.append((len(self.rows), line, rule))

    def emit(self) -> None:
        """Hand the gathered rows, with the lines held among them, to the session (see the module)."""
        if not self.rows:
            return
        rows, between, parts = self.rows, self.between, self.parts
        self.rows, self.between, self.parts = [], [], []
        self.emitted += len(rows)
        if self.emitted >= NUMPY_AFTER and self.emitted - len(rows) < NUMPY_AFTER:
            # a long run: its blocks are read as columns from here on, however few rows each holds (a checkpoint line
            # every few steps cuts DENSE's blocks to ~20 rows, each read row by row while numpy was not imported)
            from ..engine.columns import load_numpy

            load_numpy()
        if len(rows) >= ROWS_MIN:
            if parts:
                seed_block(rows, parts)
            self.session.emit_many(rows, between)
            return
        at = 0
        for i, row in enumerate(rows):   # as they came: each row after the lines held before it
            while at < len(between) and between[at][0] <= i:
                between[at][2].feed(between[at][1])
                at += 1
            self.session.emit(row)
        for _, line, r in between[at:]:
            r.feed(line)


def seed_block(rows: list[Metrics], parts: list[tuple[int, int, Any, int]]) -> None:
    """Hand the columns of a block of rows that runs read, all of one key layout (no key twice), to its
    columns.Block: the values of a key are a slice of each run's values (the same objects as in the rows' dicts),
    so the block reads no row for them."""
    keys = parts[0][2][0]
    at = 0
    for first, n, (k, _), _ in parts:
        if first != at or k != keys:
            return
        at = first + n
    if at != len(rows) or len(set(keys)) != len(keys):
        return
    block = Block.of(rows)
    if block is None:
        return
    block.seed(Seed(keys, [(n, values, off) for _, n, (_, values), off in parts]))


__all__ = ["GATHER", "NUMPY_AFTER", "ROWS_MAX", "ROWS_MIN", "GatheredRows", "seed_block"]
