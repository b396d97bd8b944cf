"""GD998's run context: where in the run a native crash came and what of the run survives it (a fixer: pure)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def native_crash_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
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
