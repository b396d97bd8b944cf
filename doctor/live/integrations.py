"""Adapters to the parts of grpo-doctor that `watch` calls but that live in other modules: preflight,
live GPU samples (NVML) and the checkpoint rules.

Each adapter imports lazily and degrades gracefully: when the module is not there (an older build) it
says so once on stderr and the watch goes on without it. Tests replace these functions (monkeypatch)
to inject fakes; nothing else in doctor/live imports those modules directly.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks._units import GIB
from ..live.say import say
from ..signals import Gpu

_warned: set[str] = set()


def _once(key: str, text: str) -> None:
    if key not in _warned:
        _warned.add(key)
        say(text)


def preflight(argv: list[str], env: Mapping[str, str] | None = None, gpu_mem_gib: float | None = None) -> Any | None:
    """The preflight Report of the command, or None when preflight is not available."""
    try:
        from ..preflight import preflight_command  # issue 5
    except ImportError:
        _once("preflight", "preflight not available in this build: launching without it")
        return None
    try:
        return preflight_command(list(argv), env, gpu_mem_gib=gpu_mem_gib)
    except ValueError as e:  # CommandError: not a `swift rlhf` command, an unreadable config file, ...
        why = str(e).removeprefix('preflight: ').split('; use:')[0]
        first = why.strip().splitlines()[0] if why.strip() else "not a swift rlhf command"
        # one line: a multi-line `-c` script quoted in the reason must not fill the terminal
        more = len(first) > 200 or "\n" in why.strip()
        say(f"preflight skipped: {first[:200]}{'...' if more else ''}")
        return None


# preflight rules whose error is an estimate (the memory planner), not a certain failure: they warn, never block
ESTIMATES = frozenset({"GD470"})


def is_estimate(finding: Any) -> bool:
    return getattr(finding, "rule_id", None) in ESTIMATES


def _nvml_fallback() -> list[Gpu] | None:
    import warnings

    from ..sources.gpu_nvml import memory_info
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "pynvml is deprecated, install nvidia-ml-py": same module name
            import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver / no GPU: no samples
        return None
    out = []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = memory_info(pynvml, h)
            if mem is None:
                continue
            try:
                util = float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
            except Exception:  # noqa: BLE001
                util = None
            out.append(Gpu(i, util, int(mem.used), int(mem.total)))
    except Exception:  # noqa: BLE001
        return None
    return out


def as_number(obj: Any, *names: str) -> Any:
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if v is not None:
            return v
    return None


def _to_gpu(s: Any, i: int) -> Gpu:
    """A sample of doctor.sources.gpu as our Gpu record (bytes; MiB/GiB fields converted)."""
    idx = as_number(s, "index", "gpu", "id")
    util = as_number(s, "util", "utilization", "util_pct", "gpu_util")
    used = as_number(s, "mem_used", "memory_used", "used_bytes")
    total = as_number(s, "mem_total", "memory_total", "total_bytes")
    if used is None:
        mib = as_number(s, "mem_used_mib", "memory_used_mib", "used_mib")
        gb = as_number(s, "mem_used_gib", "memory_used_gib")
        used = mib * 1024 * 1024 if mib is not None else gb * GIB if gb is not None else 0
    if total is None:
        mib = as_number(s, "mem_total_mib", "memory_total_mib", "total_mib")
        gb = as_number(s, "mem_total_gib", "memory_total_gib")
        total = mib * 1024 * 1024 if mib is not None else gb * GIB if gb is not None else 0
    procs = tuple((int(p.pid), int(p.mem_mib * 1024 * 1024)) for p in (getattr(s, "processes", None) or ())
                  if getattr(p, "pid", None) is not None and getattr(p, "mem_mib", None) is not None)
    return Gpu(int(idx) if idx is not None else i, float(util) if util is not None else None, int(used), int(total),
               procs)


def gpu_samples() -> list[Gpu] | None:
    """One sample per visible GPU, or None when there is no NVIDIA driver."""
    try:
        from ..sources.gpu import sample_nvml  # issue 5
    except ImportError:
        return _nvml_fallback()
    try:
        got = sample_nvml(quiet=True)
    except TypeError:  # an older signature without quiet
        got = sample_nvml()
    if got is None:
        _once("gpu", "no live GPU data (no NVIDIA driver / NVML, or pynvml missing): GPU watchdogs are off")
        return None
    return [_to_gpu(s, i) for i, s in enumerate(got)]


def check_checkpoint(dirs: list[str], run: Any = None, facts: dict | None = None) -> list[Any] | None:
    """Findings of the checkpoint rules on freshly saved checkpoint folders, or None when not available; ``facts``:
    what watch knows of the run beside the folders (RunState.facts)."""
    try:
        from ..ckpt import check_checkpoint_dirs  # issue 4
    except ImportError:
        _once("ckpt", "checkpoint rules not available in this build: new checkpoints are not checked")
        return None
    # the library's parser only for a weights file our own checks find broken: it imports numpy (~0.2 s of CPU)
    return list(check_checkpoint_dirs(dirs, run=run, facts=facts, library=False))


__all__ = ["preflight", "gpu_samples", "check_checkpoint", "is_estimate"]
