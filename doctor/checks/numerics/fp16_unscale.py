"""GD622: float16 weights under fp16 mixed precision ('Attempting to unscale FP16 gradients')."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._nan_fixes import dtype_of


def fp16_unscale_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    dt = dtype_of(run)
    msg = ("The model weights are float16 and the trainer runs float16 mixed precision: the gradient scaler refuses "
           "to unscale float16 gradients ('Attempting to unscale FP16 gradients').")
    if dt:
        msg += f" This run has --torch_dtype {dt}."
    fix = ["Use --torch_dtype bfloat16 on GPUs that support it (A100/H100/RTX 30xx and newer), or --torch_dtype "
           "float32 on older ones (V100, T4); the ms-swift FAQ recommends fp32 for this error.",
           "Do not combine float16 weights with --fp16 true for full-parameter training."]
    return Diagnosis(message=msg, fix=tuple(fix))
