"""GD624: autograd anomaly detection: a backward function returned NaN."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._nan_fixes import nan_fixes


def anomaly_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    fn = g.get("fn") or "?"
    msg = (f"The backward pass of {fn} produced NaN (autograd anomaly detection). The forward stack printed before "
           f"this error shows the operation; in GRPO it is usually the log-softmax of overflowing logits or a "
           f"division by a zero std.")
    fix = nan_fixes(ctx.run, kl_first=False, last_ok=None, lr_seen=None)
    fix.append("Turn anomaly detection off again once found: it slows training down a lot.")
    return Diagnosis(message=msg, fix=tuple(fix))
