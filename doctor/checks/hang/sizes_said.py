"""Sizes of saved weights stated in a paste's words ("model.safetensors file has 4.45 GB", "保存的权重是135GB，但是原始权重
只有68GB", "zero2 (2.1G) and zero3 (760K)"), judged by arithmetic: bytes per parameter of the model the paste names, or
the ratio to another size of the same model. Pure: prose lines in, a reading out.

What the arithmetic tells (a parameter takes 2 bytes in bfloat16/float16, 4 in float32, about 0.5-0.6 in a 4-bit
quantization with its scales): a few KB or MB for a model of a billion parameters is an empty state dict (ZeRO-3's
partitioned weights saved without being gathered); about twice the original is a float32 save of a 16-bit model;
gigabytes where a LoRA adapter was asked for are the whole model."""
from __future__ import annotations

from dataclasses import dataclass

from ... import lazyre
from ...classify.run_context import ZERO3
from ...signals import LogLine
from .endings import plain

_UNITS = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
# a size: "4.45 GB", "2.1G", "760K", "135GB", "489K" (a bare B is a parameter count: "13B"); Chinese "几十K" (tens of KB);
# the edges are ASCII ones: a CJK character before a number ("是135GB") is a word character to `re`
# (a number after a hyphen inside a name is part of the name: "BELLE-7B-2M" is trained on 2M instructions, not 2 MB)
# (nor is a memory's size, after or before its word: "8卡A800, 400G内存", "内存320g", "80GB GPU", "64 GB of RAM",
# "RAM: 256GB")
_SIZE = lazyre.compile(r"(?i)(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)(?<!内存)(?<!显存)(?<!内存为)(?<!显存为)(?<!RAM )(?<!RAM: )"
                       r"(?<!memory )(?<!memory: )(\d+(?:\.\d+)?)\s?([kmgt])(?:i?b|bytes?)?(?![a-z])"
                       r"(?!\s?(?:的)?(?:内存|显存|RAM|V?RAM|memory|GPU|显卡|of (?:host |system |GPU )?(?:RAM|memory|VRAM)))"
                       # a card's memory before its name: "24G 4090", "80GB A100", "40G A800", "24GB RTX 3090"
                       r"(?!\s?(?:[AHLV]\d{2,4}|RTX|GTX|[34]0[5-9]0)(?![0-9]))")
# a GPU's memory after its name ("A800 (80G)", "A100 80GB", "RTX 4090 24G", "H20（96G）"): the card, not a file
_GPU_MEMORY = lazyre.compile(r"(?i)(?<![A-Za-z0-9])((?:[AHLV]|MI|RTX\s?|GTX\s?)\d{2,4}(?:\s?Ti|\s?SXM\d?|\s?PCIe)?)\s*"
                             r"[(\uff08]?\s*\d+\s?G(?:i?B)?\s*[)\uff09]?(?![A-Za-z0-9])")
_VAGUE = lazyre.compile(r"(?i)几(十|百)\s?([kmg])(?:i?b)?(?![a-z])")
# a model's parameter count in its name or a sentence: "mistral-7b", "Seed-OSS-36B-Base", "llama3-8b", "1.1B", "13B"
_PARAMS = lazyre.compile(r"(?i)(?<![A-Za-z0-9_.])(?:[a-z][\w.]*[-_ ])?(\d+(?:\.\d+)?)\s?b(?![a-z0-9])")
_WEIGHTS = lazyre.compile(r"(?i)\.safetensors(?![a-z0-9_])|\.bin(?![a-z0-9_])|(?<![a-z])(?:weights?|model|checkpoints?)"
                          r"(?![a-z])|权重|模型|(?<![a-z])zeros? ?[23](?![a-z0-9])")
_ORIGINAL = lazyre.compile(r"(?i)\boriginal\b|\bbase model\b|原始|原来|原模型|最开始")
# ASCII edges: "lora权重", "进行LoRA微调", "--use_lora True" (a CJK character or "_" is a word character to `re`)
_ADAPTER_WANTED = lazyre.compile(r"(?i)(?<![a-z0-9])lora(?![a-z0-9])|(?<![a-z0-9])adapter(?![a-z0-9])|"
                                 r"save_method\s*=\s*['\"]lora")


@dataclass(frozen=True)
class SizeReading:
    category: str
    kind: str           # empty | fp32 | full-not-adapter
    line: LogLine
    sentence: str       # the numbers read and what they make


def _sizes(text: str) -> dict[float, str]:
    """{bytes: as the paste gives it}; a vague size ("几十K", tens of KB) is taken at its middle and shown in words."""
    text = _GPU_MEMORY.sub(r"\1", text)
    out = {float(m.group(1)) * _UNITS[m.group(2).lower()]: _human(float(m.group(1)) * _UNITS[m.group(2).lower()])
           for m in _SIZE.finditer(text)}
    for m in _VAGUE.finditer(text):
        unit = m.group(2).upper() + "B"
        out[(50 if m.group(1) == "十" else 500) * _UNITS[m.group(2).lower()]] = \
            f"{'tens' if m.group(1) == '十' else 'hundreds'} of {unit}"
    return out


def _params(texts: list[str]) -> float | None:
    """The parameter count (in units) the paste names first, from 0.1 to 2,000 billion."""
    for t in texts:
        for m in _PARAMS.finditer(t):
            n = float(m.group(1))
            if 0.1 <= n <= 2000:
                return n * 1e9
    return None


def _human(size: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} bytes"


def size_reading(lines: list[LogLine], around: list[LogLine] | None = None) -> SizeReading | None:
    """The reading of the weights sizes the prose lines state, or None when they state none that the arithmetic
    judges; ``around``: all the lines of the input, where the model's name, LoRA or ZeRO-3 may be named (a list item,
    a config line)."""
    texts = [plain(ln.text) for ln in lines]
    context = [plain(ln.text) for ln in around] if around else texts
    params = _params(context)
    adapter = any(_ADAPTER_WANTED.search(t) for t in context)
    zero3 = any(ZERO3.search(t) for t in context)
    for ln, text in zip(lines, texts):
        if not _WEIGHTS.search(text):
            continue
        shown = _sizes(text)
        if not shown:
            continue
        sizes = list(shown)
        small, big = min(sizes), max(sizes)
        if small < 10e6 and (big >= 500e6 or (params and params >= 0.1e9)):
            against = f"beside {shown[big]} for the same model" if big >= 500e6 else \
                f"for a model of {params / 1e9:g}B parameters"
            cause = " under ZeRO-3 (named in the paste)" if zero3 else ""
            if any(_GATHER_ON.search(t) for t in context):
                # the gathering save is on: the file that holds nothing was written by a save that bypassed it
                return SizeReading("checkpoint-corrupt", "empty-gathered", ln,
                                   f"a save of {shown[small]} {against} holds almost nothing although the paste sets "
                                   f"stage3_gather_16bit_weights_on_model_save to true: the file was written by a "
                                   f"save that did not go through DeepSpeed's gathering save")
            return SizeReading("checkpoint-corrupt", "empty", ln,
                               f"a save of {shown[small]} {against} holds almost nothing: an empty or partitioned "
                               f"state dict saved{cause} without its weights")
        if len(sizes) >= 2 and _ORIGINAL.search(text) and big / small > 1.7 and big / small < 2.3:
            return SizeReading("checkpoint-bloat", "fp32", ln,
                               f"{shown[big]} against {shown[small]} for the original is {big / small:.2f} times "
                               f"its size: a float32 save of a 16-bit model (4 bytes a parameter instead of 2)")
        if params and 3.3 <= big / params <= 4.8:
            return SizeReading("checkpoint-bloat", "fp32", ln,
                               f"{shown[big]} for {params / 1e9:g}B parameters is {big / params:.2f} bytes a "
                               f"parameter: float32 weights (a 16-bit model takes 2)")
        if adapter and big >= 1e9:
            per = f" ({big / params:.2f} bytes a parameter of the {params / 1e9:g}B model)" if params else ""
            # a trainer's save under ZeRO-3 gathers the partitioned 16-bit weights into one file of the whole model
            # (transformers' Trainer with stage3_gather_16bit_weights_on_model_save), adapter or not
            cause = ("; ZeRO-3 is named in the paste, and a trainer's ZeRO-3 save gathers the whole 16-bit model"
                     if zero3 else "")
            return SizeReading("checkpoint-bloat", "full-not-adapter", ln,
                               f"{shown[big]} where a LoRA adapter was asked for{per} is the whole model: an adapter "
                               f"of a few million parameters takes megabytes{cause}")
    return None


# the paste says DeepSpeed's gathering save is on ("set stage3_gather_16bit_weights_on_model_save to true",
# `"stage3_gather_16bit_weights_on_model_save": true`)
_GATHER_ON = lazyre.compile(r"(?i)stage3_gather_16bit_weights_on_model_save['\"]?\s*(?:[:=]|to|is|as)\s*['\"]?true\b")

FIXES = {
    "empty": ("Meanwhile: under ZeRO-3 each rank holds only a slice of every weight, so a save must gather them: set "
              "`stage3_gather_16bit_weights_on_model_save: true` in the DeepSpeed config (or let the trainer save "
              "through its DeepSpeed-aware save), and recover the weights of the saved checkpoint with DeepSpeed's "
              "`zero_to_fp32.py` over its global_step folder; the releases of the trainer and transformers around a "
              "version change are worth checking (some saved ZeRO-3 state dicts empty)."),
    "empty-gathered": ("Meanwhile: with stage3_gather_16bit_weights_on_model_save already true (as the paste says), "
                       "DeepSpeed gathers the weights only in a save that goes through its engine: a "
                       "`model.save_pretrained` or `torch.save(model.state_dict())` called on the wrapped model, or a "
                       "save after the engine was torn down, writes each rank's empty ZeRO-3 placeholders. Save "
                       "through the trainer (`trainer.save_model()` while the engine is alive, or "
                       "`accelerator.get_state_dict(model)`), and recover the weights of the last checkpoint with "
                       "DeepSpeed's `zero_to_fp32.py` over its global_step folder; check the file size before using "
                       "it."),
    "fp32": ("Meanwhile: the weights were saved in float32: load them with torch_dtype=torch.bfloat16 and save again "
             "(or set the save dtype of the trainer's export), which halves the size without changing the model."),
    "full-not-adapter": ("Meanwhile: save the adapter alone with the PEFT model's own save_pretrained (adapter_config.json "
                         "and adapter_model.safetensors, megabytes); a merged save writes the whole model whatever its "
                         "method argument says in some releases, so check the files the save wrote."),
}


def said_of(reading: SizeReading) -> str:
    return {"empty": "a saved weights file far too small for its model",
            "empty-gathered": "a saved weights file far too small for its model",
            "fp32": "saved weights about twice the size of a 16-bit model",
            "full-not-adapter": "the whole model saved where a LoRA adapter was asked for"}[reading.kind]


__all__ = ["FIXES", "SizeReading", "said_of", "size_reading"]
