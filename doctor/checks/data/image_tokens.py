"""GD441: the prompt's image/video placeholder tokens and the vision features disagree."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...sources.swiftconfig import RunConfig
from ...values import as_int


def _pixels(run: RunConfig) -> tuple[str, str]:
    mp = run.env.get("MAX_PIXELS")
    vmp = run.env.get("VIDEO_MAX_PIXELS")
    return (f"MAX_PIXELS={mp}" if mp else "MAX_PIXELS unset (ms-swift default 16384x28x28 = 12845056 pixels per "
            "image)",
            f"VIDEO_MAX_PIXELS={vmp}" if vmp else "VIDEO_MAX_PIXELS unset")


def image_tokens_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    tok, feat = as_int(g.get("tok")), as_int(g.get("feat"))
    ml = run.get("max_length")
    mp, vmp = _pixels(run)
    nums = f" (tokens {tok}, features {feat})" if tok is not None and feat is not None else ""
    msg = (f"The number of image/video placeholder tokens in the prompt and the vision features disagree{nums}: the "
           f"prompt was truncated through the image tokens, or the processor settings differ between encoding and "
           f"the model.")
    need = f"; these images need {feat} tokens" if feat else ""
    if ctx.framework()[0] == "ms-swift":
        fix = [f"Raise --max_length (now {ml or 'the model default'}{need}) so no prompt is cut inside its image tokens, "
               f"and use --truncation_strategy delete rather than left for multimodal GRPO.",
               f"Or shrink images so they need fewer tokens: {mp}; {vmp}. E.g. MAX_PIXELS=262144 (the value of "
               f"ms-swift's multimodal GRPO guide) or 1003520 (1280x28x28); for video also VIDEO_MAX_PIXELS and "
               f"FPS_MAX_FRAMES."]
    else:  # the same two levers under the names other trainers give them
        images = f" (these images need {feat} tokens)" if feat else ""
        fix = [f"Raise the maximum sequence length the prompt is cut to{images}, so that no prompt is cut "
               f"inside its image tokens (trl: max_prompt_length; LLaMA-Factory: cutoff_len; ms-swift: --max_length), "
               f"or drop over-long samples instead of truncating them.",
               "Or shrink images so they need fewer tokens: the image processor's max_pixels (Qwen2-VL-style "
               "processors; LLaMA-Factory: image_max_pixels; ms-swift: the MAX_PIXELS environment variable)."]
    return Diagnosis(message=msg, fix=tuple(fix))
