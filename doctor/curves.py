"""The run's curves for the HTML report and ``--format json --series``: a session observer that records every
train-step metric row and GPU sample, and turns them into downsampled series with the findings placed on them.

Memory: a row keeps its numbers only (at most MAX_KEYS keys); beyond MAX_ROWS rows every other one is dropped,
as the rules' Series does. Output: at most MAX_POINTS points per series; older steps are cut into buckets that
keep each bucket's first, minimum and maximum points (a spike or a NaN is never averaged away).

The ``series`` object (schema 1, additive; only with --series or the HTML format)::

    {"steps": {"first": 1, "last": 120, "max_steps": 300, "rows": 120},
     "downsampled": false, "max_points": 1000,
     "metrics": {"reward": [[1, 0.25], [2, "nan"], ...], "rewards/accuracy/mean": [...], ...},
     "gpu": {"x": "seconds|sample", "gpus": {"0": {"mem_used_mib": [[x, v]...], "mem_total_mib": 81920,
                                                   "util_pct": [[x, v]...]}}},
     "markers": [{"rule_id": "GD610", "severity": "error", "title": "...", "series": "reward", "step": 12,
                  "index": 0}],
     "log_end": {"path": "train.log", "line": 4021, "after_step": 120}}
"""
from __future__ import annotations

import math
from typing import Any

from . import lazyre
from .signals import GpuSnapshot, Metrics
from .sources import metrics as msrc

MAX_ROWS = 50_000
MAX_KEYS = 96
MAX_POINTS = 1000
_SKIP_KEYS = {"epoch", "step", "global_step/max_steps", "elapsed_time", "remaining_time", "percentage"}
_STEP_RE = lazyre.compile(r"\bsteps? (\d+)")
_KEY_RE = lazyre.compile(r"""['"]([\w/().-]{1,80})['"]\s*:""")
_TS_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%a %b %d %H:%M:%S %Y", "%Y-%m-%d %H:%M:%S.%f",
               "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


class Recorder:
    """A Session observer: ``session.observers.append(Recorder())``; ``result(findings, session)`` at the end."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.cols: dict[str, list[float | None]] = {}
        self.where: dict[tuple[str, int], float] = {}   # (path, line) of a row -> its step
        self.by_path: dict[str, list[tuple[int, float]]] = {}
        self.max_steps: int | None = None
        self.stride = 1
        self._skip = 0
        self._last: tuple[float, dict] | None = None   # the newest row the stride skipped
        self.rows = 0
        self.gpu: dict[str, dict[str, Any]] = {}
        self.gpu_seq = 0
        self.gpu_x = "seconds"
        self._t0: float | None = None

    def new_run(self) -> None:
        """Another run appended to the same log starts: the metric curves are the last run's (no line joins two
        launches); the GPU samples stay (they are the machine's, by time)."""
        self.steps, self.cols, self.where, self.by_path = [], {}, {}, {}
        self.max_steps, self.stride, self._skip, self.rows = None, 1, 0, 0
        self._last = None

    def __call__(self, signal: Any) -> None:
        if isinstance(signal, Metrics):
            self._metrics(signal)
        elif isinstance(signal, GpuSnapshot):
            self._gpu(signal)
        elif type(signal).__name__ == "GpuTick":   # watch's live samples (signals_live, not imported here)
            self._tick(signal)

    # ---------------------------------------------------------------------------------------------- metrics
    def _metrics(self, m: Metrics) -> None:
        v = m.values
        if not msrc.is_step(v):
            return
        self.rows += 1
        step = _step(v)
        if step is None:
            step = float(self.steps[-1] + 1 if self.steps else 1)
        ms = msrc.max_steps(v)
        if ms:
            self.max_steps = ms
        if len(self.where) < 4 * MAX_ROWS:
            self.where[(m.where.path, m.where.line)] = step
            self.by_path.setdefault(m.where.path, []).append((m.where.line, step))
        if self.stride > 1:
            self._skip = (self._skip + 1) % self.stride
            if self._skip:
                self._last = (step, v)   # thinned out, unless it turns out to be the run's last row
                return
        self._last = None
        if len(self.steps) >= MAX_ROWS:
            for col in self.cols.values():
                del col[1::2]
            del self.steps[1::2]
            self.stride *= 2
        n = len(self.steps)
        self.steps.append(step)
        for k, x in v.items():
            if k in _SKIP_KEYS or not isinstance(k, str):
                continue
            x = x if type(x) is float else msrc.to_number(x)
            if type(x) is not float:
                continue
            got = self.cols.get(k)
            if got is None:
                if len(self.cols) >= MAX_KEYS:
                    continue
                got = self.cols[k] = [None] * n
            got.append(x)
        for col in self.cols.values():
            if len(col) <= n:
                col.append(None)

    # ---------------------------------------------------------------------------------------------- GPUs
    def _gpu(self, snap: GpuSnapshot) -> None:
        self.gpu_seq += 1
        for s in snap.samples:
            if s.index is None:
                continue
            x = _seconds(s.timestamp)
            if x is None or self.gpu_x == "sample":
                if self.gpu_x != "sample":   # one sample without a time: every GPU chart by sample number
                    self.gpu_x = "sample"
                    for g in self.gpu.values():
                        for key in ("mem_used_mib", "util_pct"):
                            g[key] = [[i + 1, p[1]] for i, p in enumerate(g[key])]
                x = float(self.gpu_seq)
            else:
                if self._t0 is None:
                    self._t0 = x
                x -= self._t0
            g = self.gpu.setdefault(str(s.index), {"name": s.name, "mem_used_mib": [], "util_pct": [],
                                                    "mem_total_mib": s.mem_total_mib})
            _add_sample(g, [x, s.mem_used_mib], [x, s.util_pct])
            if s.mem_total_mib:
                g["mem_total_mib"] = s.mem_total_mib

    def _tick(self, tick: Any) -> None:
        self.gpu_x = "seconds"
        for gpu in tick.gpus:
            g = self.gpu.setdefault(str(gpu.index), {"name": None, "mem_used_mib": [], "util_pct": [],
                                                      "mem_total_mib": gpu.mem_total / 2**20 if gpu.mem_total else None})
            _add_sample(g, [round(tick.t, 1), gpu.mem_used / 2**20], [round(tick.t, 1), gpu.util])

    # ---------------------------------------------------------------------------------------------- result
    def step_at(self, path: str, line: int) -> float | None:
        """The step of the row at (path, line), else of the last row of that file before that line."""
        hit = self.where.get((path, line))
        if hit is not None:
            return hit
        best = None
        for ln, st in self.by_path.get(path, ()):
            if ln <= line:
                best = st
            else:
                break
        return best

    def _keep_last(self) -> None:
        """The newest row is always on the curves: the step a run died at matters most."""
        if self._last is None:
            return
        step, v = self._last
        self._last = None
        n = len(self.steps)
        self.steps.append(step)
        for k, col in self.cols.items():
            x = v.get(k)
            x = x if type(x) is float else msrc.to_number(x)
            col.append(x if type(x) is float else None)
        for col in self.cols.values():
            if len(col) <= n:
                col.append(None)

    def result(self, findings: list, session: Any = None) -> dict[str, Any]:
        self._keep_last()
        metrics = {k: downsample(self.steps, col) for k, col in self.cols.items()
                   if any(x is not None for x in col)}
        first = self.steps[0] if self.steps else None
        last = self.steps[-1] if self.steps else None
        out: dict[str, Any] = {
            "steps": {"first": _int(first), "last": _int(last), "max_steps": self.max_steps, "rows": self.rows},
            "downsampled": len(self.steps) > MAX_POINTS or self.stride > 1, "max_points": MAX_POINTS,
            "metrics": metrics,
            "gpu": {"x": self.gpu_x, "gpus": {k: {**g, "mem_used_mib": downsample_pairs(g["mem_used_mib"]),
                                                  "util_pct": downsample_pairs(g["util_pct"])}
                                              for k, g in sorted(self.gpu.items(), key=lambda kv: _gpu_key(kv[0]))}},
            "markers": [self.marker(i, f, metrics) for i, f in enumerate(findings)],
            "log_end": self.log_end(session, last),
        }
        return out

    def log_end(self, session: Any, last: float | None) -> dict[str, Any] | None:
        tails = getattr(session, "tails", None) or {}
        best = None
        for path, tail in tails.items():
            if tail:
                line = tail[-1].where.line
                best = {"path": path, "line": line, "after_step": _int(self.step_at(path, line) or last)}
        return best

    def marker(self, index: int, f: Any, metrics: dict[str, Any]) -> dict[str, Any]:
        step = None
        keys: list[str] = []
        for e in f.evidence:
            m = _STEP_RE.search(e.text)
            if step is None and m is not None:
                step = float(m.group(1))
            if step is None and e.line:
                step = self.step_at(e.path, e.line)
            keys += _KEY_RE.findall(e.text)
        return {"rule_id": f.rule_id, "severity": f.severity.name, "title": f.title,
                "series": series_for(f, keys, metrics, self.gpu), "step": _int(step), "index": index}


def series_for(f: Any, keys: list[str], metrics: dict[str, Any], gpu: dict[str, Any]) -> str | None:
    """The series a finding is about: a key its evidence shows (NaN first), else by its category."""
    cat = f.category
    if (cat.startswith("gpu") or f.rule_id.startswith(("GD50", "GD90"))) and gpu:
        return "gpu/util_pct" if cat in ("gpu-underutilized", "hang-mid-training", "slow-training") \
            else "gpu/mem_used_mib"
    text = " ".join(e.text for e in f.evidence) + " " + f.message
    if cat == "reward-zero-or-flat":
        for k in metrics:
            name = k[len("rewards/"):].removesuffix("/mean") if k.startswith("rewards/") else None
            if name and not k.endswith("/std") and (f"`{name}`" in text or f"'{name}'" in text):
                return k
    prefer = {"reward-zero-or-flat": ("reward", "frac_reward_zero_std"), "grad-norm-zero": ("grad_norm",),
              "loss-nan-or-inf": ("loss", "grad_norm", "kl"),
              "output-degenerate": ("completions/mean_length", "completion_length", "completions/clipped_ratio")}
    for k in keys:
        if k in metrics and ("nan" in text.lower() or "inf" in text.lower()) and cat == "loss-nan-or-inf":
            return k
    for k in prefer.get(cat, ()):
        if k in metrics:
            return k
    for k in keys:
        if k in metrics:
            return k
    return None


def _add_sample(g: dict[str, Any], mem: list[Any], util: list[Any]) -> None:
    """One GPU sample; past MAX_ROWS every other older sample goes (memory stays flat and the newest, where a run
    died, stays on the chart)."""
    if len(g["mem_used_mib"]) >= MAX_ROWS:
        for key in ("mem_used_mib", "util_pct"):
            del g[key][1:-1:2]
    g["mem_used_mib"].append(mem)
    g["util_pct"].append(util)


def downsample(steps: list[float], col: list[float | None], limit: int = MAX_POINTS) -> list[list[Any]]:
    pairs = [[_num(s), _val(x)] for s, x in zip(steps, col) if x is not None]
    return downsample_pairs(pairs, limit)


def downsample_pairs(pairs: list[list[Any]], limit: int = MAX_POINTS) -> list[list[Any]]:
    """At most ~limit points: the newest limit/2 kept as they are, the older ones cut into buckets that keep
    their first, minimum and maximum points (non-finite values always kept)."""
    if len(pairs) <= limit:
        return pairs
    keep_new = limit // 2
    old, new = pairs[:-keep_new], pairs[-keep_new:]
    buckets = max(1, (limit - keep_new) // 3)
    size = math.ceil(len(old) / buckets)
    out: list[list[Any]] = []
    for i in range(0, len(old), size):
        b = old[i:i + size]
        finite = [p for p in b if isinstance(p[1], float)]
        pick = {id(b[0]): b[0]}
        if finite:
            lo = min(finite, key=lambda p: p[1])
            hi = max(finite, key=lambda p: p[1])
            pick[id(lo)] = lo
            pick[id(hi)] = hi
        for p in b:
            if not isinstance(p[1], float) and p[1] is not None:
                pick[id(p)] = p
        out += sorted(pick.values(), key=lambda p: p[0])
    return out + new


def _val(x: float) -> Any:
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _num(s: float) -> Any:
    return int(s) if s == int(s) else s


def _int(s: float | None) -> int | None:
    return None if s is None else int(s)


def _step(v: dict[str, Any]) -> float | None:
    s = msrc.step_number(v)
    if s is not None:
        try:
            return float(s)
        except OverflowError:  # a step of 400 digits ("global_step/max_steps" is text): no point of a curve
            return None
    x = v.get("step")
    x = x if type(x) is float else msrc.to_number(x)
    return x if type(x) is float and math.isfinite(x) else None


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    t = " ".join(ts.split())
    from datetime import datetime  # a run's timestamps only: not imported at every start of watch
    for fmt in _TS_FORMATS:
        try:
            return datetime.strptime(t, fmt).timestamp()
        except ValueError:
            continue
    return None


def _gpu_key(k: str) -> tuple[int, str]:
    return (int(k), k) if k.isdigit() else (1 << 30, k)
