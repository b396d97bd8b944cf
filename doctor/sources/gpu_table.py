"""The default ``nvidia-smi`` table (79/89/91-column layouts of drivers 450-610, Windows WDDM/TCC, MIG), with
its Processes box."""
from __future__ import annotations

import re

from .. import lazyre
from .gpu_model import GpuProcess, GpuSample, as_int, as_number, as_text, is_err

_TS = lazyre.compile(r"^\s*(?:\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\s*$")
_ROW1 = lazyre.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_PWR = lazyre.compile(r"(\S+)\s*/\s*(\S+)\s*$")
_MEM = lazyre.compile(r"(\S+?)\s*MiB\s*/\s*(\S+?)\s*MiB|(ERR!|N/A)\s*/\s*(ERR!|N/A)")
_LOST = lazyre.compile(r"Unable to determine the device handle for GPU ?(\d+): ([0-9A-Fa-f:.]+): (.*)$")
_PROC = lazyre.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(C\+G|C|G|M|M\+C)\s+(.*?)\s+(\S+?)(?:MiB)?\s*$")


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
                cur = {"line": lineno, "index": idx, "name": as_text(name), "bus_id": as_text(cells[1].split()[0]) if cells[1].split() else None,
                       "ecc": cells[2].strip(), "err": is_err(name) or is_err(cells[2].strip())}
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
                cur["err"] = cur["err"] or any(is_err(t) for t in left + right[:1])
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
        ecc_n = as_int(ecc) if ecc and ecc not in ("On", "Off") else None
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
