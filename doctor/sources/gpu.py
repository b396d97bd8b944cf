"""GPU state: nvidia-smi snapshots saved by people (and live NVML samples), as ``GpuSample`` records.

Formats read (each sniffed from the text, never from the file name):
- the default ``nvidia-smi`` table (79/89/91-column layouts of drivers 450-610, Windows WDDM/TCC, MIG),
  with its Processes box;
- ``nvidia-smi -q`` (also ``-q -d ECC`` / ``-d PERFORMANCE`` sections): memory, utilisation, temperature,
  power, clock event (throttle) reasons, volatile ECC counts, retired pages, remapped rows, processes;
- ``nvidia-smi --query-gpu=... --format=csv`` with or without ``noheader`` / ``nounits``; without a header
  only self-describing values are used (``GPU-...`` UUIDs, ``NVIDIA ...`` names, ``N MiB`` / ``N %``);
- ``nvidia-smi --query-compute-apps=... --format=csv`` (processes per GPU UUID).
A value nvidia-smi could not read (``N/A``, ``[N/A]``, ``ERR!``, ``[Unknown Error]``, ``[Not Supported]``)
is None, never 0. This module only reads; it never judges (rules live in ``doctor/checks/gpu/``).
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .gpu_csv import parse_csv_apps, parse_csv_gpu
from .gpu_model import GpuProcess, GpuSample, SnapshotError, as_number
from .gpu_nvml import parse_nvml_json, sample_nvml
from .gpu_query import parse_query
from .gpu_table import parse_table
from .safeio import open_regular

MAX_SNAPSHOT = 8 * 1024 * 1024  # a snapshot file larger than this is read only up to here

def sniff(head: str) -> str | None:
    """'table' | 'query' | 'csv' | 'csv-apps' | 'nvml-json' | None for the first few KB of a file."""
    if head.lstrip().startswith("{") and '"gpus"' in head and ('"memory"' in head or '"index"' in head):
        return "nvml-json"
    if "NVSMI LOG" in head or re.search(r"(?m)^Attached GPUs\s*:", head) or re.search(
            r"(?m)^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*$", head):
        return "query"
    if "NVIDIA-SMI" in head and ("Memory-Usage" in head or "MiB /" in head or "Processes:" in head):
        return "table"
    first = next((l for l in head.splitlines() if l.strip()), "")
    low = first.lower()
    if "," in first and ("pid" in low and ("used_gpu_memory" in low or "used_memory" in low or "process_name" in low)):
        return "csv-apps"
    if "," in first and re.search(r"\b(memory\.(used|total|free)|utilization\.gpu|temperature\.gpu|power\.draw|"
                                  r"pci\.bus_id|uuid)\b", low):
        return "csv"
    rows = [l for l in head.splitlines()[:20] if l.strip()]
    # a CSV's rows have one number of fields each, short values with no "=": lines that all hold a comma for another
    # reason (a Ray worker's "(pid=4242, ip=10.0.3.7) " prefix on every line of a log) fail one test or the other
    if rows and all("," in r for r in rows) and len({r.count(",") for r in rows}) == 1 and \
            all(len(f) <= 80 and "=" not in f for r in rows for f in r.split(",")):
        if any(re.search(r"\bGPU-[0-9a-f]{8}-", r) for r in rows) and all(re.search(r",\s*\d+\s*(MiB)?\s*$", r)
                                                                         for r in rows) \
                and not any("NVIDIA" in r for r in rows):
            return "csv-apps"
        if any(re.search(r"\d+ MiB\b|\d+ %|NVIDIA |GPU-[0-9a-f]{8}-|, 0x[0-9a-fA-F]{16}\b", r) for r in rows):
            return "csv"
    return None


def parse_text(text: str, where: str = "<text>") -> list[GpuSample]:
    kind = sniff(text[:16384])
    if kind == "table":
        return parse_table(text)
    if kind == "query":
        return parse_query(text)
    if kind == "csv":
        return parse_csv_gpu(text)
    if kind == "csv-apps":
        return parse_csv_apps(text)
    if kind == "nvml-json":
        return parse_nvml_json(text, where)
    first = next((l.strip() for l in text.splitlines() if l.strip()), "")
    if "is not a valid field to query" in first or first.startswith(("Invalid combination", "ERROR:")):
        raise SnapshotError(f"{where}: nvidia-smi printed an error, not GPU data ({first[:100]}); fix the "
                            "--query-gpu field list (nvidia-smi --help-query-gpu) and save the output again")
    raise SnapshotError(f"{where}: not an nvidia-smi output this tool reads (the table, -q, or --query-gpu / "
                        "--query-compute-apps CSV); save one with: nvidia-smi > gpus.txt")


def parse_snapshot(path: str | Path) -> list[GpuSample]:
    """Read a saved nvidia-smi output (any of the formats above). Raises SnapshotError (one line) or OSError."""
    p = Path(path)
    with open_regular(p) as f:
        data = f.read(MAX_SNAPSHOT)
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return parse_text(text, str(path))


def merge(samples: list[GpuSample]) -> list[GpuSample]:
    """Join process-only samples (compute-apps CSV) onto the GPU rows with the same UUID or bus id."""
    gpus = [s for s in samples if s.source != "csv-apps"]
    apps = [s for s in samples if s.source == "csv-apps"]
    out = list(gpus)
    for a in apps:
        for i, g in enumerate(out):
            if (a.uuid and g.uuid == a.uuid) or (a.bus_id and g.bus_id and g.bus_id.lower() == a.bus_id.lower()):
                out[i] = replace(g, processes=tuple(g.processes or ()) + tuple(a.processes or ()))
                break
        else:
            out.append(a)
    return out


# ---------------------------------------------------------------------------------------------- NVML

__all__ = ["GpuSample", "GpuProcess", "SnapshotError", "as_number", "merge", "parse_snapshot", "parse_text",
           "sample_nvml", "sniff"]
