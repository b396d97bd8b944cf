"""Rules on GPU snapshots (nvidia-smi files in a run dir, --gpu-snapshot, NVML samples): GD501-GD506.

A snapshot is one moment: the messages say what it shows and what a second snapshot would settle.
GPUs the run uses are the ones in CUDA_VISIBLE_DEVICES when the configuration names them, else all.
"""
from __future__ import annotations

from typing import Any

from ..model import GPU, Evidence, Finding, Severity
from ..rules import FinishContext, Rule
from ..sources.gpu import merge

IDLE_UTIL = 5.0       # % at or below: not computing
BUSY_UTIL = 50.0
HELD_FRAC = 0.10      # a GPU holding this much of its memory is in use by someone
NEAR_FULL = 0.95
HOT_C = 85.0
SLOWDOWN = ("HW Slowdown", "HW Thermal Slowdown", "SW Thermal Slowdown", "HW Power Brake Slowdown")


def _gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f} GiB"


def _ids(samples) -> str:
    return ", ".join(str(s.index) if s.index is not None else (s.uuid or "?") for s in samples)


class GpuRule(Rule):
    kinds = frozenset({GPU})

    def __init__(self, meta):
        super().__init__(meta)
        self.snaps: list[tuple[str, list, int]] = []

    def feed(self, kind: str, payload: Any) -> None:
        if len(self.snaps) < 1000:
            self.snaps.append(payload)

    def used(self, ctx: FinishContext, samples: list) -> list:
        """The GPUs of the run: process-only rows (compute-apps CSV) joined onto their GPU, then the
        CUDA_VISIBLE_DEVICES subset when the configuration names one."""
        merged = merge(samples)
        vis = ctx.run.env.get("CUDA_VISIBLE_DEVICES")
        if not vis:
            return merged
        ids = {x.strip() for x in vis.split(",") if x.strip()}
        mine = [s for s in merged if (s.index is not None and str(s.index) in ids) or (s.uuid and s.uuid in ids)]
        return mine or merged

    def ev(self, path: str, text: str, line: int | None = None) -> Evidence:
        return Evidence(path, line or 0, text)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        out: list[Finding] = []
        for path, samples, seq in self.snaps:
            f = self.check(ctx, path, self.used(ctx, samples), samples, seq)
            if f is not None:
                out.append(f)
                break  # one finding per rule: the first snapshot that shows it
        return out

    def check(self, ctx, path, gpus, all_samples, seq) -> Finding | None:  # pragma: no cover - interface
        return None


def row(s) -> str:
    parts = [s.label]
    if s.name:
        parts.append(s.name)
    if s.mem_used_mib is not None:
        parts.append(f"{s.mem_used_mib:.0f}/{s.mem_total_mib:.0f} MiB" if s.mem_total_mib else f"{s.mem_used_mib:.0f} MiB")
    if s.util_pct is not None:
        parts.append(f"{s.util_pct:.0f}%")
    if s.temp_c is not None:
        parts.append(f"{s.temp_c:.0f}C")
    if s.power_w is not None:
        parts.append(f"{s.power_w:.0f}W" + (f"/{s.power_cap_w:.0f}W" if s.power_cap_w else ""))
    if s.error:
        parts.append(s.error)
    return " | ".join(parts)


class GpuUnderutilized(GpuRule):
    """GD501: GPUs that hold nothing and compute nothing while other GPUs of the job work."""

    def check(self, ctx, path, gpus, all_samples, seq):
        known = [s for s in gpus if s.util_pct is not None and s.mem_used_mib is not None and s.mem_total_mib]
        busy = [s for s in known if s.util_pct >= BUSY_UTIL]
        unused = [s for s in known if s.util_pct <= IDLE_UTIL and s.mem_used_mib < 0.02 * s.mem_total_mib
                  and not (s.processes or ())]
        if not busy or not unused:
            return None
        n = ctx.run.int_arg("per_device_train_batch_size")
        vis = ctx.run.env.get("CUDA_VISIBLE_DEVICES")
        msg = (f"{len(unused)} of {len(known)} GPUs {'the run can see ' if vis else ''}hold no memory and compute "
               f"nothing (GPU {_ids(unused)}) while GPU {_ids(busy)} work: those GPUs are not part of the job.")
        fix = ["Set NPROC_PER_NODE to the number of GPUs you mean to train on, and CUDA_VISIBLE_DEVICES to exactly "
               "those GPUs (colocated vLLM shares them; a rollout server gets GPUs of its own).",
               "If the idle GPUs belong to another user's reservation, drop them from CUDA_VISIBLE_DEVICES."]
        if n:
            fix.append("Keep the generation batch divisible by num_generations after changing the process count "
                       "(grpo-doctor preflight checks it).")
        ev = [self.ev(path, row(s), s.line) for s in (unused + busy)[:6]]
        return self.make(message=msg, fix=fix, evidence=ev, seq=seq)


class GpuMemoryNearFull(GpuRule):
    """GD502: GPU memory at or above 95% of the total."""

    def check(self, ctx, path, gpus, all_samples, seq):
        full = [s for s in gpus if s.mem_frac is not None and s.mem_frac >= NEAR_FULL]
        if not full:
            return None
        worst = max(full, key=lambda s: s.mem_frac)
        vllm = any(p.name and "vllm" in p.name.lower() for s in full for p in (s.processes or ()))
        msg = (f"GPU {_ids(full)} at {worst.mem_frac * 100:.0f}% of memory ({_gib(worst.mem_used_mib)} of "
               f"{_gib(worst.mem_total_mib)}): the next allocation spike (a longer completion, the logits of a larger "
               f"batch, a vLLM wake-up) runs out of memory.")
        if vllm:
            msg += (" vLLM processes hold it: vLLM takes vllm_gpu_memory_utilization of the whole GPU at start, so a "
                    "full GPU is by design for a rollout server, but not for a GPU that also trains.")
        fix = ["Colocated vLLM: lower --vllm_gpu_memory_utilization, add --sleep_level 1, or "
               "--offload_model/--offload_optimizer true.",
               "Training: --deepspeed zero3, smaller --per_device_train_batch_size or --max_completion_length, "
               "gradient checkpointing on.",
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lowers fragmentation."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s in full[:5]], seq=seq)


def _family(name: str | None) -> str:
    n = (name or "?").strip().lower()
    if "vllm" in n:
        return "vllm"
    if n.startswith("sglang") or "sglang" in n:
        return "sglang"
    return n.split("/")[-1].split("\\")[-1] or n


class GpuHeldByOtherJob(GpuRule):
    """GD503: memory on the run's GPUs held by processes of another job (before launch: any process; in a run's
    snapshot: processes of more than one program on one GPU)."""

    def check(self, ctx, path, gpus, all_samples, seq):
        hits = []
        for s in gpus:
            procs = [p for p in (s.processes or ()) if p.mem_mib is not None and p.mem_mib >= 1024]
            if ctx.preflight:
                if procs or (s.processes is None and s.mem_used_mib is not None and s.mem_total_mib
                             and s.mem_used_mib >= HELD_FRAC * s.mem_total_mib):
                    hits.append((s, procs))
            elif len({_family(p.name) for p in procs}) >= 2:
                hits.append((s, procs))
        if not hits:
            return None
        desc = []
        for s, procs in hits[:4]:
            who = ", ".join(f"pid {p.pid} {p.name or '?'} ({_gib(p.mem_mib)})" for p in procs[:3]) or \
                f"{_gib(s.mem_used_mib)} in use"
            desc.append(f"GPU {s.index if s.index is not None else s.uuid}: {who}")
        if ctx.preflight:
            msg = ("Before launch, GPUs this run will use already hold memory: " + "; ".join(desc) + ". vLLM checks "
                   "free memory against vllm_gpu_memory_utilization x total at start-up and training starts with "
                   "that much less.")
        else:
            msg = ("GPUs hold memory of more than one program: " + "; ".join(desc) + ". A process of another job "
                   "shares the GPU with the run.")
        fix = ["Stop the other job's processes (nvidia-smi shows their PIDs) or pick free GPUs with "
               "CUDA_VISIBLE_DEVICES.",
               "Leftover processes of an earlier crashed run (a stray vLLM worker) hold memory until killed: "
               "kill them by PID."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s, _ in hits[:5]], seq=seq)


class GpuIdleMemoryHeld(GpuRule):
    """GD504: GPUs hold memory but compute nothing: a hang (ranks waiting in a collective) or a pause."""

    def check(self, ctx, path, gpus, all_samples, seq):
        held = [s for s in gpus if s.util_pct is not None and s.util_pct <= IDLE_UTIL and s.mem_frac is not None
                and s.mem_frac >= HELD_FRAC]
        if not held:
            return None
        busy = [s for s in gpus if s.util_pct is not None and s.util_pct >= BUSY_UTIL]
        server = all(any(p.name and ("vllm" in p.name.lower() or "sglang" in p.name.lower()) for p in (s.processes or ()))
                     for s in held)
        if busy:
            msg = (f"GPU {_ids(held)} hold memory ({_gib(held[0].mem_used_mib)} on GPU {held[0].index}) at 0-5% "
                   f"while GPU {_ids(busy)} compute: in one job this is ranks waiting for others (a straggler or a "
                   f"collective one rank never entered).")
        else:
            msg = (f"Every GPU that holds memory (GPU {_ids(held)}) is idle at 0-5%: the job is loaded but not "
                   f"computing, which is what a hang looks like (all ranks waiting in NCCL, or a stuck rollout).")
        if server:
            msg += " The memory belongs to inference servers (vLLM/sglang), which sit idle between requests."
        fix = ["One snapshot cannot tell a hang from a pause: take two more 30 s apart (nvidia-smi --query-gpu="
               "index,utilization.gpu,memory.used --format=csv -l 30); a hang stays at 0%.",
               "If it stays idle: py-spy dump --pid <trainer pid> on each rank shows where it waits; "
               "grpo-doctor analyze on the run's log names the phase."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s in (held + busy)[:6]], seq=seq,
                         severity=Severity.info if server and not busy else None)


class GpuErrors(GpuRule):
    """GD505: a GPU that cannot be read (ERR!, Unknown Error), uncorrectable ECC errors, retired/remapped rows."""

    def check(self, ctx, path, gpus, all_samples, seq):
        bad, warn = [], []
        for s in [x for x in all_samples if x.source != "csv-apps"]:
            if s.error:
                bad.append((s, f"{s.label} cannot be read by the driver ({s.error})"))
            elif s.ecc_volatile_uncorrected:
                bad.append((s, f"{s.label}: {s.ecc_volatile_uncorrected} uncorrectable ECC error(s) since boot"))
            elif s.remap_failed:
                bad.append((s, f"{s.label}: a row remapping failed"))
            elif s.retired_pending or s.remapped_pending:
                warn.append((s, f"{s.label}: " + ("retired pages" if s.retired_pending else "a row remap")
                             + " pending (applied at the next GPU reset)"
                             + (f"; {s.ecc_volatile_corrected} correctable ECC errors" if s.ecc_volatile_corrected
                                else "")))
        if not bad and not warn:
            return None
        what = "; ".join(t for _, t in (bad + warn)[:4])
        msg = what + "."
        if bad:
            msg += (" A GPU in this state fails or corrupts the job (NCCL errors, `CUDA error: unspecified launch "
                    "failure`, a rank that never answers).")
        fix = ["Take the GPU out of CUDA_VISIBLE_DEVICES and tell the machine's admin (dmesg | grep -i xid shows "
               "the Xid code).",
               "Pending retirements/remaps are applied by a GPU reset (nvidia-smi -r -i <index>, no processes "
               "running) or a reboot."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s, _ in (bad + warn)[:5]],
                         seq=seq, severity=Severity.error if bad else Severity.warning)


class GpuThrottled(GpuRule):
    """GD506: thermal or hardware slowdown (clock event reasons), or a GPU at 85 C or more."""

    def check(self, ctx, path, gpus, all_samples, seq):
        hits = []
        for s in gpus:
            rs = [r for r in (s.throttle_reasons or ()) if r in SLOWDOWN]
            hot = s.temp_c is not None and s.temp_c >= HOT_C
            if rs or hot:
                hits.append((s, rs, hot))
        if not hits:
            return None
        parts = []
        for s, rs, hot in hits[:4]:
            why = ", ".join(rs) if rs else ""
            if hot:
                why = (why + ", " if why else "") + f"{s.temp_c:.0f} C"
            parts.append(f"{s.label}: {why}")
        msg = ("GPU clocks are being cut: " + "; ".join(parts) + ". Steps take longer on these GPUs and every other "
               "rank waits for them at each collective.")
        fix = ["Check cooling and airflow (fans, inlet temperature) and the power supply; nvidia-smi -q -d "
               "PERFORMANCE,TEMPERATURE shows the active reasons.",
               "SW Power Cap alone at full load is normal and is not reported here."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s, _, _ in hits[:5]], seq=seq)
