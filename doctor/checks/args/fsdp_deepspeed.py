"""GD422: FSDP settings GRPO refuses: FSDP2 together with DeepSpeed, FSDP1, a sharded model-only save."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def fsdp_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    if g.get("both"):
        return Diagnosis(
            message=f"Both FSDP2 (--fsdp {run.get('fsdp', '')}) and DeepSpeed (--deepspeed "
                    f"{run.get('deepspeed', '')}) are set; a run uses one sharding backend.".replace("  ", " "),
            fix=("Keep --deepspeed (zero2/zero3) and drop --fsdp, or keep --fsdp and drop --deepspeed.",))
    if g.get("fsdp1"):
        return Diagnosis(
            message="GRPO in ms-swift supports FSDP2 only.",
            fix=("Set fsdp_version 2 in the FSDP config (or use --deepspeed zero3 instead).",))
    return Diagnosis(
        message="A sharded FSDP2 state dict cannot be written as a model-only checkpoint.",
        fix=("Use FULL_STATE_DICT in the FSDP config, or drop --save_only_model true.",))
