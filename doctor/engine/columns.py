"""The metric rows of one block as columns (issue 32): per key a float64 numpy array, NaN where the row lacks the key,
with a mask of the rows that hold it (a logged NaN and a missing key both read NaN, and the rules tell them apart).

A block is the list of Metrics signals a source hands ``Session.emit_many`` at once (a few hundred rows of a
logging.jsonl). Its columns are built once, on first use, and shared by every consumer of that block. The fast
path takes only the values the decoders give for numbers, floats, and missing keys; a column holding anything
else (an int, a text, a bool, a 400-digit integer) is not built (``floats`` gives None) and its consumer reads
those rows one by one, exactly as before: the column path never has to reproduce a conversion rule.

numpy is optional (the ``full`` extra): without it ``Block.of`` gives None and every consumer keeps the row path.
"""
from __future__ import annotations

import sys
from itertools import chain, repeat
from operator import contains, is_not
from typing import Any

from ..signals import METRICS_TYPES, Metrics
from ..sources import metrics as msrc

ENABLED = True   # False: every block is read row by row (the equivalence tests compare both paths)
np: Any = None   # numpy, imported by the first block: a log without metric rows never pays its import (~0.1 s)
_LAST: list[Any] = [(None, None)]   # (signals, Block) of the last list asked for: one tuple, swapped whole
_ABSENT = float("nan")   # the default of a missing key: this one object (a decoded NaN is another), so `is` finds it
# fewer rows than this are read row by row while numpy is not imported yet: importing it costs ~0.17 s of CPU, more
# than the row path takes for them (a block of one row reads ~5x slower as columns; a series of 512 rows finishes as
# fast either way), and a short run (the fault scoreboard's 4-step runs under watch) never needs it. The two paths
# give the same results (tests/test_columns_equivalence.py); once numpy is imported, every block and series is read
# as columns, as before
MIN_ROWS = 64


def worth(n: int) -> bool:
    """Whether ``n`` rows are read as columns (numpy permitting): always once numpy is imported, else from MIN_ROWS
    rows on."""
    return n >= MIN_ROWS or np is not None or "numpy" in sys.modules


class Block:
    """Columns of one block of Metrics rows, built on demand and kept for the block's other consumers."""

    __slots__ = ("signals", "n", "_values", "_cols", "_steps", "_summary", "_gsteps", "_seed", "_table")

    def __init__(self, signals: list[Metrics]):
        self.signals = signals
        self.n = len(signals)
        self._values: list[dict[str, Any]] | None = None
        self._cols: dict[str, Any] = {}
        self._steps: Any = None
        self._summary: Any = None
        self._gsteps: Any = False
        self._seed: Seed | None = None   # key -> its values, every row holding every key (seed)
        self._table: Any = None   # the columns taken when the rows were decoded (engine/table.py)

    @classmethod
    def of(cls, signals: list[Any]) -> Block | None:
        """The block of these signals, or None when they are not all Metrics, numpy is missing, or they are fewer
        than MIN_ROWS while numpy is not imported yet (``worth``). The same list
        gives the same block (the session's consumers and then each rule read one block in turn)."""
        if not ENABLED:
            return None
        last, block = _LAST[0]
        if last is signals and (block is None or block.n == len(signals)):   # not a list grown since
            return block  # type: ignore[no-any-return]
        if (not signals or not worth(len(signals)) or not METRICS_TYPES.issuperset(map(type, signals))
                or load_numpy() is None):
            block = None
        else:
            block = cls(signals)
        _LAST[0] = (signals, block)
        return block

    @property
    def values(self) -> list[dict[str, Any]]:
        """Every row's dict, listed on first use: a seeded block's consumers read its columns and ``row`` instead, so
        its rows' dicts (signals.LazyMetrics) are built only for the rows one reads."""
        if self._values is None:
            self._values = [m.values for m in self.signals]
        return self._values

    def row(self, i: int) -> dict[str, Any]:
        """The dict of row ``i``."""
        return self.signals[i].values

    def floats(self, key: str) -> tuple[Any, Any] | None:
        """(values, present) of ``key``: float64 with NaN where absent, and the rows that hold it. None when a row
        holds it as anything but a float (the consumer then reads the rows)."""
        got = self._cols.get(key, False)
        if got is not False:
            return got
        if self._table is not None:
            got = self._cols[key] = self._table.floats(key)
            return got
        seed = self._seed
        if seed is not None:
            xs = seed.get(key)
            if xs is None:   # no row holds it: NaN, absent, as below
                got = self._cols[key] = (np.full(self.n, np.nan), np.zeros(self.n, dtype=bool))
                return got
            got = (np.array(xs, dtype=np.float64), np.ones(self.n, dtype=bool)) \
                if len(set(map(type, xs))) == 1 and type(xs[0]) is float else None
            self._cols[key] = got
            return got
        n = self.n
        if not any(map(contains, self.values, repeat(key))):
            # no row holds it (a logger's other spelling, "train/loss", asked for every block): NaN, absent, as below
            got = self._cols[key] = (np.full(n, np.nan), np.zeros(n, dtype=bool))
            return got
        xs = [v.get(key, _ABSENT) for v in self.values]
        if len(set(map(type, xs))) == 1 and type(xs[0]) is float:   # a null, an int or a text: not a plain column
            # the absent rows read NaN; the mask keeps which NaN was logged. Every value a float, only _ABSENT itself
            # compares equal to it (NaN equals nothing): no absent row is the common case, and needs no per-row mask
            present = np.ones(n, dtype=bool) if not xs.count(_ABSENT) else \
                np.fromiter(map(is_not, xs, [_ABSENT] * n), bool, n)
            got = (np.array(xs, dtype=np.float64), present)
        else:
            got = None
        self._cols[key] = got
        return got

    @property
    def seeded(self) -> bool:
        return self._seed is not None

    @property
    def one_key_set(self) -> bool:
        """Every row holds the same keys (seeded, or so read when decoded), in any order."""
        return self._seed is not None or (self._table is not None and self._table.one_key_set)

    @property
    def tabled(self) -> bool:
        """Whether its columns were taken when its rows were decoded (``take_table``)."""
        return self._table is not None

    def seed(self, cols: Seed) -> None:
        """The values of each key, row after row, where every row holds exactly these keys (the rows of console runs
        read at once, sources/step_runs.py): ``floats`` reads them instead of the rows' dicts, with the same result."""
        self._seed = cols

    def float_lists(self, keys: list[str], at: Any) -> dict[str, list[Any]] | None:
        """For a block whose columns were taken when decoded: of the plain keys among ``keys``, the values at rows
        ``at`` as lists, None where a row lacks the key (``floats`` of each, in one pass); None for any other block."""
        return None if self._table is None else self._table.lists(keys, at)

    def take_table(self, table: Any) -> None:
        """The block's columns, taken when its rows were decoded (engine/table.py: the same results as the rows')."""
        self._table = table

    def summary(self) -> Any:
        """Rows that are ms-swift's closing object (metrics.is_summary)."""
        if self._summary is None:
            if self._table is not None:
                self._summary = self._table.summary()
            elif self._seed is not None:   # every row holds the same keys, and the test reads only which keys
                self._summary = np.full(self.n, msrc.is_summary(self.row(0)))
            else:
                self._summary = np.fromiter(map(msrc.is_summary, self.values), bool, self.n)
        return self._summary

    def steps(self) -> Any:
        """Rows that are train steps (metrics.is_step)."""
        if self._steps is None:
            if self._table is not None:
                self._steps = self._table.steps()
            elif self._seed is not None:   # as summary()
                self._steps = np.full(self.n, msrc.is_step(self.row(0)))
            else:
                self._steps = np.fromiter(map(msrc.is_step, self.values), bool, self.n)
        return self._steps

    def seeded_values(self, key: str, rows: list[int]) -> list[Any] | None:
        """The values of ``key`` at ``rows`` as the rows' dicts hold them (the same objects; None where absent) when the
        block is seeded, without numpy; None when it is not."""
        if self._seed is None:
            return None
        xs = self._seed.get(key)
        if xs is None:
            return [None] * len(rows)
        return [xs[i] for i in rows] if len(rows) < self.n else list(xs)

    def gsteps(self) -> tuple[Any, Any] | None:
        """(step, max_steps) of the train-step rows (``steps()``), int64, from their "global_step/max_steps": None
        unless every one of them holds it as ASCII digits "K/N" of at most 18 digits each (what
        metrics.step_number and metrics.max_steps read without a doubt; anything else is read row by row)."""
        if self._gsteps is not False:
            return self._gsteps  # type: ignore[no-any-return]
        self._gsteps = None
        at = self.steps().nonzero()[0]
        if at.size:
            if self._seed is not None and at.size == self.n:
                gs = self._seed.get("global_step/max_steps") or [None]
            elif self._table is not None and at.size == self.n and self._table.texts("global_step/max_steps"):
                gs = self._table.texts("global_step/max_steps")
            else:
                gs = [self.row(i).get("global_step/max_steps") for i in at]
            if len(set(map(type, gs))) == 1 and type(gs[0]) is str and set(map(str.count, gs, ["/"] * len(gs))) == {1}:
                parts = "/".join(gs).split("/")   # one "/" in each: K and N of each row, in turn
                digits = "".join(parts)
                if all(parts) and max(map(len, parts)) <= 18 and digits.isascii() and digits.isdigit():
                    # plain digits of at most 18 each, read by numpy's text reader in one call: what int() of each
                    # gives (and the string array's astype), at a third of int()'s cost
                    both = np.fromstring(" ".join(parts), dtype=np.int64, sep=" ")
                    self._gsteps = (both[0::2], both[1::2])
        return self._gsteps  # type: ignore[no-any-return]


class Seed:
    """The columns of a block of rows read by runs of one key layout (sources/step_runs.py), each built on first ask
    (``get``): a key's values, row after row, are slices of the runs' values (every row holds every key, in order)."""

    __slots__ = ("_index", "_width", "_parts", "_cols")

    def __init__(self, keys: tuple[str, ...], parts: list[tuple[int, list[Any], int]]):
        self._index = {k: j for j, k in enumerate(keys)}
        self._width = len(keys)
        self._parts = parts   # (rows, the run's values row after row, the first row's place in them)
        self._cols: dict[str, list[Any] | None] = {}

    def get(self, key: str) -> list[Any] | None:
        col = self._cols.get(key, False)
        if col is False:
            j = self._index.get(key)
            w = self._width
            col = self._cols[key] = None if j is None else list(chain.from_iterable(
                values[off * w + j:(off + n) * w:w] for n, values, off in self._parts))
        return col   # type: ignore[return-value]


def load_numpy() -> Any:
    global np
    if np is None:
        try:
            import numpy  # noqa: PLC0415 - see np
        except ImportError:   # the base install: every consumer reads rows
            return None
        np = numpy
    return np


def first_of(block: Block, keys: tuple[str, ...]) -> tuple[Any, Any] | None:
    """(values, present) of the first key of ``keys`` that a row holds, per row (``values.get(k1, values.get(k2))``
    over columns); None when a column is not plain floats."""
    out_v: Any = None
    out_ok: Any = None
    for k in keys:
        col = block.floats(k)
        if col is None:
            return None
        v, ok = col
        if out_v is None:
            out_v, out_ok = v.copy(), ok.copy()
        else:
            take = ok & ~out_ok
            out_v[take] = v[take]
            out_ok |= ok
    return out_v, out_ok


def add_facts(facts: Any, v: Any) -> None:
    """claims.MetricFacts.add of each value of ``v`` (float64), in order."""
    fin = np.isfinite(v)
    small = np.abs(v) <= 1e-6
    facts.logged += int(v.size)
    facts.nonfinite += int(v.size - np.count_nonzero(fin))
    facts.zero += int(np.count_nonzero(fin & small))
    if facts.example is None:
        other = np.flatnonzero(fin & ~small)
        if other.size:
            facts.example = float(v[other[0]])
