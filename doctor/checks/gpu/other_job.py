"""GD503: memory on the run's GPUs held by processes of another job."""
from __future__ import annotations

from ._snapshot import HELD_FRAC, GpuRule, _gib, row
from .live import OtherJobTracker


def _family(name: str | None) -> str:
    n = (name or "?").strip().lower()
    if "vllm" in n:
        return "vllm"
    if n.startswith("sglang") or "sglang" in n:
        return "sglang"
    return n.split("/")[-1].split("\\")[-1] or n


class GpuHeldByOtherJob(GpuRule):
    """GD503: memory on the run's GPUs held by processes of another job (before launch: any process; in a run's
    snapshot: processes of more than one program on one GPU; under watch: processes outside the run's own tree)."""

    tracker = OtherJobTracker

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
