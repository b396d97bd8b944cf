"""GD624: autograd anomaly detection: a backward function returned NaN."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._nan_fixes import nan_fixes
from .non_finite import swift_grpo


def anomaly_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    fn = g.get("fn") or "?"
    msg = (f"The backward pass of {fn} produced NaN (autograd anomaly detection). With anomaly detection on, torch "
           f"prints the forward call that made this operation ('Traceback of forward call that caused the error') "
           f"before the error: that line is the operation to look at.")
    if ctx.trainer_kind().kind == "grpo":
        msg += " In GRPO it is usually the log-softmax of overflowing logits or a division by a zero std."
    # the NaN came out of a backward function: clipping acts on its output, and no logged step shows the updates
    fix = nan_fixes(ctx.run, kl_first=False, last_ok=None, lr_seen=None, swift_grpo=swift_grpo(ctx), in_backward=True)
    fix.append("Turn anomaly detection off again once found: it slows training down a lot.")
    return Diagnosis(message=msg, fix=tuple(fix))
