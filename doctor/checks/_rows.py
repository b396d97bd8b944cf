"""What the metric rules take from one train-step dict (its step, the reward columns), computed once per row
for all of them: ``step_row`` for one Metrics signal, ``step_rows`` for the list a rule is fed in one call
(``Rule.feed_many``; every rule of a session gets the same list, so it is computed once per block).

A helper of the checks package (the series, NaN and hang rules read it).
"""
from __future__ import annotations

from typing import Any

from ..rules import OUT_OF_RANGE
from ..signals import Metrics
from ..sources import metrics as msrc

num = msrc.as_float


def reward_key_name(key: str) -> str | None:
    """'rewards/Format/mean' -> 'Format'; 'rewards/accuracy_reward' -> 'accuracy_reward'; '/std' -> None."""
    if not key.startswith("rewards/"):
        return None
    rest = key[len("rewards/"):]
    if rest.endswith("/std"):
        return None
    if rest.endswith("/mean"):
        rest = rest[:-len("/mean")]
    return rest or None


def reward_std_key_name(key: str) -> str | None:
    if key.startswith("rewards/") and key.endswith("/std"):
        return key[len("rewards/"):-len("/std")] or None
    return None


_KEYS: dict[str, tuple[str, str | None]] = {}


def _reward_key(key: str) -> tuple[str, str | None]:
    """('mean'|'std', name) of a rewards/ key, cached (a run has few distinct keys)."""
    hit = _KEYS.get(key)
    if hit is None:
        name = reward_key_name(key)
        hit = ("mean", name) if name is not None else ("std", reward_std_key_name(key))
        if len(_KEYS) < 4096:
            _KEYS[key] = hit
    return hit


_REWARD_LAYOUTS: dict[tuple[str, ...], list[tuple[str, str, str]]] = {}


def _reward_layout(v: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, 'mean'|'std', name) of the rewards/ keys of a dict, in order; cached per key sequence (the
    rows of a run share one)."""
    sig = tuple(v)
    hit = _REWARD_LAYOUTS.get(sig)
    if hit is None:
        hit = []
        for k in sig:
            if k.startswith("rewards/"):
                kind, name = _reward_key(k)
                if name is not None:
                    hit.append((k, kind, name))
        if len(_REWARD_LAYOUTS) >= 256:
            _REWARD_LAYOUTS.clear()
        _REWARD_LAYOUTS[sig] = hit
    return hit


class _Row:
    """What the series and the rules take from one train-step dict, computed once for all of them (the reward
    columns when first asked: a thinned series skips most rows)."""

    __slots__ = ("_values", "_rewards", "step", "gstep", "max_steps")

    def __init__(self, v: dict[str, Any]):
        self._values = v
        self._rewards: list[tuple[str, str, Any]] | None = None
        gs = v.get("global_step/max_steps")
        if isinstance(gs, str) and "/" in gs:   # msrc.step_number and msrc.max_steps with one split
            done, total = gs.split("/", 1)
            self.gstep, self.max_steps = _int_or_none(done), _int_or_none(total)
        else:
            self.gstep = self.max_steps = None
        step = self.gstep
        if step is None:
            s = num(v.get("step"))
            if s is None and "current_steps" in v:
                # LLaMA-Factory's trainer_log.jsonl (its LogCallback) writes current_steps and total_steps
                s, total = num(v["current_steps"]), num(v.get("total_steps"))
                self.max_steps = int(total) if total is not None and total > 0 else None
            step = int(s) if s is not None and s >= 0 else None
        self.step = step

    @property
    def rewards(self) -> list[tuple[str, str, Any]]:
        got = self._rewards
        if got is None:
            v = self._values
            got = self._rewards = []
            for k, kind, name in _reward_layout(v):
                val = v[k]
                got.append((kind, name, val if type(val) is float else num(val)))
        return got


def block_row(v: dict[str, Any], k: int, n: int) -> _Row:
    """_Row(v) of a train-step dict (metrics.is_step) whose "global_step/max_steps" columns.Block.gsteps read as the digits
    k/n: what _Row would split and read from it, given."""
    row = _Row.__new__(_Row)
    row._values, row._rewards = v, None
    row.gstep = row.step = k
    row.max_steps = n
    return row


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


_LAST: list[Any] = [(None, None)]   # (Metrics, _Row | None) of the last dict seen, one tuple (thread-safe swap)


def _table_step(m: Metrics) -> bool:
    """A pasted summary table of a GRPO run's rollout statistics (completions/*, rewards/*): the run's steps as the
    user summed them up, with no loss column to tell it a train step (sources/keyvalue.py)."""
    return m.source == "table" and any(k.startswith(("completions/", "rewards/")) for k in m.values)


def step_row(m: Metrics) -> _Row | None:
    """The _Row of a train step (None for eval rows, summaries and the final train_runtime dict)."""
    last_m, last_row = _LAST[0]
    if last_m is m:
        return last_row
    row = _Row(m.values) if msrc.is_step(m.values) or _table_step(m) else None
    _LAST[0] = (m, row)
    return row


RAISED: Any = object()   # in step_rows: the row whose reading raised (as step_row does for it, every time)
_BLOCK: list[Any] = [(None, None)]   # (signals, rows) of the last list read by step_rows


def step_rows(signals: list[Metrics]) -> list[Any]:
    """step_row of each signal, RAISED where it raises; cached for the last list (the block every metric rule
    of a session is handed in turn)."""
    last, rows = _BLOCK[0]
    if last is signals:
        return rows
    rows = []
    append = rows.append
    is_step = msrc.is_step
    for m in signals:
        v = m.values
        if is_step(v) or _table_step(m):
            try:
                append(_Row(v))
            except OUT_OF_RANGE:
                append(RAISED)
        else:
            append(None)
    _BLOCK[0] = (signals, rows)
    return rows
