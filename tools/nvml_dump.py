"""Print what pynvml reports for every GPU as JSON (raw numbers; "unsupported" where a query fails)."""
import json

import pynvml as N


def q(fn, *a):
    try:
        v = fn(*a)
        return v.decode() if isinstance(v, bytes) else v
    except (N.NVMLError, TypeError) as e:  # TypeError: a binding without version= for the v2 structure
        return f"unsupported: {e}"


N.nvmlInit()
out = {"driver": q(N.nvmlSystemGetDriverVersion), "gpus": []}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    mem = q(N.nvmlDeviceGetMemoryInfo, h)
    # v2: "used" without the driver's reserved memory (nvidia-smi's Used), and the reserved part on its own
    mem2 = q(lambda: N.nvmlDeviceGetMemoryInfo(h, version=N.nvmlMemory_v2)) if hasattr(N, "nvmlMemory_v2") else "unsupported"
    util = q(N.nvmlDeviceGetUtilizationRates, h)
    procs = q(N.nvmlDeviceGetComputeRunningProcesses, h)
    out["gpus"].append({
        "index": i, "name": q(N.nvmlDeviceGetName, h), "uuid": q(N.nvmlDeviceGetUUID, h),
        "memory": mem if isinstance(mem, str) else {"used": mem.used, "total": mem.total},
        "memory_v2": mem2 if isinstance(mem2, str) else {"used": mem2.used, "reserved": mem2.reserved,
                                                         "total": mem2.total},
        "utilization": util if isinstance(util, str) else {"gpu": util.gpu, "memory": util.memory},
        "temperature": q(N.nvmlDeviceGetTemperature, h, N.NVML_TEMPERATURE_GPU),
        "power_mw": q(N.nvmlDeviceGetPowerUsage, h),
        "power_limit_mw": q(N.nvmlDeviceGetEnforcedPowerLimit, h),
        "throttle_reasons": q(N.nvmlDeviceGetCurrentClocksThrottleReasons, h),
        "ecc_uncorrected_volatile": q(N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                      N.NVML_VOLATILE_ECC),
        "retired_pages_pending": q(N.nvmlDeviceGetRetiredPagesPendingStatus, h),
        "processes": procs if isinstance(procs, str) else [{"pid": p.pid, "used": p.usedGpuMemory} for p in procs],
    })
print(json.dumps(out, indent=1, default=str))
