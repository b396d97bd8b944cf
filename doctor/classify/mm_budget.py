"""The prompt-length cut behind a multimodal placeholder mismatch (the structural multimodal finding, GD992): when the
run caps prompt length, the cap is the first cause to check, with the numbers it implies.

The mechanism, from the source:
- trl's GRPOTrainer keeps the LAST ``max_prompt_length`` tokens of every prompt (``prompt_ids[:, -max_prompt_length:]``:
  trl 0.14.0 trainer/grpo_trainer.py:383, trl 0.16.0 :670), a cut from the left; the R1-V / open-r1-multimodal /
  VLM-R1 trainers copy that line (their ``Qwen2VLGRPOTrainer``). A chat prompt holds its image placeholder tokens near
  its start (after the system turn), so a prompt whose text plus image tokens is longer than the cap loses
  placeholders while the pixel values stay whole: the model (transformers qwen2-vl "Image features and image tokens
  do not match") or vLLM (``_merge_multimodal_embeddings``; "Failed to apply prompt replacement") then finds fewer
  placeholders than features. trl 0.20.0 keeps image tokens when it cuts (``truncate_with_protected_tokens``,
  grpo_trainer.py:361).
- ms-swift cuts at ``--max_length`` by ``--truncation_strategy`` (``left`` cuts the start; ``delete`` drops the
  sample), as GD441 says.
- Qwen2-VL / Qwen2.5-VL make one token per 28x28 pixels (14-pixel patches merged 2x2: transformers
  Qwen2VLImageProcessor ``patch_size=14``, ``merge_size=2``), so an image of at most ``max_pixels`` pixels takes at
  most max_pixels / 784 tokens.
Cases: StarsfieldAI/R1-V#73 (max_prompt_length 2048 with images, Qwen2-VL), and the trl fix that protects image
tokens (trl 0.20 ``truncate_with_protected_tokens``) which exists because the plain cut broke VLM prompts.
Pure: texts in, strings out; every number is marked read / computed.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import lazyre
from ..swift.framework import TRAINERS

_CAP = lazyre.compile(r"(?<![\w-])(?:--)?max_prompt_length[\"']?\s*[=: ]\s*[\"']?(\d+)")
_MAXLEN = lazyre.compile(r"(?<![\w-])--max_length[= ]\s*(\d+)")
_PIXELS = lazyre.compile(r"(?<![\w-])(?:--max_pixels|max_pixels|MAX_PIXELS)[\"']?\s*[=: ]\s*[\"']?(\d+)")
_TRUNC = lazyre.compile(r"--truncation_strategy[= ]\s*(\w+)")
_QWEN2VL = lazyre.compile(r"qwen2(?:\.5)?[-_]?vl", re.I)
_AUDIO = lazyre.compile(r"\baudio|mm_items\['audio'\]|omni", re.I)


@dataclass
class MMAccount:
    why: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    drop: tuple[str, ...] = ()


def _first(rx: re.Pattern, texts: Iterable[str]) -> int | None:
    for t in texts:
        m = rx.search(t)
        if m:
            return int(m.group(1))
    return None


def modality(message: str, model_hint: str) -> str:
    return "audio" if _AUDIO.search(message) or (_AUDIO.search(model_hint) and "image" not in message.lower()) \
        else "image"


def account(message: str, texts: list[str], fw: str | None, model_hint: str = "") -> MMAccount:
    """``texts``: the launch commands and the log's last lines (where a cap or GRPOConfig print would be)."""
    out = MMAccount()
    mod = modality(message, " ".join([model_hint, *texts[:4]]))
    if mod == "audio":
        out.drop = ("MAX_PIXELS",)  # image sizes do not change audio placeholders
    if "prompt replacement" in message:
        # the caller that encoded the prompt: the trainer in a trainer's run, else the caller's own template (a
        # serving or inference script)
        trained = fw in TRAINERS
        who = "the trainer's template" if trained else "the caller's chat template"
        out.why.append(f"vLLM's processor for this model could not find, in the prompt token ids it was given, the "
                       f"{mod} placeholder sequence it replaces with the {mod}'s feature tokens: the prompt was encoded "
                       f"by {who}, so template and vLLM disagree on this model's placeholders, or the "
                       f"prompt was cut through them.")
        caller = fw if trained else "the package that builds the prompt"
        out.fix.append(f"Make {who} and the installed vLLM agree on this model's placeholders: "
                       f"upgrade {caller} and vLLM together to a pair documented for this model, and check that "
                       f"each sample's <{mod}> tags match its {mod}s list.")
    cap = _first(_CAP, texts)
    swift_cap = _first(_MAXLEN, texts) if cap is None and fw == "ms-swift" else None
    if cap is None and swift_cap is None:
        return out
    pixels = _first(_PIXELS, texts) if mod == "image" else None
    qwen = bool(_QWEN2VL.search(" ".join([model_hint, *texts[:4]])))
    per = pixels // 784 if pixels and qwen else None
    if cap is not None:
        why = (f"The run cuts prompts to max_prompt_length {cap} (read from the command). trl's GRPOTrainer up to 0.16 "
               f"and the R1-V / open-r1-multimodal trainers keep the last {cap} tokens of each prompt (a cut from the "
               f"left, `prompt_ids[:, -max_prompt_length:]`), where the {mod} placeholder tokens sit near the start: "
               f"a prompt whose text plus {mod} tokens exceeds {cap} loses placeholders while its {mod} features stay "
               f"whole, and the model or engine then counts fewer placeholders than features. This is the first "
               f"cause to check.")
    else:
        strat = next((m.group(1) for t in texts if (m := _TRUNC.search(t))), None)
        why = (f"The run caps sequences at --max_length {swift_cap} (read from the command), truncation_strategy "
               f"{strat or 'not given'}{' (read)' if strat else ''}: a prompt cut from the left loses its {mod} "
               f"placeholder tokens while its {mod} features stay whole.")
    if per is not None:
        why += (f" Each image can take up to {pixels} / (28 x 28) = {per} tokens (computed: max_pixels {pixels} read, "
                f"Qwen2-VL's one token per 28x28 pixels), so a one-image prompt keeps all of its placeholders only "
                f"if its text is under {(cap or swift_cap or 0) - per} tokens (computed).")
    out.why.insert(0, why)
    name = "max_prompt_length" if cap is not None else "max_length"
    limit = cap if cap is not None else swift_cap
    need = f"; at least {per} per image plus the text, computed" if per is not None else ""
    if fw == "ms-swift" or cap is None:
        raise_line = (f"Raise --{name} above the longest prompt plus its {mod} tokens (now {limit}, read{need}), "
                      f"and use --truncation_strategy delete so an over-long sample is dropped, not cut.")
    else:
        raise_line = (f"Raise max_prompt_length above the longest prompt plus its {mod} tokens (now {limit}, "
                      f"read{need}), or set it to None (no cut) and filter over-long samples; trl 0.20 and later keep "
                      f"{mod} tokens when they cut.")
    if mod == "image":
        out.drop += ("Cap image sizes",)  # said here with the numbers
        raise_line += (f" Or cap max_pixels lower so the image tokens fit (max_pixels / 784 tokens per image for "
                       f"Qwen2-VL{f'; now {pixels}, read' if pixels else ''}).")
    out.fix.insert(0, raise_line)
    return out
