"""GD427's run context: a load_state_dict that met parameters of shape [0] is ZeRO-3's partitioning when the run
shows ZeRO-3 (its --deepspeed config or zero_stage); without that, the empty parameters point at it but do not prove
it (a fixer: pure)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int
from ..memory._facts import zero_stage


def zero3_state_dict_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    args = ctx.run.args
    if zero_stage(args.get("deepspeed"))[0] == 3 or as_int(args.get("zero_stage")) == 3:
        return Diagnosis()
    param = next((h.groups["param"] for h in hits if h.groups.get("param")), "a parameter")
    return Diagnosis(message=f"load_state_dict found `{param}` with shape torch.Size([0]) in the model where the "
                             "checkpoint holds a full tensor: most often a DeepSpeed ZeRO-3 partitioned parameter (an "
                             "empty placeholder until gathered), loaded without gathering it; the run's configuration "
                             "that would show ZeRO-3 is not in the log.",
                     confidence="likely")
