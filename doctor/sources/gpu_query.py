"""``nvidia-smi -q`` (also ``-q -d ECC`` / ``-d PERFORMANCE`` sections): memory, utilisation, temperature, power,
clock event (throttle) reasons, volatile ECC counts, retired pages, remapped rows, processes."""
from __future__ import annotations

from .. import lazyre
from .gpu_model import GpuProcess, GpuSample, as_int, as_number, as_text, yes_no

_KV = lazyre.compile(r"^(\s*)([^:]+?)\s*:\s?(.*?)\s*$")
_GPU_HDR = lazyre.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")


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
                n = as_int(v)
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
            n = as_int(get("Retired Pages", key))
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
                    cur = {"pid": as_int(v)}
                elif p[-1] == "Name":
                    cur["name"] = as_text(v)
                elif p[-1] == "Used GPU Memory":
                    cur["mem"] = as_number(v)
                elif p[-1] == "Type":
                    cur["type"] = as_text(v)
            if cur:
                procs.append(GpuProcess(cur.get("pid"), cur.get("name"), cur.get("mem"), None, cur.get("type")))
        mig_cur = get("MIG Mode", "Current")
        util = get("Utilization", "Gpu") or get("Utilization", "GPU")
        power = get("GPU Power Readings", "Power Draw") or get("Power Readings", "Power Draw") \
            or get("GPU Power Readings", "Instantaneous Power Draw") or get("GPU Power Readings", "Average Power Draw")
        cap = get("GPU Power Readings", "Current Power Limit") or get("Power Readings", "Power Limit") \
            or get("Power Readings", "Current Power Limit")
        minor = as_int(get("Minor Number"))
        section_only = used is None and util is None and get("Product Name") is None
        out.append(GpuSample(
            index=minor if minor is not None else i, name=as_text(get("Product Name")), uuid=as_text(get("GPU UUID")),
            bus_id=bus, mem_used_mib=used, mem_total_mib=total, util_pct=as_number(util),
            mem_util_pct=as_number(get("Utilization", "Memory")), temp_c=as_number(get("Temperature", "GPU Current Temp")),
            power_w=as_number(power), power_cap_w=as_number(cap), perf_state=as_text(get("Performance State")),
            processes=None if section_only else (tuple(procs) if procs is not None else None),
            ecc_volatile_uncorrected=vol_unc, ecc_volatile_corrected=vol_cor, retired_pages=retired,
            retired_pending=yes_no(pend), remapped_pending=yes_no(remap_p), remap_failed=yes_no(remap_f),
            throttle_reasons=tuple(reasons) if reasons is not None else None,
            mig=True if mig_cur == "Enabled" else False if mig_cur == "Disabled" else None,
            timestamp=ts, source="query", line=starts[i]))
    return out
