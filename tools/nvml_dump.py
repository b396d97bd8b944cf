"""Print what pynvml reports for every GPU as JSON (raw numbers; "unsupported" where a query fails)."""
import json

import pynvml as N


def q(fn, *a):
    try:
        v = fn(*a)
        return v.decode() if isinstance(v, bytes) else v
    except N.NVMLError as e:
        return f"unsupported: {e}"


N.nvmlInit()
out = {"driver": q(N.nvmlSystemGetDriverVersion), "gpus": []}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    mem = q(N.nvmlDeviceGetMemoryInfo, h)
    util = q(N.nvmlDeviceGetUtilizationRates, h)
    procs = q(N.nvmlDeviceGetComputeRunningProcesses, h)
    out["gpus"].append({
        "index": i, "name": q(N.nvmlDeviceGetName, h), "uuid": q(N.nvmlDeviceGetUUID, h),
        "memory": mem if isinstance(mem, str) else {"used": mem.used, "total": mem.total},
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
