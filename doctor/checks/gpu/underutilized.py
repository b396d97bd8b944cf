"""GD501: GPUs that hold nothing and compute nothing while other GPUs of the job work."""
from __future__ import annotations

from .. import _data_parallel as data_parallel
from ._snapshot import BUSY_UTIL, IDLE_UTIL, GpuRule, _gib, _ids, one_process_shape, row


class GpuUnderutilized(GpuRule):
    """GD501: GPUs that hold nothing and compute nothing while other GPUs of the job work."""

    def check(self, ctx, path, gpus, all_samples, seq):
        known = [s for s in gpus if s.util_pct is not None and s.mem_used_mib is not None and s.mem_total_mib]
        busy = [s for s in known if s.util_pct >= BUSY_UTIL]
        unused = [s for s in known if s.util_pct <= IDLE_UTIL and s.mem_used_mib < 0.02 * s.mem_total_mib
                  and not (s.processes or ())]
        if not busy or not unused:
            return self._one_process(path, gpus, seq)
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

    def _one_process(self, path, gpus, seq):
        shape = one_process_shape(gpus)
        if shape is None:
            return None
        busy, waiting = shape
        top = busy[0]
        most = max(s.mem_used_mib for s in waiting)
        msg = (f"GPU {top.index} computes at {top.util_pct:g}% with {_gib(top.mem_used_mib)} while GPU {_ids(waiting)} "
               f"{'sits' if len(waiting) == 1 else 'sit'} at 0-5% holding at most {_gib(most)} ({most / top.mem_used_mib:.0%} of it; read from the "
               f"snapshot): the shape of one process driving several GPUs. torch's nn.DataParallel ({data_parallel.USED_BY}) "
               f"keeps the weights, optimizer and gathered "
               f"outputs on the first GPU and runs a smaller replica on each other one, which waits most of the step; a "
               f"model split over GPUs (device_map=\"auto\") also works on one GPU at a time. Ranks of a distributed "
               f"job hold about the same memory, working or waiting.")
        fix = [data_parallel.FIX,
               "If the job is already one process per GPU, one snapshot cannot tell this from rank 0 working alone "
               "(evaluation or saving) while the others wait: take two more 30 s apart (nvidia-smi --query-gpu="
               "index,utilization.gpu,memory.used --format=csv -l 30)."]
        ev = [self.ev(path, row(s), s.line) for s in (waiting + busy)[:6]]
        return self.make(message=msg, fix=fix, evidence=ev, seq=seq, confidence="likely",
                         title="One GPU computes while the others hold a smaller share and wait")
