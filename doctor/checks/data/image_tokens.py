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
    if tok is not None and feat is not None and tok > feat:
        return _extra_placeholders(tok, feat)
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


def _extra_placeholders(tok: int, feat: int) -> Diagnosis:
    """More placeholder tokens than features: the model counts the image-pad tokens in the ids and the rows its
    vision tower produced (transformers' Qwen2-VL-style get_placeholder_mask / the check in forward); truncation only
    removes placeholders, so a surplus is placeholder text with no image behind it."""
    extra = tok - feat
    msg = (f"The ids hold {tok} image placeholder tokens but the images gave {feat} features: {extra} placeholder(s) "
           f"more than the images fill (computed). Truncation cannot do that (it removes placeholders, giving fewer "
           f"tokens than features): some text holds the model's image placeholder with no image behind it: a prompt or "
           f"dataset field that already contains the placeholder string (<image>, <|image_pad|>), more image tags "
           f"than images in a sample, or, in GRPO and other online training, a completion that generated the "
           f"placeholder token and is fed back to the model with its prompt.")
    fix = ("Find the sample: count the image tags in its text against its images, and strip placeholder strings "
           "(<image>, <|vision_start|>, <|image_pad|>) from the dataset's text fields.",
           "If it fails only after training has run a while (a completion, not the dataset): keep the policy from "
           "generating the vision tokens (add their ids to the sampling's bad words / suppressed tokens) or drop "
           "completions that contain them before the loss.")
    return Diagnosis(message=msg, fix=fix)

