"""Which charts a report's series make, and the marks on them (findings, the last step, where the log ends).

Input: the ``series`` object of doctor/curves.py. Output: a list of chart specs the page's script draws as they
are: ``{"title", "x", "keys", "series": [{"label", "points", "dash"}], "markers": [{"x", "label", "kind",
"finding"}]}``. Pure: no I/O, no HTML (html.py escapes what it shows).
"""
from __future__ import annotations

from typing import Any

_FIXED: list[tuple[str, tuple[str, ...]]] = [
    ("Reward (mean and std over the batch)", ("reward", "reward_std")),
    ("Share of groups whose rewards are all equal (frac_reward_zero_std)", ("frac_reward_zero_std",)),
    ("KL to the reference model", ("kl",)),
]
_LATER: list[tuple[str, tuple[str, ...]]] = [
    ("Completion length (tokens)", ("completions/mean_length", "completions/max_length", "completions/min_length",
                                    "completion_length")),
    ("Truncated share (completions cut at max_completion_length)", ("completions/clipped_ratio",
                                                                     "response_clip_ratio")),
    ("Loss", ("loss",)),
    ("Gradient norm (grad_norm)", ("grad_norm",)),
    ("Learning rate", ("learning_rate",)),
    ("Memory printed by the trainer (GiB)", ("memory(GiB)",)),
]


def reward_functions(metrics: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(name, mean key, std key or None) of each reward function, in the order logged."""
    out = []
    for k in metrics:
        if not k.startswith("rewards/") or k.endswith("/std"):
            continue
        name = k[len("rewards/"):].removesuffix("/mean")
        std = f"rewards/{name}/std"
        out.append((name, k, std if std in metrics else None))
    return out


def build(series: dict[str, Any]) -> list[dict[str, Any]]:
    metrics = series.get("metrics") or {}
    groups: list[tuple[str, list[str]]] = []
    groups += [(t, [k for k in keys if k in metrics]) for t, keys in _FIXED[:1]]
    for name, mean, std in reward_functions(metrics):
        groups.append((f"Reward function {name} (mean and std)", [mean] + ([std] if std else [])))
    groups += [(t, [k for k in keys if k in metrics]) for t, keys in _FIXED[1:]]
    groups.append(("Entropy of the policy", [k for k in metrics if k.startswith("entropy")]))
    groups.append(("Clip ratios", [k for k in metrics if k.startswith("clip_ratio")]))
    groups += [(t, [k for k in keys if k in metrics]) for t, keys in _LATER]
    charts: list[dict[str, Any]] = []
    for title, keys in groups:
        if keys:
            charts.append({"title": title, "x": "step", "keys": keys,
                           "series": [{"label": k, "points": metrics[k], "dash": k.endswith(("/std", "reward_std"))} for k in keys],
                           "markers": []})
    gpus = (series.get("gpu") or {}).get("gpus") or {}
    gx = "seconds since the first sample" if (series.get("gpu") or {}).get("x") == "seconds" else "snapshot"
    if gpus:
        for key, title in (("mem_used_mib", "GPU memory used per GPU (MiB)"), ("util_pct", "GPU utilisation per GPU (%)")):
            charts.append({"title": title, "x": gx, "keys": [f"gpu/{key}"],
                           "series": [{"label": f"GPU {i}", "points": g[key], "dash": False} for i, g in gpus.items()],
                           "markers": []})
    _mark(charts, series)
    return charts


def _mark(charts: list[dict[str, Any]], series: dict[str, Any]) -> None:
    step_charts = [c for c in charts if c["x"] == "step"]
    steps = series.get("steps") or {}
    last = steps.get("last")
    for m in series.get("markers") or ():
        key = m.get("series")
        target = next((c for c in charts if key in c["keys"]), None)
        if target is None:
            target = step_charts[0] if step_charts else (charts[0] if charts else None)
        if target is None:
            continue
        x = m.get("step") if target["x"] == "step" else None
        if x is None and target["x"] == "step":
            x = last
        if x is None and target["series"] and target["series"][0]["points"]:
            x = target["series"][0]["points"][-1][0]
        target["markers"].append({"x": x, "label": f"{m['rule_id']} {m['severity']}", "kind": m["severity"],
                                  "finding": m.get("index")})
    end = series.get("log_end") or {}
    for c in step_charts:
        if last is not None:
            c["markers"].append({"x": last, "label": f"last step {last}", "kind": "end", "finding": None})
        if end and end.get("after_step") is not None:
            c["markers"].append({"x": end["after_step"] + 0.5, "label": f"log ends (line {end.get('line')})",
                                 "kind": "end", "finding": None})
    for c in charts:
        for s in c["series"]:
            for p in s["points"]:
                if isinstance(p[1], str):   # NaN/inf: a gap in the line, so a mark says where
                    c["markers"].append({"x": p[0], "label": f"{s['label']} {p[1]}", "kind": "error",
                                         "finding": None})
                    break
