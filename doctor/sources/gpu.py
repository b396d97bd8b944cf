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

import csv
import io
import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from .safeio import open_regular

MAX_SNAPSHOT = 8 * 1024 * 1024  # a snapshot file larger than this is read only up to here


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int | None
    name: str | None = None
    mem_mib: float | None = None
    gpu_uuid: str | None = None
    type: str | None = None       # C, G, C+G


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one moment. Every field is None when the source did not say (or could not read) it."""

    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    util_pct: float | None = None
    mem_util_pct: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    perf_state: str | None = None
    processes: tuple[GpuProcess, ...] | None = None   # None: the source did not list processes
    ecc_volatile_uncorrected: int | None = None
    ecc_volatile_corrected: int | None = None
    retired_pages: int | None = None          # single + double bit retired pages
    retired_pending: bool | None = None
    remapped_pending: bool | None = None
    remap_failed: bool | None = None
    throttle_reasons: tuple[str, ...] | None = None  # active clock event reasons except Idle
    mig: bool | None = None
    error: str | None = None                  # "ERR!", "Unknown Error": the GPU itself could not be read
    timestamp: str | None = None
    source: str = ""                          # table | query | csv | csv-apps | nvml
    line: int | None = None                   # 1-based line of this GPU in the snapshot file (evidence)

    @property
    def mem_frac(self) -> float | None:
        if self.mem_used_mib is None or not self.mem_total_mib:
            return None
        return self.mem_used_mib / self.mem_total_mib

    @property
    def label(self) -> str:
        if self.index is not None:
            return f"GPU {self.index}"
        return f"GPU {self.uuid or self.bus_id or '?'}"


class SnapshotError(ValueError):
    """The file is not an nvidia-smi output we can read (one line for the user)."""


_UNKNOWN = {"n/a", "[n/a]", "err!", "[err!]", "[unknown error]", "unknown error", "[not supported]",
            "not supported", "", "-", "[gpu is lost]", "gpu is lost", "[requested functionality has been deprecated]",
            "requested functionality has been deprecated", "[insufficient permissions]", "insufficient permissions"}
_NUM = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)\s*$")


def as_number(text: str | None) -> float | None:
    if text is None:
        return None
    t = text.strip()
    if t.lower() in _UNKNOWN or t.startswith("["):
        return None
    m = _NUM.match(t)
    if not m:
        return None
    v = float(m.group(1))
    unit = m.group(2).lower()
    if unit in ("gib", "gb"):
        v *= 1024
    elif unit in ("kib", "kb"):
        v /= 1024
    return v


def _int(text: str | None) -> int | None:
    v = as_number(text)
    return int(v) if v is not None else None


def _text(text: str | None) -> str | None:
    if text is None:
        return None
    t = text.strip()
    return None if t.lower() in _UNKNOWN else t


def _is_err(text: str | None) -> bool:
    return bool(text) and text.strip().lower() in ("err!", "[err!]", "[unknown error]", "unknown error",
                                                    "[gpu is lost]", "gpu is lost")


# ------------------------------------------------------------------------------------------- sniffing

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
    if rows and all("," in r for r in rows):
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


# ----------------------------------------------------------------------------------------- the table

_TS = re.compile(r"^\s*(?:\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\s*$")
_ROW1 = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_PWR = re.compile(r"(\S+)\s*/\s*(\S+)\s*$")
_MEM = re.compile(r"(\S+?)\s*MiB\s*/\s*(\S+?)\s*MiB|(ERR!|N/A)\s*/\s*(ERR!|N/A)")
_LOST = re.compile(r"Unable to determine the device handle for GPU ?(\d+): ([0-9A-Fa-f:.]+): (.*)$")
_PROC = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(C\+G|C|G|M|M\+C)\s+(.*?)\s+(\S+?)(?:MiB)?\s*$")


def parse_table(text: str) -> list[GpuSample]:
    lines = text.splitlines()
    ts = next((l.strip() for l in lines[:5] if _TS.match(l)), None)
    gpus: list[dict] = []
    procs: list[tuple[int, GpuProcess]] = []
    section = "head"
    cur: dict | None = None
    for lineno, line in enumerate(lines, 1):
        s = line.strip()
        if "Processes:" in s:
            section = "procs"
            continue
        if "MIG devices:" in s:
            section = "mig"
            continue
        if s.startswith("|=") and section == "head":
            section = "gpus"
            continue
        if section == "gpus" and s.startswith("+") and not s.startswith("+-") and not s.startswith("+="):
            continue
        if not s.startswith("|"):
            if section == "gpus" and s and not s.startswith("+"):
                section = "after"
            continue
        cells = [c for c in s.strip("|").split("|")]
        if section == "gpus" and len(cells) >= 3:
            m = _ROW1.match(cells[0])
            if m and ("MiB" not in cells[1]):
                idx = int(m.group(1))
                rest = m.group(2).split()
                mode = rest[-1] if rest and rest[-1] in ("On", "Off", "N/A", "WDDM", "TCC", "ERR!") else None
                name = " ".join(rest[:-1] if mode else rest)
                cur = {"line": lineno, "index": idx, "name": _text(name), "bus_id": _text(cells[1].split()[0]) if cells[1].split() else None,
                       "ecc": cells[2].strip(), "err": _is_err(name) or _is_err(cells[2].strip())}
                gpus.append(cur)
                continue
            if cur is not None and "stats" not in cur and ("MiB" in cells[1] or "ERR!" in cells[1]):
                cur["stats"] = True
                left = cells[0].split()
                mm = _MEM.search(cells[1])
                if mm and mm.group(1) is not None:
                    cur["used"], cur["total"] = as_number(mm.group(1)), as_number(mm.group(2))
                temps = [t for t in left if re.fullmatch(r"\d+C", t)]
                cur["temp"] = as_number(temps[0][:-1]) if temps else None
                perf = [t for t in left if re.fullmatch(r"P\d+", t)]
                cur["perf"] = perf[0] if perf else None
                pm = _PWR.search(cells[0])
                if pm:
                    cur["power"], cur["cap"] = as_number(pm.group(1).rstrip("W")), as_number(pm.group(2).rstrip("W"))
                right = cells[2].split()
                util = right[0] if right else None
                cur["util"] = as_number(util.rstrip("%")) if util and util.endswith("%") else None
                cur["err"] = cur["err"] or any(_is_err(t) for t in left + right[:1])
                continue
            if cur is not None and "stats" in cur and "mig" not in cur:
                v = cells[2].strip()
                cur["mig"] = True if v == "Enabled" else False if v == "Disabled" else None
                continue
        if section == "procs" and len(cells) == 1:
            m = _PROC.match(cells[0])
            if m:
                mem = m.group(7)
                procs.append((int(m.group(1)), GpuProcess(int(m.group(4)), m.group(6).strip() or None,
                                                          as_number(mem.replace("MiB", "")), None, m.group(5))))
    out = []
    for lineno, line in enumerate(lines, 1):
        m = _LOST.search(line)
        if m and not any(g["index"] == int(m.group(1)) for g in gpus):
            out.append(GpuSample(index=int(m.group(1)), bus_id=m.group(2), error=m.group(3).strip() or "Unknown Error",
                                 timestamp=ts, source="table", line=lineno))
    procs_seen = section in ("procs",) or any("Processes:" in l for l in lines)
    for g in gpus:
        ecc = g.get("ecc", "")
        ecc_n = _int(ecc) if ecc and ecc not in ("On", "Off") else None
        ps = tuple(p for i, p in procs if i == g["index"]) if procs_seen else None
        mig = g.get("mig")
        if ecc == "On" and mig is None:
            mig = True
        out.append(GpuSample(
            index=g["index"], name=g.get("name"), bus_id=g.get("bus_id"), mem_used_mib=g.get("used"),
            mem_total_mib=g.get("total"), util_pct=g.get("util"), temp_c=g.get("temp"), power_w=g.get("power"),
            power_cap_w=g.get("cap"), perf_state=g.get("perf"), processes=ps, ecc_volatile_uncorrected=ecc_n,
            mig=mig, error="ERR!" if g.get("err") else None, timestamp=ts, source="table", line=g.get("line")))
    return sorted(out, key=lambda g: g.index if g.index is not None else -1)


# ---------------------------------------------------------------------------------------- -q (query)

_KV = re.compile(r"^(\s*)([^:]+?)\s*:\s?(.*?)\s*$")
_GPU_HDR = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")


def _tree(lines: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """(path, value) pairs of an indented ``key : value`` block; headers (no colon) open a level."""
    out: list[tuple[tuple[str, ...], str]] = []
    stack: list[tuple[int, str]] = []
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _KV.match(line)
        if m and ":" in line:
            key, val = m.group(2).strip(), m.group(3).strip()
            out.append((tuple(k for _, k in stack) + (key,), val))
            if val == "":
                stack.append((indent, key))
        else:
            stack.append((indent, line.strip()))
    return out


def parse_query(text: str) -> list[GpuSample]:
    lines = text.splitlines()
    ts = None
    blocks: list[tuple[str, list[str]]] = []
    starts: list[int] = []
    for lineno, line in enumerate(lines, 1):
        m = _GPU_HDR.match(line)
        if m:
            blocks.append((m.group(1), []))
            starts.append(lineno)
            continue
        if blocks:
            blocks[-1][1].append(line)
        elif line.startswith("Timestamp"):
            mm = _KV.match(line)
            ts = mm.group(3).strip() if mm else None
    out = []
    for i, (bus, body) in enumerate(blocks):
        kv = _tree(body)
        d: dict[tuple[str, ...], str] = {}
        for path, val in kv:
            d.setdefault(path, val)

        def get(*path: str) -> str | None:
            return d.get(path)

        used = as_number(get("FB Memory Usage", "Used"))
        total = as_number(get("FB Memory Usage", "Total"))
        reasons: list[str] | None = None
        for hdr in ("Clocks Event Reasons", "Clocks Throttle Reasons", "Clocks Throttle Reasons (Deprecated)"):
            rs = [(p, v) for p, v in kv if p[:1] == (hdr,) and len(p) >= 2]
            if rs:
                reasons = [p[-1] for p, v in rs if v.strip() == "Active" and p[-1] != "Idle"]
                break
        vol_unc = vol_cor = None
        for p, v in kv:
            if len(p) >= 3 and p[0] == "ECC Errors" and p[1] == "Volatile":
                n = _int(v)
                if n is None:
                    continue
                name = " ".join(p[2:]).lower()
                if "uncorrectable" in name or "double bit" in name:
                    if "total" in name or "uncorrectable" in name:
                        vol_unc = (vol_unc or 0) + n
                elif "correctable" in name or "single bit" in name:
                    vol_cor = (vol_cor or 0) + n
        retired = None
        for key in ("Single Bit ECC", "Double Bit ECC"):
            n = _int(get("Retired Pages", key))
            if n is not None:
                retired = (retired or 0) + n
        pend = get("Retired Pages", "Pending Page Blacklist") or get("Retired Pages", "Pending")
        remap_p = get("Remapped Rows", "Pending")
        remap_f = get("Remapped Rows", "Remapping Failure Occurred")
        procs: list[GpuProcess] | None = None
        proc_val = get("Processes")
        if proc_val is not None or any(p[:1] == ("Processes",) and len(p) >= 2 for p, _ in kv):
            procs = []
            cur: dict = {}
            for p, v in kv:
                if p[:1] != ("Processes",) or len(p) < 2:
                    continue
                if p[-1] == "Process ID":
                    if cur:
                        procs.append(GpuProcess(cur.get("pid"), cur.get("name"), cur.get("mem"), None, cur.get("type")))
                    cur = {"pid": _int(v)}
                elif p[-1] == "Name":
                    cur["name"] = _text(v)
                elif p[-1] == "Used GPU Memory":
                    cur["mem"] = as_number(v)
                elif p[-1] == "Type":
                    cur["type"] = _text(v)
            if cur:
                procs.append(GpuProcess(cur.get("pid"), cur.get("name"), cur.get("mem"), None, cur.get("type")))
        mig_cur = get("MIG Mode", "Current")
        util = get("Utilization", "Gpu") or get("Utilization", "GPU")
        power = get("GPU Power Readings", "Power Draw") or get("Power Readings", "Power Draw") \
            or get("GPU Power Readings", "Instantaneous Power Draw") or get("GPU Power Readings", "Average Power Draw")
        cap = get("GPU Power Readings", "Current Power Limit") or get("Power Readings", "Power Limit") \
            or get("Power Readings", "Current Power Limit")
        minor = _int(get("Minor Number"))
        section_only = used is None and util is None and get("Product Name") is None
        out.append(GpuSample(
            index=minor if minor is not None else i, name=_text(get("Product Name")), uuid=_text(get("GPU UUID")),
            bus_id=bus, mem_used_mib=used, mem_total_mib=total, util_pct=as_number(util),
            mem_util_pct=as_number(get("Utilization", "Memory")), temp_c=as_number(get("Temperature", "GPU Current Temp")),
            power_w=as_number(power), power_cap_w=as_number(cap), perf_state=_text(get("Performance State")),
            processes=None if section_only else (tuple(procs) if procs is not None else None),
            ecc_volatile_uncorrected=vol_unc, ecc_volatile_corrected=vol_cor, retired_pages=retired,
            retired_pending=_yes(pend), remapped_pending=_yes(remap_p), remap_failed=_yes(remap_f),
            throttle_reasons=tuple(reasons) if reasons is not None else None,
            mig=True if mig_cur == "Enabled" else False if mig_cur == "Disabled" else None,
            timestamp=ts, source="query", line=starts[i]))
    return out


def _yes(v: str | None) -> bool | None:
    if v is None:
        return None
    t = v.strip().lower()
    return True if t == "yes" else False if t == "no" else None


# -------------------------------------------------------------------------------------------- CSV

_HEADER_MAP = {
    "index": "index", "name": "name", "gpu_name": "name", "uuid": "uuid", "gpu_uuid": "uuid",
    "pci.bus_id": "bus_id", "gpu_bus_id": "bus_id", "memory.used": "mem_used_mib", "memory.total": "mem_total_mib",
    "utilization.gpu": "util_pct", "utilization.memory": "mem_util_pct", "temperature.gpu": "temp_c",
    "power.draw": "power_w", "power.draw.instant": "power_w", "power.limit": "power_cap_w",
    "enforced.power.limit": "power_cap_w", "power.max_limit": None, "pstate": "perf_state",
    "ecc.errors.uncorrected.volatile.total": "ecc_volatile_uncorrected",
    "ecc.errors.corrected.volatile.total": "ecc_volatile_corrected",
    "retired_pages.single_bit_ecc.count": "_ret_sbe", "retired_pages.double_bit.count": "_ret_dbe",
    "retired_pages.pending": "retired_pending", "mig.mode.current": "mig",
    "clocks_event_reasons.active": "_reasons", "clocks_throttle_reasons.active": "_reasons",
    "clocks_event_reasons.hw_thermal_slowdown": "_r:HW Thermal Slowdown",
    "clocks_throttle_reasons.hw_thermal_slowdown": "_r:HW Thermal Slowdown",
    "clocks_event_reasons.sw_thermal_slowdown": "_r:SW Thermal Slowdown",
    "clocks_throttle_reasons.sw_thermal_slowdown": "_r:SW Thermal Slowdown",
    "clocks_event_reasons.hw_slowdown": "_r:HW Slowdown", "clocks_throttle_reasons.hw_slowdown": "_r:HW Slowdown",
    "clocks_event_reasons.sw_power_cap": "_r:SW Power Cap", "clocks_throttle_reasons.sw_power_cap": "_r:SW Power Cap",
    "clocks_event_reasons.hw_power_brake_slowdown": "_r:HW Power Brake Slowdown",
    "clocks_throttle_reasons.hw_power_brake_slowdown": "_r:HW Power Brake Slowdown",
    "timestamp": "timestamp", "pid": "pid", "process_name": "pname", "used_gpu_memory": "pmem", "used_memory": "pmem",
}
# nvmlClocksEventReasons bits (nvml.h): the ones that mean the GPU was slowed down
_REASON_BITS = {0x4: "SW Power Cap", 0x8: "HW Slowdown", 0x20: "SW Thermal Slowdown", 0x40: "HW Thermal Slowdown",
                0x80: "HW Power Brake Slowdown", 0x2: "Applications Clocks Setting", 0x10: "Sync Boost",
                0x100: "Display Clock Setting"}


def _rows(text: str) -> list[list[str]]:
    lines = [l for l in text.splitlines() if l.strip()]
    return [[c.strip() for c in r] for r in csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)]


def _header_keys(row: list[str]) -> list[str | None] | None:
    keys = []
    known = 0
    for c in row:
        name = re.sub(r"\s*\[[^\]]*\]\s*$", "", c).strip().lower()
        if name in _HEADER_MAP:
            known += 1
        keys.append(_HEADER_MAP.get(name) if name in _HEADER_MAP else None)
    looks_header = known > 0 and not any(re.match(r"^\d+(\.\d+)?( \w+)?$", c) for c in row if c)
    return keys if looks_header else None


def _reasons_of(vals: dict[str, str]) -> tuple[str, ...] | None:
    out: list[str] = []
    seen = False
    hexv = vals.get("_reasons")
    if hexv and hexv.lower().startswith("0x"):
        seen = True
        out += list(_bits(int(hexv, 16)))
    for k, v in vals.items():
        if k.startswith("_r:") and v and v.lower() in ("active", "not active"):
            seen = True
            if v.lower() == "active" and k[3:] not in out:
                out.append(k[3:])
    return tuple(out) if seen else None


def _sample_from(vals: dict[str, str], source: str) -> GpuSample:
    ret = None
    for k in ("_ret_sbe", "_ret_dbe"):
        n = _int(vals.get(k))
        if n is not None:
            ret = (ret or 0) + n
    mig = vals.get("mig")
    name = vals.get("name")
    return GpuSample(
        index=_int(vals.get("index")), name=_text(name), uuid=_text(vals.get("uuid")), bus_id=_text(vals.get("bus_id")),
        mem_used_mib=as_number(vals.get("mem_used_mib")), mem_total_mib=as_number(vals.get("mem_total_mib")),
        util_pct=as_number(vals.get("util_pct")), mem_util_pct=as_number(vals.get("mem_util_pct")),
        temp_c=as_number(vals.get("temp_c")), power_w=as_number(vals.get("power_w")), power_cap_w=as_number(vals.get("power_cap_w")),
        perf_state=_text(vals.get("perf_state")),
        ecc_volatile_uncorrected=_int(vals.get("ecc_volatile_uncorrected")),
        ecc_volatile_corrected=_int(vals.get("ecc_volatile_corrected")), retired_pages=ret,
        retired_pending=_yes(vals.get("retired_pending")), throttle_reasons=_reasons_of(vals),
        mig=True if mig == "Enabled" else False if mig == "Disabled" else None,
        error="ERR!" if any(_is_err(v) for v in vals.values()) else None,
        timestamp=_text(vals.get("timestamp")), source=source)


def _guess_row(row: list[str]) -> dict[str, str]:
    """A header-less row: keep only values that say what they are."""
    vals: dict[str, str] = {}
    mib = [c for c in row if re.fullmatch(r"\d+(\.\d+)? MiB", c)]
    pct = [c for c in row if re.fullmatch(r"\d+(\.\d+)? %", c)]
    for i, c in enumerate(row):
        if i == 0 and re.fullmatch(r"\d{1,3}", c):
            vals["index"] = c
        elif re.fullmatch(r"GPU-[0-9a-fA-F-]{20,}", c):
            vals["uuid"] = c
        elif re.fullmatch(r"[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", c):
            vals["bus_id"] = c
        elif c.startswith(("NVIDIA ", "Tesla ", "Quadro ", "GeForce ")) and "name" not in vals:
            vals["name"] = c
        elif re.fullmatch(r"0x[0-9a-fA-F]{16}", c):
            vals["_reasons"] = c  # clocks_event_reasons.active is the only 64-bit hex field nvidia-smi prints
    if len(pct) == 1:
        vals["util_pct"] = pct[0]
    if len(mib) == 2:
        a, b = (as_number(x) for x in mib)
        vals["_mib_pair"] = f"{a},{b}"
    elif len(mib) == 1:
        vals["_mib_one"] = mib[0]
    return vals


def parse_csv_gpu(text: str) -> list[GpuSample]:
    rows = _rows(text)
    if not rows:
        return []
    linenos = [i for i, l in enumerate(text.splitlines(), 1) if l.strip()]
    keys = _header_keys(rows[0])
    out: list[GpuSample] = []
    if keys is not None:
        for i, row in enumerate(rows[1:], 1):
            vals = {k: v for k, v in zip(keys, row) if k}
            out.append(replace(_sample_from(vals, "csv"), line=linenos[i] if i < len(linenos) else None))
        return out
    guessed = [_guess_row(r) for r in rows]
    # two MiB columns without a header: the one constant over all rows (and the larger) is the total
    pairs = [tuple(float(x) for x in g["_mib_pair"].split(",")) for g in guessed if "_mib_pair" in g]
    total_col = None
    if pairs and len(pairs) == len(guessed):
        const0 = len({p[0] for p in pairs}) == 1 and all(p[0] >= p[1] for p in pairs)
        const1 = len({p[1] for p in pairs}) == 1 and all(p[1] >= p[0] for p in pairs)
        total_col = 0 if const0 and not const1 else 1 if const1 and not const0 else None
        if total_col is None and all(p[0] >= p[1] for p in pairs) and len(pairs) > 1 and const0:
            total_col = 0
    for i, g in enumerate(guessed):
        if "_mib_pair" in g and total_col is not None:
            a, b = g["_mib_pair"].split(",")
            g["mem_total_mib"], g["mem_used_mib"] = (a, b) if total_col == 0 else (b, a)
        out.append(replace(_sample_from(g, "csv"), line=linenos[i] if i < len(linenos) else None))
    return out


def parse_csv_apps(text: str) -> list[GpuSample]:
    """Processes per GPU; one GpuSample per GPU (by UUID or bus id) holding only its processes."""
    rows = _rows(text)
    if not rows:
        return []
    keys = _header_keys(rows[0])
    body = rows[1:] if keys is not None else rows
    by_gpu: dict[str, dict] = {}
    for row in body:
        if keys is not None:
            vals = {k: v for k, v in zip(keys, row) if k}
        else:
            vals = {}
            nums = [i for i, c in enumerate(row) if re.fullmatch(r"\d+( MiB)?", c)]
            for i, c in enumerate(row):
                if re.fullmatch(r"GPU-[0-9a-fA-F-]{20,}", c):
                    vals["uuid"] = c
                elif re.fullmatch(r"[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", c):
                    vals["bus_id"] = c
                elif i not in nums and "pname" not in vals and not c.startswith("NVIDIA "):
                    vals["pname"] = c
            if nums:
                vals["pid"] = row[nums[0]]
            if len(nums) >= 2:
                vals["pmem"] = row[nums[-1]]
        gkey = vals.get("uuid") or vals.get("bus_id") or "?"
        g = by_gpu.setdefault(gkey, {"uuid": _text(vals.get("uuid")), "bus_id": _text(vals.get("bus_id")),
                                     "name": _text(vals.get("name")), "ts": _text(vals.get("timestamp")), "procs": []})
        g["procs"].append(GpuProcess(_int(vals.get("pid")), _text(vals.get("pname")), as_number(vals.get("pmem")),
                                     _text(vals.get("uuid"))))
    return [GpuSample(name=g["name"], uuid=g["uuid"], bus_id=g["bus_id"], processes=tuple(g["procs"]),
                      timestamp=g["ts"], source="csv-apps") for g in by_gpu.values()]


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


def _unsupported(v) -> bool:
    return isinstance(v, str) and v.lower().startswith(("unsupported", "error", "n/a"))


def parse_nvml_json(text: str, where: str = "<json>") -> list[GpuSample]:
    """The raw pynvml dump of tools/nvml_dump.py: {"driver", "gpus": [{index, name, uuid, memory{used,total} (bytes),
    utilization{gpu,memory}, temperature, power_mw, power_limit_mw, throttle_reasons (bits), ecc_uncorrected_volatile,
    retired_pages_pending, processes[{pid, used}]}]}; "unsupported: ..." strings become None."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        raise SnapshotError(f"{where}: broken JSON; save the NVML dump again") from None
    out = []
    for g in obj.get("gpus", []) if isinstance(obj, dict) else []:
        def val(*path):
            v = g
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            return None if v is None or _unsupported(v) else v
        mem_u, mem_t = val("memory", "used"), val("memory", "total")
        bits = val("throttle_reasons")
        procs = val("processes")
        pend = val("retired_pages_pending")
        out.append(GpuSample(
            index=val("index"), name=val("name"), uuid=val("uuid"),
            mem_used_mib=mem_u / 1048576 if mem_u is not None else None,
            mem_total_mib=mem_t / 1048576 if mem_t is not None else None,
            util_pct=val("utilization", "gpu"), mem_util_pct=val("utilization", "memory"), temp_c=val("temperature"),
            power_w=val("power_mw") / 1000 if val("power_mw") is not None else None,
            power_cap_w=val("power_limit_mw") / 1000 if val("power_limit_mw") is not None else None,
            processes=tuple(GpuProcess(p.get("pid"), p.get("name"), p["used"] / 1048576 if isinstance(
                p.get("used"), (int, float)) else None) for p in procs) if isinstance(procs, list) else None,
            ecc_volatile_uncorrected=val("ecc_uncorrected_volatile"),
            retired_pending=bool(pend) if pend is not None else None,
            throttle_reasons=_bits(bits) if isinstance(bits, int) else None, source="nvml"))
    return out


def _bits(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in _REASON_BITS.items() if bits & bit and name not in (
        "Applications Clocks Setting", "Display Clock Setting", "Sync Boost"))


_NVML_WARNED = [False]


def _say_once(msg: str) -> None:
    if not _NVML_WARNED[0]:
        _NVML_WARNED[0] = True
        print(f"grpo-doctor: {msg}", file=sys.stderr)


def sample_nvml(quiet: bool = False) -> list[GpuSample] | None:
    """Live GPU state through NVML (pynvml, imported here only). None when there is no driver/NVML (said once on
    stderr unless quiet); a query the GPU does not support leaves its field None, never 0."""
    try:
        import warnings  # noqa: PLC0415
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the "pynvml package is deprecated" FutureWarning of the pynvml shim
            import pynvml  # noqa: PLC0415 - lazy on purpose: start-up time
    except Exception:  # noqa: BLE001
        if not quiet:
            _say_once("pynvml is not installed; no live GPU data (pip install nvidia-ml-py)")
        return None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError_LibraryNotFound / DriverNotLoaded / ...
        if not quiet:
            _say_once(f"no NVIDIA driver/NVML here ({type(e).__name__}); going on without live GPU data")
        return None
    try:
        n = pynvml.nvmlDeviceGetCount()
        return [_nvml_one(pynvml, i) for i in range(n)]
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported, NoPermission, GpuIsLost, ...
        return None


def _s(v) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvml_one(nv, i: int) -> GpuSample:
    h = _try(nv.nvmlDeviceGetHandleByIndex, i)
    if h is None:
        return GpuSample(index=i, error="Unknown Error", source="nvml")
    mem = _try(nv.nvmlDeviceGetMemoryInfo, h)
    util = _try(nv.nvmlDeviceGetUtilizationRates, h)
    temp = _try(nv.nvmlDeviceGetTemperature, h, 0)  # NVML_TEMPERATURE_GPU
    power = _try(nv.nvmlDeviceGetPowerUsage, h)
    cap = _try(nv.nvmlDeviceGetEnforcedPowerLimit, h)
    pstate = _try(nv.nvmlDeviceGetPerformanceState, h)
    bus = _try(nv.nvmlDeviceGetPciInfo, h)
    reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    bits = _try(reasons_fn, h) if reasons_fn else None
    unc = _try(nv.nvmlDeviceGetTotalEccErrors, h, 1, 0)  # UNCORRECTED, VOLATILE
    cor = _try(nv.nvmlDeviceGetTotalEccErrors, h, 0, 0)
    retired = None
    for cause in (0, 1):  # MULTIPLE_SINGLE_BIT_ECC_ERRORS, DOUBLE_BIT_ECC_ERROR
        pages = _try(nv.nvmlDeviceGetRetiredPages, h, cause)
        if pages is not None:
            retired = (retired or 0) + len(pages)
    pend = _try(nv.nvmlDeviceGetRetiredPagesPendingStatus, h)
    remap = _try(nv.nvmlDeviceGetRemappedRows, h)  # (corr, unc, pending, failure)
    mig = _try(nv.nvmlDeviceGetMigMode, h)
    procs_raw = _try(nv.nvmlDeviceGetComputeRunningProcesses, h)
    procs = None
    if procs_raw is not None:
        procs = tuple(GpuProcess(int(p.pid), None,
                                 (p.usedGpuMemory / 1048576) if getattr(p, "usedGpuMemory", None) else None)
                      for p in procs_raw)
    return GpuSample(
        index=i, name=_s(_try(nv.nvmlDeviceGetName, h)), uuid=_s(_try(nv.nvmlDeviceGetUUID, h)),
        bus_id=_s(getattr(bus, "busId", None)) if bus is not None else None,
        mem_used_mib=mem.used / 1048576 if mem is not None else None,
        mem_total_mib=mem.total / 1048576 if mem is not None else None,
        util_pct=float(util.gpu) if util is not None else None,
        mem_util_pct=float(util.memory) if util is not None else None,
        temp_c=float(temp) if temp is not None else None,
        power_w=power / 1000 if power is not None else None, power_cap_w=cap / 1000 if cap is not None else None,
        perf_state=f"P{pstate}" if pstate is not None else None, processes=procs,
        ecc_volatile_uncorrected=int(unc) if unc is not None else None,
        ecc_volatile_corrected=int(cor) if cor is not None else None, retired_pages=retired,
        retired_pending=bool(pend) if pend is not None else None,
        remapped_pending=bool(remap[2]) if remap is not None else None,
        remap_failed=bool(remap[3]) if remap is not None else None,
        throttle_reasons=_bits(bits) if bits is not None else None,
        mig=bool(mig[0]) if mig is not None else None, source="nvml")


__all__ = ["GpuSample", "GpuProcess", "SnapshotError", "parse_snapshot", "parse_text", "sample_nvml", "merge", "sniff"]
