"""GD501: GPUs that hold nothing and compute nothing while other GPUs of the job work."""
from __future__ import annotations

from ._snapshot import BUSY_UTIL, IDLE_UTIL, GpuRule, _ids, row


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
