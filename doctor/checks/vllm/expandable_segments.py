"""GD221: vLLM sleep mode refuses PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..memory._facts import facts_of


def expandable_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    f = facts_of(ctx.run)
    conf = f.env.get("PYTORCH_CUDA_ALLOC_CONF")
    msg = ("vLLM's sleep mode allocates through its own CUDA memory pool (cumem), which PyTorch's expandable segments "
           "cannot share: the engine refuses to start with PYTORCH_CUDA_ALLOC_CONF containing expandable_segments:True"
           + (f" (this launch sets PYTORCH_CUDA_ALLOC_CONF={conf})." if conf else "."))
    fix = ["Remove expandable_segments:True from PYTORCH_CUDA_ALLOC_CONF for this run"
           + (" (recent ms-swift releases switch expandable segments off themselves while they create and wake the "
              "engine: upgrading also fixes it)." if f.framework == "swift" else "."),
           ("Or turn vLLM sleep mode off (--sleep_level 0), at the price of vLLM keeping its memory during training."
            if f.framework == "swift" else "Or turn vLLM sleep mode off (vllm_enable_sleep_mode false).")]
    return Diagnosis(message=msg, fix=tuple(fix))
