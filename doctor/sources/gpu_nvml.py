"""GPU state through NVML: the raw pynvml dump of tools/nvml_dump.py, and live samples (pynvml imported lazily)."""
from __future__ import annotations

import json
import sys

from .gpu_model import GpuProcess, GpuSample, SnapshotError, reason_names


def _unsupported(v) -> bool:
    return isinstance(v, str) and v.lower().startswith(("unsupported", "error", "n/a"))


def parse_nvml_json(text: str, where: str = "<json>") -> list[GpuSample]:
    """The raw pynvml dump of tools/nvml_dump.py: {"driver", "gpus": [{index, name, uuid, memory{used,total} (bytes),
    memory_v2{used,reserved,total} (bytes; preferred when there),
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
        # memory_v2 (dumps from this release on): used without the driver's reserved memory, as nvidia-smi shows it
        mem_u, mem_t = val("memory_v2", "used"), val("memory_v2", "total")
        if mem_u is None or mem_t is None:
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
            throttle_reasons=reason_names(bits) if isinstance(bits, int) else None, source="nvml"))
    return out


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


def memory_info(nv, h):
    """The device's memory as nvidia-smi reports it: NVML's v2 structure, whose ``used`` leaves out the memory the
    driver reserves (nvidia-smi -q shows it apart as "Reserved"; on an idle H200 the v1 ``used`` is 616 MiB where
    nvidia-smi says 0); the v1 structure on drivers and bindings without v2. None when NVML refuses both."""
    v2 = getattr(nv, "nvmlMemory_v2", None)
    if v2 is not None:
        try:
            return nv.nvmlDeviceGetMemoryInfo(h, version=v2)
        except Exception:  # noqa: BLE001 - NVMLError_FunctionNotFound (old driver), a binding without version=
            pass
    return _try(nv.nvmlDeviceGetMemoryInfo, h)


def _nvml_one(nv, i: int) -> GpuSample:
    h = _try(nv.nvmlDeviceGetHandleByIndex, i)
    if h is None:
        return GpuSample(index=i, error="Unknown Error", source="nvml")
    mem = memory_info(nv, h)
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
        throttle_reasons=reason_names(bits) if bits is not None else None,
        mig=bool(mig[0]) if mig is not None else None, source="nvml")
