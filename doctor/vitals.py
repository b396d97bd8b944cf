"""A run's vitals (issue 29 point 6): one line that answers "is my run learning?" where a report would otherwise
say only "No problem found.": steps reached of the total, reward first -> last, the share of flat groups first ->
last, KL and the truncated share at the last logged step, and the last checkpoint saved.

Each part is read from the inputs or left out: nothing is assumed. ``Tracker`` (a session observer) keeps the first
and last value of the few metrics shown, as logged (a NaN stays a NaN: hiding it would misreport the run);
``vitals`` turns them, with the checkpoints the run saved, into the report's ``run["vitals"]``.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from . import lazyre
from .engine.columns import first_of
from .signals import Metrics
from .sources import metrics as msrc

# shown part -> the metric keys that give it, first found wins (response_clip_ratio: ms-swift before 3.3)
KEYS: dict[str, tuple[str, ...]] = {
    "reward": ("reward",),
    "flat_groups": ("frac_reward_zero_std",),
    "kl": ("kl",),
    "truncated": ("completions/clipped_ratio", "response_clip_ratio"),
}
_CKPT_STEP = lazyre.compile(r"checkpoint-(\d+)")


class Tracker:
    """A Session observer: the step, max_steps and the first / last value of each KEYS metric of the train rows."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.max_steps: int | None = None
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.rows: dict[str, int] = {}   # rows that logged the part: one row has no "first -> last"
        self.saved: str | None = None    # last_model_checkpoint of ms-swift's closing logging.jsonl object

    def new_run(self) -> None:
        """Another run appended to the same log starts: the vitals are its numbers, not the previous run's."""
        self.__init__()  # type: ignore[misc]

    def __call__(self, signal: Any) -> None:
        if not isinstance(signal, Metrics):
            return
        v = signal.values
        if msrc.is_summary(v):
            path = v.get("last_model_checkpoint")
            if isinstance(path, str) and path:
                self.saved = path
            return
        if not msrc.is_step(v):
            return
        step = _step(v)   # trainer_state.json, tfevents and wandb rows say "step"; a row count is not a step
        if step is not None:
            self.step = step
            self.max_steps = msrc.max_steps(v) or self.max_steps
        for part, keys in KEYS.items():
            x = _part(v, keys)
            if x is None:
                continue
            self.first.setdefault(part, x)
            self.last[part] = x
            self.rows[part] = self.rows.get(part, 0) + 1

    def observe_many(self, signals: list[Metrics], block: Any) -> None:
        """__call__ of each of a block's rows (engine/columns.Block), over its columns: only the last step and
        each part's first and last value and count matter, so the rows are not visited one by one."""
        summary = block.summary()
        for i in summary.nonzero()[0]:
            path = block.row(i).get("last_model_checkpoint")
            if isinstance(path, str) and path:
                self.saved = path
        steps = block.steps()
        at = steps.nonzero()[0]
        if not at.size:
            return
        found = False
        for i in at[::-1]:   # the last row with a step sets it; max_steps: the last such row that gives one
            v = block.row(i)
            step = _step(v)
            if step is None:
                continue
            if not found:
                self.step, found = step, True
            total = msrc.max_steps(v)
            if total:
                self.max_steps = total
                break
        for part, keys in KEYS.items():
            col = first_of(block, keys)
            if col is None:   # not plain floats: those rows one by one
                for i in at:
                    x = _part(block.row(i), keys)
                    if x is not None:
                        self.first.setdefault(part, x)
                        self.last[part] = x
                        self.rows[part] = self.rows.get(part, 0) + 1
                continue
            got = (col[1] & steps).nonzero()[0]
            if got.size:
                self.first.setdefault(part, float(col[0][got[0]]))
                self.last[part] = float(col[0][got[-1]])
                self.rows[part] = self.rows.get(part, 0) + int(got.size)


def _step(v: dict[str, Any]) -> int | None:
    """A row's step: global_step/max_steps, else an integral "step" (trainer_state.json, tfevents, wandb)."""
    step = msrc.step_number(v)
    if step is None:
        x = msrc.to_number(v.get("step"))
        step = int(x) if type(x) is float and math.isfinite(x) and x == int(x) else None
    return step


def _part(v: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    """The value of a shown part in one row: the first of its keys that the row holds as a number."""
    for k in keys:
        raw = v.get(k)
        if raw is not None:
            y = msrc.to_number(raw)
            if type(y) is float:
                return y
    return None


def checkpoint_name(path: str) -> str:
    """'out/v0-2026/checkpoint-100/' -> 'checkpoint-100' (a Windows path too)."""
    p = path.strip().strip("'\",;").rstrip("/\\")   # as printed inside a dict or a sentence
    return re.split(r"[/\\]", p)[-1] or p


def last_checkpoint(paths: Iterable[str]) -> str | None:
    """The name of the latest trainer checkpoint among these paths: the highest checkpoint-N (the later one seen of
    two with the same N). Other names are left out: a save to '/dev/full' that failed, ms-swift's 'None' when
    nothing was saved, a final save_model folder that holds no trainer state."""
    best: tuple[int, str] | None = None
    for path in paths:
        name = checkpoint_name(path)
        m = _CKPT_STEP.fullmatch(name)
        if m is not None and (best is None or int(m.group(1)) >= best[0]):
            best = (int(m.group(1)), name)
    return best[1] if best else None


def vitals(t: Tracker, checkpoints: Iterable[str] = ()) -> dict[str, Any] | None:
    """The report's ``run["vitals"]``: the numbers read, and ``summary``, the one line; None when the inputs show
    none of them."""
    out: dict[str, Any] = {}
    if t.step is not None:
        out["step"] = t.step
        if t.max_steps:
            out["max_steps"] = t.max_steps
    for part in KEYS:
        if part in t.last:
            out[part] = {"first": _plain(t.first[part]), "last": _plain(t.last[part]), "rows": t.rows[part]}
    ckpt = last_checkpoint([*checkpoints, *([t.saved] if t.saved else [])])
    if ckpt:
        out["last_checkpoint"] = ckpt
    if not out:
        return None
    out["summary"] = summary(out)
    return out


def summary(v: dict[str, Any]) -> str:
    """'steps 200/200, reward 0.12 -> 0.81, flat groups 35% -> 8%, kl 0.0021, truncated 4%, last checkpoint
    checkpoint-200': reward and flat groups first -> last (trends), KL and truncation at the last logged step."""
    bits = []
    if "step" in v:
        bits.append(f"steps {v['step']}/{v['max_steps']}" if v.get("max_steps") else f"step {v['step']}")
    for part, label, pct in (("reward", "reward", False), ("flat_groups", "flat groups", True)):
        if part in v:
            a, b = (_num(v[part][k], pct) for k in ("first", "last"))
            bits.append(f"{label} {a} -> {b}" if v[part]["rows"] > 1 else f"{label} {b}")
    if "kl" in v:
        bits.append(f"kl {_num(v['kl']['last'], False)}")
    if "truncated" in v:
        bits.append(f"truncated {_num(v['truncated']['last'], True)}")
    if "last_checkpoint" in v:
        bits.append(f"last checkpoint {v['last_checkpoint']}")
    return ", ".join(bits)


def _plain(x: float) -> float | str:
    """A non-finite value as the report writes it ("nan", "inf", "-inf"): a NaN is never equal to itself, so a
    report holding one could not be compared with another (goldens, the scanner's two paths)."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _num(x: float | str, pct: bool) -> str:
    """3 significant digits ('0.00213', '0.81', '35%', '8.33%'); a non-finite value as it is ('nan')."""
    if isinstance(x, str):
        return x
    if pct:
        x *= 100
    text = f"{x:.0f}" if abs(x) >= 1000 else f"{x:.3g}"   # 1234, not 1.23e+03
    return text + "%" if pct else text
