"""GD623: DeepSpeed's fp16 loss scale at its minimum and the gradients still overflow."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._nan_fixes import nan_fixes


def loss_scale_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    msg = ("DeepSpeed lowered the fp16 loss scale to its minimum and the gradients still overflowed, so it stopped "
           "the run: the gradients are inf/NaN at any scale.")
    ds = run.args.get("deepspeed")
    if ds:
        msg += f" DeepSpeed config: {ds}."
    fix = [f for f in nan_fixes(run, kl_first=False, last_ok=None, lr_seen=None)
           if "float16" not in f]
    fix.insert(0, "Switch to bf16 (--torch_dtype bfloat16; in a custom DeepSpeed JSON set \"bf16\": {\"enabled\": true} "
                  "and remove the \"fp16\" block) on GPUs that support it; fp16 overflows in long GRPO runs.")
    return Diagnosis(message=msg, fix=tuple(fix))
