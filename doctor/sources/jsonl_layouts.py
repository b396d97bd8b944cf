"""A logging.jsonl block's decoded rows converted by their key layout (sources/jsonl_rows.py decodes them): row by
row (``_by_layout``, ``_convert``), or a run of rows of one layout at once with the block's columns (``by_runs``).

``by_runs``: a run is a stretch of rows of one width whose first row has a known layout (``_layout``: floats and texts
only). Its floats' tuples and texts' tuples are taken by the layout's getters mapped over the run (a row lacking a key
raises: the run is cut where the keys change); every value must have the layout's type (else row by row). The rows of
a layout are gathered over the block, so its floats become one matrix (engine/table.py); the texts are converted a
column at a time through the text cache (metrics._CONVERTED), written back into the rows' dicts only where a value
changed (a text that reads as a number): the dicts end as ``_by_layout`` leaves them, and no Python step is taken per
row. A row's ``finite``: True unless one of its floats, or a text read as a number, is NaN/inf (then None), as
``_by_layout`` says.
"""
from __future__ import annotations

from collections import deque
from itertools import chain, compress, repeat, starmap
from operator import is_, is_not, itemgetter, ne
from typing import Any

from ..engine.table import Table
from . import metrics as msrc


class _Layout:
    """The keys of a row whose values were all floats or texts: one C-level get of each group per row."""

    __slots__ = ("n", "floats", "texts", "keys_texts", "float_keys")

    def __init__(self, floats: list[str], texts: list[str]):
        self.n = len(floats) + len(texts)
        self.keys_texts = tuple(texts)
        self.float_keys = floats
        self.floats = _getter(floats)
        self.texts = _getter(texts)


def _getter(keys: list[str]) -> Any:
    """A callable giving the tuple of these keys' values (itemgetter gives a lone value for one key)."""
    if len(keys) >= 2:
        return itemgetter(*keys)
    if keys:
        key = keys[0]
        return lambda d: (d[key],)
    return lambda d: ()


_LAYOUTS: dict[tuple[str, ...], _Layout | None] = {}
_LAST: list[Any] = [None]
_FLOAT, _STR = frozenset({float}), frozenset({str})


def _by_layout(obj: Any) -> tuple[dict[str, Any], bool | None] | None:
    """_convert of a dict whose keys are those of a known layout, with floats and texts where it had them (the
    rows of a run): None for anything else. The dict itself is returned, its texts replaced by their numbers."""
    if type(obj) is not dict:
        return None
    lay = _LAST[0]
    if lay is None or len(obj) != lay.n:
        lay = _layout(obj)
        if lay is None:
            return None
    try:
        floats, texts = lay.floats(obj), lay.texts(obj)
    except KeyError:   # other keys, as many
        lay = _layout(obj)
        if lay is None:
            return None
        floats, texts = lay.floats(obj), lay.texts(obj)
    if not (_FLOAT.issuperset(map(type, floats)) and _STR.issuperset(map(type, texts))):
        return None
    total = sum(floats)
    finite: bool | None = True
    if total - total != 0:   # a NaN/inf, or finite values whose sum overflows
        finite = None if any(x - x != 0 for x in floats) else True
    conv = msrc._CONVERTED
    for k, v in zip(lay.keys_texts, texts):
        if "/" in v:   # "3/200" (global_step/max_steps): never a number (to_number gives it back)
            continue
        x = conv.get(v)
        if x is None:
            x = msrc.remember(v)
            if type(x) is float and x - x != 0:
                finite = None
        obj[k] = x
    _LAST[0] = lay
    return obj, finite


def _layout(obj: dict[str, Any]) -> _Layout | None:
    sig = tuple(obj)
    if sig in _LAYOUTS:
        return _LAYOUTS[sig]
    floats = [k for k, v in obj.items() if type(v) is float]
    texts = [k for k, v in obj.items() if type(v) is str]
    lay = _Layout(floats, texts) if len(floats) + len(texts) == len(obj) else None
    if len(_LAYOUTS) >= 64:
        _LAYOUTS.clear()
    _LAYOUTS[sig] = lay
    return lay


NESTED: Any = ("nested",)   # _convert of an object that is not a flat record


def _convert(obj: Any) -> Any:
    """parse_jsonl's fast path on one decoded object, with jsonl_finite; NESTED where it would use json (a nested
    value) or the object is not a dict."""
    if type(obj) is not dict:
        return NESTED
    out: dict[str, Any] = {}
    conv = msrc._CONVERTED
    finite: bool | None = True
    for k, v in obj.items():
        t = type(v)
        if t is float:
            out[k] = v
            if v - v != 0:
                finite = None
        elif t is int:
            try:
                out[k] = x = float(v)
            except OverflowError:
                out[k] = x = msrc.to_number(v)
            if x - x != 0:
                finite = None
        elif t is str:
            x = conv.get(v)
            if x is None:
                x = msrc.remember(v)
                if type(x) is float and x - x != 0:
                    finite = None
            out[k] = x
        elif t is dict or t is list:
            return NESTED
        else:
            out[k] = msrc.to_number(v)
    return out, finite


def flat_row(obj: dict[str, Any]) -> tuple[dict[str, Any], bool | None] | None:
    """(values, finite) of a decoded record as a logging.jsonl line gives them (``_convert``); a nested value (a
    list or a table: no metric) is left out. None when nothing is left."""
    got = _convert(obj)
    if got is NESTED:
        got = _convert({k: v for k, v in obj.items() if type(v) is not dict and type(v) is not list})
    return got if got[0] else None


_DICT, _DICT_OR_NONE = {dict}, frozenset({dict, type(None)})
RUN_MIN = 64   # rows of one width a run holds on average, at least, for a block read by runs (see DEVELOPMENT.md)


def by_runs(objs: list[Any], places: list[int], size: int, np: Any) -> tuple[list[Any], Table] | None:
    """(per decoded object: (values, finite), or None for one to read row by row; the table of the converted ones,
    object i at row ``places[i]`` of its ``size``) for a block of decoded objects (None: one the decoder refused); None
    when no run could be read so."""
    n = len(objs)
    types = set(map(type, objs))
    if types == _DICT:
        widths = list(map(len, objs))
    elif _DICT_OR_NONE.issuperset(types):   # a row refused (a NaN of a run that diverged): none of a run
        widths = [-1 if o is None else len(o) for o in objs]
    else:
        return None
    starts = [0, *compress(range(1, n), map(ne, widths, widths[1:])), n]
    if (len(starts) - 1) * RUN_MIN > n:   # short runs: their columns cost more than the rows' path (measured)
        return None
    got: list[Any] = [None] * n
    table = Table(size, np)
    same = n == size   # object i is row i
    groups: list[tuple[Any, list[int], list[Any], list[Any]]] = []
    pending = list(zip(starts, starts[1:]))
    while pending:   # a span of rows of several key sets (same width) comes back cut, each part by its own layout
        spans: dict[int, tuple[Any, list[tuple[int, int]]]] = {}   # the spans of each layout (by their first row's)
        for a, b in sorted(pending):
            if widths[a] >= 0:
                lay = _layout(objs[a])
                if lay is not None:
                    spans.setdefault(id(lay), (lay, []))[1].append((a, b))
        pending = []
        for lay, its in spans.values():
            if len(its) == 1 and its[0] == (0, n):   # one run of the whole block
                rows, run = list(range(n)), objs
            else:
                rows = list(chain.from_iterable(starmap(range, its)))
                run = list(map(objs.__getitem__, rows))
            got_run = _values(lay, run)
            if got_run is None:   # a row of another key set or type: span by span
                rows, run, got_run = _by_span(objs, lay, its, pending)
            if rows:
                groups.append((lay, rows, *got_run))
                if len(rows) == n:
                    got = list(zip(run, repeat(True)))
                else:
                    deque(map(got.__setitem__, rows, zip(run, repeat(True))), 0)
    if not groups:
        return None
    conv = msrc._CONVERTED
    for lay, rows, fl, tx in groups:
        first = objs[rows[0]]
        at = rows if same else list(map(places.__getitem__, rows))
        width = len(lay.float_keys)
        # numpy's iterator reader over the floats in a row: ~2.5x faster than its reading of a list of tuples
        matrix = np.fromiter(chain.from_iterable(fl), np.float64, len(fl) * width).reshape(len(fl), width) \
            if width else None
        table.add(lay.float_keys, at, matrix, first)
        if matrix is not None and not np.isfinite(matrix.sum()):   # a NaN/inf (or a sum past float): which rows
            for i in np.flatnonzero(~np.isfinite(matrix).all(axis=1)).tolist():
                got[rows[i]] = (objs[rows[i]], None)
        if not lay.keys_texts:
            continue
        for k, col in zip(lay.keys_texts, zip(*tx)):
            if all(map(str.endswith, col, repeat("s"))) or all(map(str.__contains__, col, repeat("/"))):
                table.add_column(k, at, col)   # times and step counters: to_number gives them back, no number
                continue
            xs = list(map(conv.get, col, col))   # the cache's hits in C; a miss gives its text, the same object
            for i in compress(range(len(col)), map(is_, xs, col)):
                if "/" not in col[i]:
                    xs[i] = msrc.remember(col[i])
            if any(map(is_not, xs, col)):   # a text read as a number (or a cached copy): into the dicts
                dicts = [objs[i] for i in rows]
                deque(map(dict.__setitem__, dicts, repeat(k), xs), 0)
                if float in set(map(type, xs)):
                    for i, x in enumerate(xs):
                        if type(x) is float and x - x != 0:
                            got[rows[i]] = (dicts[i], None)
            table.add_column(k, at, xs)
    return got, table


def _by_span(objs: list[Any], lay: Any, spans: list[tuple[int, int]], cut: list[tuple[int, int]]) -> \
        tuple[list[int], list[Any], tuple[list[Any], list[Any]]]:
    """(rows, their objects, their floats' and texts' tuples) of the spans whose rows all hold the layout's keys and
    types; a span of rows of several key sets is cut where the keys change, its parts added to ``cut``; a span of one
    key set holding a value of another type is left out (read row by row)."""
    rows: list[int] = []
    run: list[Any] = []
    fl: list[Any] = []
    tx: list[Any] = []
    for a, b in spans:
        got = _values(lay, objs[a:b])
        if got is None:
            if b - a > 1:
                keys = list(map(tuple, objs[a:b]))
                inner = [a, *compress(range(a + 1, b), map(ne, keys, keys[1:])), b]
                if len(inner) > 2:
                    cut.extend(zip(inner, inner[1:]))
            continue
        rows.extend(range(a, b))
        run.extend(objs[a:b])
        fl.extend(got[0])
        tx.extend(got[1])
    return rows, run, (fl, tx)


def _values(lay: Any, run: list[dict[str, Any]]) -> tuple[list[Any], list[Any]] | None:
    """The floats' and the texts' tuples of the rows ``run`` when each holds the layout's keys with its types."""
    try:
        fl = list(map(lay.floats, run))
        tx = list(map(lay.texts, run))
    except KeyError:   # another key set of the same width
        return None
    if not (_FLOAT.issuperset(map(type, chain.from_iterable(fl)))
            and _STR.issuperset(map(type, chain.from_iterable(tx)))):
        return None
    return fl, tx


