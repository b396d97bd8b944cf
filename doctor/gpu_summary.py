"""The run's GPUs in the JSON report (``run["gpus"]``): per GPU, what its samples showed, whatever the source
(nvidia-smi snapshots and NVML dumps in analyze, live NVML samples under watch). A Session observer: constant
memory per GPU, however many samples."""
from __future__ import annotations

from typing import Any

from .signals import GpuSnapshot

MIB = 2 ** 20


class GpuSummary:
    def __init__(self) -> None:
        self.gpus: dict[int, dict[str, Any]] = {}

    def _add(self, index: int, used_mib: float | None, total_mib: float | None, util: float | None,
             name: str | None = None) -> None:
        g = self.gpus.get(index)
        if g is None:
            g = self.gpus[index] = {"name": name, "samples": 0, "mem_total_mib": None, "mem_used_max_mib": None,
                                    "util_max_pct": None, "_util_sum": 0.0, "_util_n": 0, "last": {}}
        g["samples"] += 1
        if name and not g["name"]:
            g["name"] = name
        if total_mib:
            g["mem_total_mib"] = round(total_mib)
        if used_mib is not None:
            g["mem_used_max_mib"] = round(max(used_mib, g["mem_used_max_mib"] or 0.0))
        if util is not None:
            g["util_max_pct"] = max(util, g["util_max_pct"] or 0.0)
            g["_util_sum"] += util
            g["_util_n"] += 1
        g["last"] = {"mem_used_mib": None if used_mib is None else round(used_mib), "util_pct": util}

    def observe_many(self, signals: list[Any], block: Any) -> None:
        """__call__ of each row of a block of metric rows (engine/columns.Block): none is a GPU sample."""

    def __call__(self, signal: Any) -> None:
        if isinstance(signal, GpuSnapshot):
            for position, s in enumerate(signal.samples):   # a query CSV without an index column: its row order
                self._add(s.index if s.index is not None else position, s.mem_used_mib, s.mem_total_mib,
                          s.util_pct, s.name)
        elif type(signal).__name__ == "GpuTick":   # watch's live samples (signals_live, not imported here)
            for gpu in signal.gpus:
                self._add(gpu.index, gpu.mem_used / MIB, gpu.mem_total / MIB if gpu.mem_total else None, gpu.util)

    def result(self) -> list[dict[str, Any]] | None:
        """One object per GPU, by index; None when no GPU was sampled."""
        if not self.gpus:
            return None
        out = []
        for index, g in sorted(self.gpus.items()):
            row = {k: v for k, v in g.items() if not k.startswith("_")}
            row["index"] = index
            row["util_mean_pct"] = round(g["_util_sum"] / g["_util_n"], 1) if g["_util_n"] else None
            out.append(row)
        return out
