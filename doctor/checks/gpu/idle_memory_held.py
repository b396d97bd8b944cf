"""GD504: GPUs hold memory but compute nothing (a hang, or a pause): in a snapshot, or for minutes of live samples
under ``watch`` (formerly GD903)."""
from __future__ import annotations

from ...model import Severity
from ._snapshot import BUSY_UTIL, HELD_FRAC, IDLE_UTIL, GpuRule, _gib, _ids, one_process_shape, row, serves_inference
from .live import IdleHeldTracker


class GpuIdleMemoryHeld(GpuRule):
    """GD504: GPUs hold memory but compute nothing: a hang (ranks waiting in a collective) or a pause."""

    tracker = IdleHeldTracker

    def check(self, ctx, path, gpus, all_samples, seq):
        held = [s for s in gpus if s.util_pct is not None and s.util_pct <= IDLE_UTIL and s.mem_frac is not None
                and s.mem_frac >= HELD_FRAC]
        if not held or one_process_shape(gpus) is not None:
            return None   # one process driving several GPUs: GD501's
        busy = [s for s in gpus if s.util_pct is not None and s.util_pct >= BUSY_UTIL]
        server = all(serves_inference(s) for s in held)
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
