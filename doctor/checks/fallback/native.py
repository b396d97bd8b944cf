"""GD998's run context: where in the run a native crash came and what of the run survives it (a fixer: pure)."""
from __future__ import annotations

import re

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# torch's NCCL watchdog ends a process whose collective timed out or whose NCCL call failed by throwing from its own
# thread (`terminate called after throwing an instance of 'c10::DistBackendError'`, what(): "... watchdog thread
# terminated with exception: ... Watchdog caught collective operation timeout"): that abort is the NCCL failure's
# teardown, which GD301/GD304 report. Only their words count: the same watchdog also carries a CUDA error (an illegal
# memory access), and then the native crash is the failure itself
_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout|NCCL error|NCCL communicator was aborted")


def _watchdog_teardown(hit: Hit, ctx: RunState) -> bool:
    """The native abort at ``hit`` is torch's NCCL watchdog taking the process down (its lines just around it)."""
    tail = ctx.tails.get(hit.evidence.path) or ()
    near = [t.text for t in tail if hit.seq - 6 <= t.seq <= hit.seq + 3]
    return any(_WATCHDOG.search(t) for t in near)


def native_crash_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if all(_watchdog_teardown(h, ctx) for h in hits):
        return None  # the NCCL rules (GD301, GD304) name the failure; this abort is how torch ends the process
    what = hits[0].groups.get("what") or "a native crash"
    msg = f"A process died in C/C++/CUDA code ({what}), which Python cannot turn into a traceback."
    steps = ctx.metrics_steps
    if steps:
        msg += f" It came after {steps} logged training step(s) (read from the log's metric rows)."
    elif ctx.run.args or ctx.run.launches:
        msg += (" No training step's metrics were logged before it: start-up (model load, engine start, first step), "
                "or a run that logs its metrics rarely.")
    ckpts = [(p, s) for p, s in ctx.checkpoints if s is not None]
    if ckpts:
        path, step = max(ckpts, key=lambda c: c[1] or 0)
        msg += (f" The last checkpoint on disk is {path} (step {step}): resume from it once the cause is fixed; a "
                f"checkpoint that was being written when the process died is cut (grpo-doctor check-ckpt tells).")
    return Diagnosis(message=msg)
