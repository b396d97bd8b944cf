"""``nvidia-smi --query-gpu=... --format=csv`` with or without ``noheader`` / ``nounits`` (without a header only
self-describing values are used), and ``--query-compute-apps=... --format=csv`` (processes per GPU UUID)."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import replace

from .gpu_model import GpuProcess, GpuSample, as_int, as_number, as_text, is_err, reason_names, yes_no

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
        out += list(reason_names(int(hexv, 16)))
    for k, v in vals.items():
        if k.startswith("_r:") and v and v.lower() in ("active", "not active"):
            seen = True
            if v.lower() == "active" and k[3:] not in out:
                out.append(k[3:])
    return tuple(out) if seen else None


def _sample_from(vals: dict[str, str], source: str) -> GpuSample:
    ret = None
    for k in ("_ret_sbe", "_ret_dbe"):
        n = as_int(vals.get(k))
        if n is not None:
            ret = (ret or 0) + n
    mig = vals.get("mig")
    name = vals.get("name")
    return GpuSample(
        index=as_int(vals.get("index")), name=as_text(name), uuid=as_text(vals.get("uuid")), bus_id=as_text(vals.get("bus_id")),
        mem_used_mib=as_number(vals.get("mem_used_mib")), mem_total_mib=as_number(vals.get("mem_total_mib")),
        util_pct=as_number(vals.get("util_pct")), mem_util_pct=as_number(vals.get("mem_util_pct")),
        temp_c=as_number(vals.get("temp_c")), power_w=as_number(vals.get("power_w")), power_cap_w=as_number(vals.get("power_cap_w")),
        perf_state=as_text(vals.get("perf_state")),
        ecc_volatile_uncorrected=as_int(vals.get("ecc_volatile_uncorrected")),
        ecc_volatile_corrected=as_int(vals.get("ecc_volatile_corrected")), retired_pages=ret,
        retired_pending=yes_no(vals.get("retired_pending")), throttle_reasons=_reasons_of(vals),
        mig=True if mig == "Enabled" else False if mig == "Disabled" else None,
        error="ERR!" if any(is_err(v) for v in vals.values()) else None,
        timestamp=as_text(vals.get("timestamp")), source=source)


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
        g = by_gpu.setdefault(gkey, {"uuid": as_text(vals.get("uuid")), "bus_id": as_text(vals.get("bus_id")),
                                     "name": as_text(vals.get("name")), "ts": as_text(vals.get("timestamp")), "procs": []})
        g["procs"].append(GpuProcess(as_int(vals.get("pid")), as_text(vals.get("pname")), as_number(vals.get("pmem")),
                                     as_text(vals.get("uuid"))))
    return [GpuSample(name=g["name"], uuid=g["uuid"], bus_id=g["bus_id"], processes=tuple(g["procs"]),
                      timestamp=g["ts"], source="csv-apps") for g in by_gpu.values()]
