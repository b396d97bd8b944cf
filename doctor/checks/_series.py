"""The metric series of a run: one columnar store of the train rows (a few base keys and every
rewards/<Name>), shared by the series rules of a session, each reading it through a view of its own keys.

Rows come as Metrics signals (logging.jsonl or printed dicts). Memory stays flat: beyond MAX_ROWS every
other row is dropped (a huge run is judged on a thinned series; streaks count kept rows).

A helper of the checks package, not of one family: the series rules of rules/rewards/, rules/numerics/
and rules/outputs/ all read it.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..engine.columns import Block, load_numpy
from ..model import Evidence
from ..rules import Rule
from ..signals import Metrics
from ._rows import RAISED, _reward_layout, block_row, num, reward_key_name, reward_std_key_name, step_row, step_rows

MAX_ROWS = 20_000         # rows kept per rule; beyond it every other row is dropped (memory stays flat)
MAX_REWARD_FUNCS = 64   # reward functions kept per run (mean and std each); later names are counted, not kept
EPS_STD = 1e-6            # reward_std at or below this is a flat group

BASE_KEYS = ("loss", "grad_norm", "learning_rate", "reward", "reward_std", "frac_reward_zero_std", "kl",
             "completions/mean_length", "completions/clipped_ratio", "completion_length", "response_clip_ratio",
             "epoch")


# ------------------------------------------------------------------------------------------ helpers
def fmt(v: float | None, digits: int = 4) -> str:
    if v is None:
        return "?"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    if v == 0:
        return "0"
    if 1000 <= abs(v) < 1e7:
        return f"{v:.0f}"
    if abs(v) >= 1e7 or abs(v) < 1e-3:
        return f"{v:.3g}"
    s = f"{v:.{digits}g}"
    return s


FEW_ROWS = 2              # a series of this many logged steps or fewer is an excerpt: what it shows may not last
# a finding read off such an excerpt (the few_rows_caveat sentence) is at most "likely": one or two rows show the
# state, not that it lasted (doctor/confidence.py)
EXCERPT_CONFIDENCE = "likely"
# how a reading of the first few rows that stays at info opens its message: too few steps to say that it lasts (the
# prose reading raises it when the paste's words say it does)
TOO_EARLY = "Too early to tell"


def few_rows_caveat(n: int) -> str:
    """The sentence a finding read off an excerpt of ``n`` logged steps (n <= FEW_ROWS) adds: what so few rows cannot
    show. Its findings are warnings; a sustained streak keeps the rule's own severity."""
    rows = "one row" if n == 1 else ("two rows" if n == 2 else f"{n} rows")
    return (f" {rows[0].upper() + rows[1:]} cannot tell whether it lasts: more logged steps (logging.jsonl, "
            f"trainer_state.json or more of the log) would show whether the next steps are the same.")


def excerpt(s: SeriesReader, idx: list[int]) -> bool:
    """Whether the rows ``idx`` (FEW_ROWS or fewer) are an excerpt of a run rather than all of it: False when the
    rows' steps reach the run's last step (global_step/max_steps) from its first logged one (a 2-step run logged whole
    lasted as long as it could)."""
    if not idx:
        return True
    return excerpt_steps(s.steps[idx[0]], s.steps[idx[-1]], s.max_steps, len(idx))


def excerpt_steps(first: int | None, last: int | None, max_steps: int | None, n: int) -> bool:
    """``excerpt`` from the first and last rows' steps, the run's max_steps and the number of rows."""
    if first is None or last is None or max_steps is None or last != max_steps:
        return True
    return first > max(1, max_steps // max(1, n))


def longest_streak(flags: list[bool]) -> tuple[int, int]:
    """(length, end index) of the longest run of True."""
    best, best_end, cur = 0, -1, 0
    for i, f in enumerate(flags):
        cur = cur + 1 if f else 0
        if cur > best:
            best, best_end = cur, i
    return best, best_end


_FLOAT_OR_NONE = frozenset({float, type(None)})
_FLOATS = frozenset({float})


class SeriesReader:
    """Labels, spans and evidence over columns: shared by a Series and a rule's SeriesView of one."""

    cols: dict[str, list[float | None]]
    rmean: dict[str, list[float | None]]
    rstd: dict[str, list[float | None]]
    steps: list[int | None]
    where: list[tuple[str, int, int]]
    max_steps: int | None
    n: int

    def col(self, key: str) -> list[float | None]:
        return self.cols.get(key) or [None] * self.n

    def label(self, i: int) -> str:
        s = self.steps[i]
        if s is None:
            return f"logged row {i + 1}"
        return f"step {s}/{self.max_steps}" if self.max_steps else f"step {s}"

    def span(self, i: int, j: int) -> str:
        if i == j:
            return self.label(i)
        a, b = self.steps[i], self.steps[j]
        if a is not None and b is not None:
            tail = f" of {self.max_steps}" if self.max_steps else ""
            return f"steps {a}-{b}{tail}"
        return f"logged rows {i + 1}-{j + 1}"

    def evidence(self, i: int, keys: Iterable[str]) -> Evidence:
        path, line, _ = self.where[i]
        parts = []
        for k in keys:
            if k in self.cols:
                v = self.cols[k][i]
            elif k.startswith("rewards/"):
                nm = reward_key_name(k)
                src = self.rmean if nm else self.rstd
                nm = nm or reward_std_key_name(k)
                v = src.get(nm, [None] * self.n)[i] if nm else None
            else:
                v = None
            if v is not None:
                parts.append(f"'{k}': {fmt(v, 6)}")
        label = self.label(i)
        return Evidence(path, line, f"{label}: {{{', '.join(parts)}}}")

    def seq(self, i: int) -> int:
        return self.where[i][2]


class Series(SeriesReader):
    """Columnar store of the train rows of a run: a few base keys and every rewards/<Name>.

    One store serves all the series rules of a session (each reads it through a SeriesView); the lists
    are compacted in place, so a view's references to them stay valid."""

    def __init__(self, keys: Iterable[str] = BASE_KEYS, rewards: bool = True):
        self.keys = tuple(keys)
        self.cols = {k: [] for k in self.keys}
        self.want_rewards = rewards
        self.rmean = {}
        self.rstd = {}
        self.steps = []
        self.max_steps = None
        self.where = []   # (path, line, seq)
        self.n = 0
        self.stride = 1       # after compaction only every stride-th row is kept
        self.fed = 0          # rows offered to add (kept or not)
        self.kept = False     # whether the last row offered was kept
        self._skip = 0
        self.dropped_rewards: set[str] = set()   # reward functions past MAX_REWARD_FUNCS, not kept

    def widen(self, keys: Iterable[str], rewards: bool) -> None:
        """Also store these keys (and the reward columns): only before the first row."""
        if self.fed:
            raise ValueError("a series can only be widened before its first row")
        for k in keys:
            if k not in self.cols:
                self.cols[k] = []
        self.keys = tuple(self.cols)
        self.want_rewards = self.want_rewards or rewards

    def _compact(self) -> None:
        """Keep every other row: a huge run is judged on a thinned series (streaks count kept rows)."""
        for col in self.cols.values():
            del col[1::2]
        for target in (self.rmean, self.rstd):
            for col in target.values():
                del col[1::2]
        del self.steps[1::2]
        del self.where[1::2]
        self.n = len(self.steps)
        self.stride *= 2

    def add(self, m: Metrics) -> bool:
        self.fed += 1
        self.kept = self._add(m)
        return self.kept

    def add_many(self, ms: list[Metrics]) -> None:
        """add() of each, in order (a row whose reading raises is counted as fed, as add() leaves it); the rows
        kept are appended column by column."""
        block = Block.of(ms)
        if block is not None and block.gsteps() is not None:
            self._add_block(ms, block)
            return
        keep: list[tuple[Metrics, Any]] = []
        for m, row in zip(ms, step_rows(ms)):
            self.fed += 1
            if row is RAISED:
                continue
            if row is None:
                self.kept = False
                continue
            if self.stride > 1:   # _add's thinning
                self._skip = skip = (self._skip + 1) % self.stride
                if skip:
                    self.kept = False
                    continue
            if self.n + len(keep) >= MAX_ROWS:
                self._append(keep)
                keep = []
                self._compact()
            keep.append((m, row))
            self.kept = True
        self._append(keep)

    def _add_block(self, ms: list[Metrics], block: Block) -> None:
        """add_many over a block whose step rows all give their step as digits (no row's reading raises): only
        the rows the thinning keeps are read."""
        keep: list[tuple[Metrics, Any]] = []
        idx: list[int] = []   # the rows of keep, by their place in the block
        last = len(ms) - 1
        kept = False
        ks, ns = (x.tolist() for x in block.gsteps())   # type: ignore[union-attr]   # the step rows' K and N
        # its columns cost less than the rows' dicts only when seeded or taken when the rows were decoded
        cols = block if block.seeded or block.tabled else None
        rows = block.steps().nonzero()[0].tolist()
        # the thinning keeps every stride-th step row: the one whose _skip comes round to 0 first, then each stride-th
        stride = self.stride
        start = (stride - 1 - self._skip) % stride
        if self.n + len(rows[start::stride]) < MAX_ROWS:   # no compaction among them: the kept rows as slices
            if stride > 1:
                self._skip = (self._skip + len(rows)) % stride
            kept_ms = [ms[i] for i in rows[start::stride]]
            kks, kns = ks[start::stride], ns[start::stride]
            # a row's _Row only where one is read (the first of a reward layout's stretch): steps and totals as lists
            self._append_rows(kept_ms, lambda k: block_row(kept_ms[k].values, kks[k], kns[k]), kks, kns, cols,
                              rows[start::stride])
            self.fed += len(ms)
            self.kept = bool(rows) and (len(rows) - 1 - start) % stride == 0 and len(rows) > start \
                and rows[-1] == last
            return
        for at, i in enumerate(rows):
            if self.stride > 1:   # _add's thinning
                self._skip = skip = (self._skip + 1) % self.stride
                if skip:
                    kept = False
                    continue
            if self.n + len(keep) >= MAX_ROWS:
                self._append(keep, cols, idx)
                keep, idx = [], []
                self._compact()
            keep.append((ms[i], block_row(ms[i].values, ks[at], ns[at])))
            idx.append(i)
            kept = i == last
        self._append(keep, cols, idx)
        self.fed += len(ms)
        self.kept = kept

    def _append(self, keep: list[tuple[Metrics, Any]], block: Block | None = None, idx: list[int] | None = None) -> None:
        """_add's appends for rows it keeps (no compaction due among them); ``block``: theirs, read over its columns
        where a column is plain floats (rows ``idx`` of it: a value a float, None where the row lacks the key)."""
        if keep:
            rows = [r for _, r in keep]
            self._append_rows([m for m, _ in keep], rows.__getitem__, [r.step for r in rows],
                              [r.max_steps for r in rows], block, idx)

    def _append_rows(self, ms: list[Metrics], row_of: Callable[[int], Any], steps: list[Any], totals: list[Any],
                     block: Block | None = None, idx: list[int] | None = None) -> None:
        """_append of the rows ``ms``, their _Row given by ``row_of(k)``, their step and max_steps by ``steps`` and
        ``totals`` (a _Row is asked only where its reward values are read)."""
        if not ms:
            return
        # the rows' dicts read once for every column (each row's values of the series' keys in C, then transposed):
        # cheaper than a pass over the rows per column; a seeded or tabled block's columns are read instead, and its
        # rows' dicts only for a column that is not plain (a console run's rows build theirs then: LazyMetrics)
        values = [m.values for m in ms] if block is None or not (block.seeded or block.tabled) else None
        by_col = dict(zip(self.cols, zip(*[tuple(map(v.get, self.cols)) for v in values]))) \
            if values is not None else None
        lists: dict[str, list[Any]] = {}
        if block is not None and block.tabled and idx:   # every plain column read at once (a slice: one stretch)
            at = slice(idx[0], idx[-1] + 1) if idx[-1] - idx[0] + 1 == len(idx) else load_numpy().array(idx)
            lists = block.float_lists(list(self.cols), at) or {}
        for k, col in self.cols.items():
            if k in lists:
                col.extend(lists[k])
                continue
            raw = block.seeded_values(k, idx) if block is not None and idx is not None else None
            if raw is not None:   # a seeded block: the same objects as the rows' dicts, read without them
                xs = raw if _FLOAT_OR_NONE.issuperset(map(type, raw)) else [
                    x if x is None or type(x) is float else num(x) for x in raw]
                col.extend(xs)
                continue
            got = block.floats(k) if block is not None else None
            if got is not None:
                v, present = got
                xs = v[idx].tolist()
                there = present[idx]
                if not there.all():
                    xs = [x if p else None for x, p in zip(xs, there.tolist())]
            else:
                xs = by_col[k] if by_col is not None else [m.values.get(k) for m in ms]
                if not _FLOAT_OR_NONE.issuperset(map(type, xs)):
                    xs = [x if x is None or type(x) is float else num(x) for x in xs]
            col.extend(xs)
        self._close_rows(ms, row_of, steps, totals, block, idx)

    def _add(self, m: Metrics, row: Any = RAISED) -> bool:
        if row is RAISED:
            row = step_row(m)
        if row is None:   # eval rows carry eval_* keys only and are not steps
            return False
        if self.stride > 1:
            self._skip = (self._skip + 1) % self.stride
            if self._skip:
                return False
        if self.n >= MAX_ROWS:
            self._compact()
        values = m.values
        for k, col in self.cols.items():
            x = values.get(k)
            col.append(x if x is None or type(x) is float else num(x))
        self._close_row(m, row)
        return True

    def _close_rows(self, ms: list[Metrics], row_of: Callable[[int], Any], steps: list[Any], totals: list[Any],
                    block: Block | None = None, idx: list[int] | None = None) -> None:
        """_close_row of each kept row (``ms``, their _Row by ``row_of``, steps, totals), in order. The first row of a
        stretch of rows with one reward layout makes the columns its names need (or drops them for good); the rest of
        the stretch is appended column by column:
        one value to each named column per row and None to the others, as _close_row leaves them. A layout naming
        one function twice goes through _close_row row by row, and so do the rows after it while a column is longer
        than the series (_close_row pads only the columns not ahead). ``block``: a seeded block the rows ``idx`` of
        which these are (every row holds the same keys in the same order: one layout, its values read off the
        block's columns, the same objects as in the rows' dicts)."""
        # every row of the same keys: one stretch (the columns a layout names are extended key by key, whatever the
        # keys' order in each row)
        one = block is not None and block.one_key_set
        if block is not None and not block.seeded:
            block = None
        i, end = 0, len(ms)
        while i < end:
            m = ms[i]
            self._close_row(m, row_of(i))
            j = i = i + 1
            layout = _reward_layout(m.values) if self.want_rewards else None
            if one:
                j = end   # one key set, so one layout (cached per key sequence)
            while j < end and (layout is None or _reward_layout(ms[j].values) is layout):
                j += 1
            if j == i:
                continue
            run = ms[i:j]
            if layout is not None and (len({(kind, name) for _, kind, name in layout}) < len(layout) or any(
                    len(col) != self.n for target in (self.rmean, self.rstd) for col in target.values())):
                for k in range(i, j):
                    self._close_row(ms[k], row_of(k))
                i = j
                continue
            if layout is not None:
                values = [x.values for x in run] if block is None else None
                filled = set()
                for k, kind, name in layout:
                    col = (self.rmean if kind == "mean" else self.rstd).get(name)
                    if col is not None:
                        xs = [v[k] for v in values] if values is not None else \
                            block.seeded_values(k, idx[i:j])  # type: ignore[union-attr,index]
                        col.extend(xs if _FLOATS.issuperset(map(type, xs)) else   # type: ignore[arg-type]
                                   [x if type(x) is float else num(x) for x in xs])  # type: ignore[union-attr]
                        filled.add(id(col))
                for target in (self.rmean, self.rstd):
                    for col in target.values():
                        if id(col) not in filled:
                            col.extend([None] * len(run))
            self.steps.extend(steps[i:j])
            total = [t for t in totals[i:j] if t]
            if total:
                self.max_steps = total[-1]
            self.where.extend([(x.where.path, x.where.line, x.seq) for x in run])
            self.n += len(run)
            i = j

    def _close_row(self, m: Metrics, row: Any) -> None:
        """The rest of a kept row, after its base columns: its reward columns (None where a function is absent),
        step, place and count."""
        if self.want_rewards:
            n = self.n
            for kind, name, val in row.rewards:
                target = self.rmean if kind == "mean" else self.rstd
                col = target.get(name)
                if col is None:
                    if len(target) >= MAX_REWARD_FUNCS:
                        # each new name costs a column as long as the run: a file naming a new function on every
                        # row would grow as rows x names (1.5 MB took 3.6 GiB); real runs have a handful
                        if len(self.dropped_rewards) < MAX_REWARD_FUNCS:
                            self.dropped_rewards.add(name)
                        continue
                    col = target[name] = [None] * n
                col.append(val)
            for target in (self.rmean, self.rstd):
                for col in target.values():
                    if len(col) <= n:
                        col.append(None)
        self.steps.append(row.step)
        if row.max_steps:
            self.max_steps = row.max_steps
        self.where.append((m.where.path, m.where.line, m.seq))
        self.n += 1


class SeriesView(SeriesReader):
    """One rule's window on a shared Series: only its own keys (others read as missing) and the reward
    columns only if it asked for them, i.e. what a Series of its own would hold. Each row reaches every
    view; the first view to see it adds it to the store."""

    def __init__(self, store: Series, keys: Iterable[str], rewards: bool):
        store.widen(keys, rewards)
        self.store = store
        self.keys = tuple(keys)
        self.want_rewards = rewards
        self.cols = {k: store.cols[k] for k in self.keys}
        self.rmean = store.rmean if rewards else {}
        self.rstd = store.rstd if rewards else {}
        self.fed = 0

    def add(self, m: Metrics) -> bool:
        self.fed += 1
        if self.fed > self.store.fed:
            self.store.add(m)
        return self.store.kept

    def add_many(self, ms: list[Metrics]) -> None:
        """add() of each: the rows the store has not had yet are added to it."""
        self.fed += len(ms)
        new = self.fed - self.store.fed
        if new > 0:
            self.store.add_many(ms if new >= len(ms) else ms[len(ms) - new:])

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.store.n

    @property
    def steps(self) -> list[int | None]:  # type: ignore[override]
        return self.store.steps

    @property
    def where(self) -> list[tuple[str, int, int]]:  # type: ignore[override]
        return self.store.where

    @property
    def max_steps(self) -> int | None:  # type: ignore[override]
        return self.store.max_steps

    @property
    def stride(self) -> int:
        return self.store.stride


class SeriesRule(Rule):
    """Base for checks over the metric series. Rules of one session read one shared Series (see share)."""

    kinds = frozenset({Metrics})
    series_keys: tuple[str, ...] = BASE_KEYS
    want_rewards = True

    def __init__(self, meta):
        super().__init__(meta)
        self.s: SeriesReader = SeriesView(Series((), False), self.series_keys, self.want_rewards)

    def share(self, pool: dict[str, Any]) -> None:
        """Read the session's one Series. The first series rule adds every row to it; the others need no
        signal at all, so they take none (one add per row instead of one per rule)."""
        store = pool.get("series")
        first = store is None
        if first:
            store = pool["series"] = Series((), False)
        self.s = SeriesView(store, self.series_keys, self.want_rewards)
        if not first and self.kinds == SeriesRule.kinds and type(self).feed is SeriesRule.feed:
            self.kinds = frozenset()

    def feed(self, signal: Any) -> None:
        if isinstance(signal, Metrics):
            self.s.add(signal)

    def feed_many(self, signals: list[Any]) -> None:
        if type(self).feed is not SeriesRule.feed or not isinstance(signals[0], Metrics):  # one type (emit_many)
            super().feed_many(signals)
            return
        self.s.add_many(signals)  # type: ignore[attr-defined]
