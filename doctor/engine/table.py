"""The columns of a logging.jsonl block built when it is decoded (sources/jsonl_layouts.py): one float64 matrix, a key
per line, NaN where a row lacks the key, with the matrix of the rows that hold it. ``columns.Block`` reads its
columns, its step and summary rows here instead of from the rows' dicts.

A key is "plain" when every row that holds it holds a float (after the texts' conversion, as in the rows' dicts): the
only keys ``floats`` gives; any other (a text column, a value of another type in a row read alone) gives None, as
``Block.floats`` does over the rows, and its consumer reads the rows.
"""
from __future__ import annotations

from typing import Any

from ..sources import metrics as msrc


class Table:
    """Columns of one block: ``add`` a group of rows of one key layout (floats as a matrix, rows by place), ``add_row``
    a row read alone, then ``floats``, ``steps``, ``summary``."""

    __slots__ = ("n", "np", "index", "bad", "one_key_set", "_groups", "_rows", "_values", "_present", "_steps",
                 "_summary", "_texts")

    def __init__(self, n: int, np: Any):
        self.n = n
        self.np = np
        self.index: dict[str, int] = {}   # key -> its line of the matrices
        self.bad: set[str] = set()        # keys some row holds as anything but a float
        self._groups: list[tuple[list[str], list[int], Any, dict[str, Any]]] = []
        self._rows: list[tuple[int, dict[str, Any]]] = []
        self._values: Any = None
        self._present: Any = None
        self._steps: Any = None
        self._summary: Any = None
        self._texts: dict[str, Any] = {}   # a text key's values, row after row, where one group holds every row
        self.one_key_set = False   # every row holds the same keys (one group of every row: ``add`` tells)

    def add(self, keys: list[str], rows: list[int], floats: Any, first: dict[str, Any]) -> None:
        """Rows ``rows`` (places in the block) hold ``keys`` as floats (``floats``: their values, a float64 matrix of a
        row per line) and their other keys as ``first`` holds them, by key only (a text key of theirs: ``bad`` or
        ``add_column``)."""
        index = self.index
        for k in keys:
            index.setdefault(k, len(index))
        self._groups.append((keys, rows, floats, first))
        self.one_key_set = len(rows) == self.n and len(self._groups) == 1

    def add_column(self, key: str, rows: list[int], xs: Any) -> None:
        """A text key's values converted (``xs``, at ``rows``): plain when every one is a float."""
        if len(rows) == self.n:
            self._texts[key] = xs
        if type(xs[0]) is float and len(set(map(type, xs))) == 1:
            self.index.setdefault(key, len(self.index))
            self._groups.append(([key], rows, self.np.array(xs, dtype=self.np.float64)[:, None], {}))
        else:
            self.bad.add(key)

    def renumber(self, at: dict[int, int], n: int) -> None:
        """Row i becomes row ``at[i]`` of ``n`` (the block's lines that are no record are left out; every row of a
        group is a record)."""
        self.n = n
        self._groups = [(keys, list(map(at.__getitem__, rows)), floats, first)
                        for keys, rows, floats, first in self._groups]
        self._texts = {}
        self.one_key_set = False

    def texts(self, key: str) -> Any:
        """The values of a text key of every row, row after row (as the rows' dicts hold them), where every row holds
        it; else None."""
        return self._texts.get(key) if not self._rows else None

    def add_row(self, at: int, values: dict[str, Any]) -> None:
        """A row read alone (not of a group): its floats are its columns' values; any other value makes its key bad."""
        self.one_key_set = False
        self._rows.append((at, values))
        for k, x in values.items():
            if type(x) is float:
                self.index.setdefault(k, len(self.index))
            else:
                self.bad.add(k)

    def _build(self) -> None:
        np = self.np
        n, width = self.n, len(self.index)
        if len(self._groups) == 1 and not self._rows and len(self._groups[0][1]) == n and self._groups[0][0]:
            # one layout in every row, its keys the matrix's lines in order: its floats as they are, no copy
            keys, _, floats, first = self._groups[0]
            self._values, self._present = floats.T, np.ones((width, n), dtype=bool)
            self._steps, self._summary = np.full(n, msrc.is_step(first)), np.full(n, msrc.is_summary(first))
            self._groups = []
            return
        values = np.full((width, n), np.nan)
        present = np.zeros((width, n), dtype=bool)
        steps = np.zeros(n, dtype=bool)
        summary = np.zeros(n, dtype=bool)
        index = self.index
        for keys, rows, floats, first in self._groups:
            a, b = rows[0], rows[-1] + 1
            at: Any = slice(a, b) if b - a == len(rows) else np.array(rows, dtype=np.intp)   # one stretch: a slice
            if keys:
                j = [index[k] for k in keys]
                lo, hi = j[0], j[-1] + 1
                lines: Any = slice(lo, hi) if hi - lo == len(j) and j == list(range(lo, hi)) else \
                    np.array(j, dtype=np.intp)
                if type(lines) is not slice and type(at) is not slice:
                    lines = lines[:, None]
                values[lines, at] = floats.T
                present[lines, at] = True
            if first:   # a group of a layout (not a text column): is_step and is_summary read only the keys
                steps[at] = msrc.is_step(first)
                summary[at] = msrc.is_summary(first)
        for at, row in self._rows:
            for k, x in row.items():
                if type(x) is float:
                    values[index[k], at] = x
                    present[index[k], at] = True
            steps[at] = msrc.is_step(row)
            summary[at] = msrc.is_summary(row)
        self._values, self._present, self._steps, self._summary = values, present, steps, summary
        self._groups, self._rows = [], []

    def floats(self, key: str) -> tuple[Any, Any] | None:
        """(values, present) of ``key`` (see the module), NaN and absent where no row holds it."""
        if key in self.bad:
            return None
        if self._values is None:
            self._build()
        j = self.index.get(key)
        if j is None:
            np = self.np
            return np.full(self.n, np.nan), np.zeros(self.n, dtype=bool)
        return self._values[j], self._present[j]

    def lists(self, keys: list[str], at: Any) -> dict[str, list[Any]]:
        """Of the plain keys among ``keys``, the values at rows ``at`` (a slice or an index array) as lists, None where
        a row lacks the key: what ``floats`` gives, read for every key in one pass over the matrix."""
        if self._values is None:
            self._build()
        index, bad = self.index, self.bad
        known = [k for k in keys if k in index and k not in bad]
        out: dict[str, list[Any]] = {}
        if known:
            lines = [index[k] for k in known]
            present = self._present[lines][:, at]
            for k, xs, whole, there in zip(known, self._values[lines][:, at].tolist(), present.all(axis=1).tolist(),
                                           present):
                out[k] = xs if whole else [x if p else None for x, p in zip(xs, there.tolist())]
        n = len(range(self.n)[at]) if type(at) is slice else len(at)
        for k in keys:
            if k not in index and k not in bad:
                out[k] = [None] * n
        return out

    def steps(self) -> Any:
        if self._steps is None:
            self._build()
        return self._steps

    def summary(self) -> Any:
        if self._summary is None:
            self._build()
        return self._summary
