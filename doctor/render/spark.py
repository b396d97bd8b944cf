"""One sparkline under a finding, for the series it is about (text report on a terminal only):
``reward ▁▁▂▂▁▁▁▁ flat at 0 over steps 1-120``. At most MAX_LINES per report, one per series."""
from __future__ import annotations

import math
from typing import Any

BARS = "▁▂▃▄▅▆▇█"
WIDTH = 24
MAX_LINES = 3


def lines_for(series: dict[str, Any] | None) -> dict[int, str]:
    """{finding index: its sparkline} for the first MAX_LINES findings that are about a distinct series."""
    if not series:
        return {}
    metrics = series.get("metrics") or {}
    out: dict[int, str] = {}
    used: set[str] = set()
    for m in series.get("markers") or ():
        key = m.get("series")
        if key is None or key in used or key not in metrics or len(out) >= MAX_LINES:
            continue
        line = sparkline(key, metrics[key])
        if line:
            used.add(key)
            out[m["index"]] = line
    return out


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    return f"{v:.3g}"


def sparkline(key: str, points: list[list[Any]]) -> str:
    pts = [(p[0], p[1]) for p in points if p[1] is not None]
    if len(pts) < 2:
        return ""
    vals = [v if isinstance(v, float) else math.nan for _, v in pts]
    finite = [v for v in vals if math.isfinite(v)]
    n = len(vals)
    width = min(WIDTH, n)
    cells = []
    for i in range(width):
        a, b = i * n // width, max(i * n // width + 1, (i + 1) * n // width)
        chunk = vals[a:b]
        good = [v for v in chunk if math.isfinite(v)]
        cells.append(sum(good) / len(good) if len(good) == len(chunk) else math.nan)
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    span = hi - lo
    bars = "".join("×" if not math.isfinite(c) else BARS[0 if span == 0 else min(7, int((c - lo) / span * 8))]
                   for c in cells)
    first, last = pts[0][0], pts[-1][0]
    if not finite:
        tail = f"not finite over steps {first}-{last}"
    elif span == 0:
        tail = f"flat at {_fmt(lo)} over steps {first}-{last}"
    else:
        tail = f"{_fmt(finite[0])} → {_fmt(finite[-1])} (min {_fmt(lo)}, max {_fmt(hi)}) over steps {first}-{last}"
    bad = next((p for p, v in zip(pts, vals) if not math.isfinite(v)), None)
    if bad is not None and finite:
        tail += f"; {bad[1]} at step {bad[0]}"
    return f"{key} {bars} {tail}"
