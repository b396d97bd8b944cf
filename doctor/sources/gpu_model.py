"""What a GPU looked like at one moment (``GpuSample``), and the readers of nvidia-smi's cell values that every
snapshot format shares: a value nvidia-smi could not read (``N/A``, ``ERR!``, ``[Not Supported]``...) is None,
never 0."""
from __future__ import annotations

from dataclasses import dataclass

from .. import lazyre


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


UNKNOWN = {"n/a", "[n/a]", "err!", "[err!]", "[unknown error]", "unknown error", "[not supported]",
            "not supported", "", "-", "[gpu is lost]", "gpu is lost", "[requested functionality has been deprecated]",
            "requested functionality has been deprecated", "[insufficient permissions]", "insufficient permissions"}
_NUM = lazyre.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)\s*$")


def as_number(text: str | None) -> float | None:
    if text is None:
        return None
    t = text.strip()
    if t.lower() in UNKNOWN or t.startswith("["):
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


def as_int(text: str | None) -> int | None:
    v = as_number(text)
    return int(v) if v is not None else None


def as_text(text: str | None) -> str | None:
    if text is None:
        return None
    t = text.strip()
    return None if t.lower() in UNKNOWN else t


def is_err(text: str | None) -> bool:
    return bool(text) and text.strip().lower() in ("err!", "[err!]", "[unknown error]", "unknown error",
                                                    "[gpu is lost]", "gpu is lost")


# ------------------------------------------------------------------------------------------- sniffing

def yes_no(v: str | None) -> bool | None:
    if v is None:
        return None
    t = v.strip().lower()
    return True if t == "yes" else False if t == "no" else None



# nvmlClocksEventReasons bits (nvml.h): the ones that mean the GPU was slowed down
REASON_BITS = {0x4: "SW Power Cap", 0x8: "HW Slowdown", 0x20: "SW Thermal Slowdown", 0x40: "HW Thermal Slowdown",
                0x80: "HW Power Brake Slowdown", 0x2: "Applications Clocks Setting", 0x10: "Sync Boost",
                0x100: "Display Clock Setting"}


def reason_names(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in REASON_BITS.items() if bits & bit and name not in (
        "Applications Clocks Setting", "Display Clock Setting", "Sync Boost"))
