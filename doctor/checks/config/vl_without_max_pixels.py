"""GD461: a vision-language model without MAX_PIXELS."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from ..memory._facts import DOC_MAX_PIXELS, MM_ENV, VL_MODEL
from ._base import _ConfigRule


class VlWithoutMaxPixels(_ConfigRule):
    """GD461: a vision-language model without MAX_PIXELS: images are encoded at up to the template's default."""

    def check(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        model = str(run.get("model") or "")
        mtype = str(run.get("model_type") or "")
        cfg = ctx.facts.get("model_config")
        vl = bool(VL_MODEL.search(model) or VL_MODEL.search(mtype) or (isinstance(cfg, dict) and "vision_config" in cfg))
        if not vl:
            return []
        if any(k in run.env for k in ("MAX_PIXELS", "IMAGE_MAX_TOKEN_NUM")) or run.get("max_pixels"):
            return []
        env = " ".join(f"{k}={run.env[k]}" for k in MM_ENV if k in run.env)
        msg = (f"{model or mtype} is a vision-language model and MAX_PIXELS is not set"
               + (f" ({env} is)" if env else "") + ": ms-swift then encodes each image at up to the template default "
               "(Qwen2-VL/Qwen2.5-VL use qwen_vl_utils' 16384 x 28 x 28 = 12.8M pixels, up to 16384 visual tokens per image), which dominates "
               "activation memory and vLLM's KV cache in GRPO rollouts.")
        fix = [f"MAX_PIXELS={DOC_MAX_PIXELS} swift rlhf ... (the ms-swift multimodal GRPO guide's value; about 330 "
               f"visual tokens per image), or the largest your task needs.",
               "For video inputs also VIDEO_MAX_PIXELS / FPS_MAX_FRAMES."]
        return [self.make(message=msg, fix=fix)]
