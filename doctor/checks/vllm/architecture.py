"""GD241: vLLM's model registry refuses the model's architecture: not implemented in this release, or an
implementation that is listed but failed to import (then the registry's inspection error above says why)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_ARCHS = lazyre.compile(r"'(\w+)'")
_SUPPORTED = lazyre.compile(r"Supported architectures: (.*)")
# vllm/model_executor/models/registry.py logs why it could not import a listed model class before it refuses it
_INSPECT = ("Error in inspecting model architecture", "failed to be inspected")
# ...and logs the inspection subprocess's traceback line by line under its own tag (`ERROR 10-16 05:20:48
# registry.py:264] ImportError: ...flash_attn_2_cuda...so: undefined symbol: ...`): a paste that cut the header still
# shows the error that made the refusal
_INSPECT_LOGGED = lazyre.compile(r"registry\.py:\d+\]\s+(?P<error>(?:\w+\.)*\w*(?:Error|Exception): .{1,200})")
# a drive-letter path in a frame or a vLLM line (File "D:\\envs\\...\\vllm\\...")
_WINDOWS = lazyre.compile(r'(?:^|["\s])[A-Za-z]:\\[^"\s]*\\(?:site-packages|vllm)\\')


# transformers' base classes without a language-modelling head (modeling_<family>.py: <Family>Model beside
# <Family>ForCausalLM), and encoders that never generate: a config.json that names one is a checkpoint saved from the
# bare model (sentence-transformers, AutoModel, a reward/embedding export), which no vLLM release generates from
_HEADLESS = lazyre.compile(r"^(?:Llama|Mistral|Mixtral|Qwen2|Qwen2Moe|Qwen3|Qwen3Moe|Gemma|Gemma2|Gemma3|Phi|Phi3|Falcon|"
                           r"GPTNeoX|Olmo|Olmo2|Starcoder2|DeepseekV2|DeepseekV3|Cohere|Granite|StableLm|InternLM2|"
                           r"Bert|Roberta|XLMRoberta|DistilBert|Electra|DebertaV2|ModernBert|NomicBert|MPNet)Model$")


def _headless(names: list[str]) -> Diagnosis | None:
    if not names or not all(_HEADLESS.match(n) for n in names):
        return None
    shown = ", ".join(names)
    return Diagnosis(
        message=f"{shown} is a model class without a language-modelling head (transformers' base {shown}, or an "
                f"encoder), not a generative architecture: the checkpoint was saved from the bare model (a "
                f"sentence-transformers or AutoModel save, an embedding or reward export), and vLLM generates only "
                f"from *ForCausalLM / *ForConditionalGeneration checkpoints. A newer vLLM does not change that.",
        fix=("Generate from the causal-LM checkpoint (saved with AutoModelForCausalLM, whose config.json names "
             "*ForCausalLM), or use this one for what it is: embeddings or scores (vLLM's embedding/pooling task in "
             "releases that support it, or sentence-transformers itself).",),
        category="vllm-engine-error",
        title="The checkpoint is a model without a language-modelling head: vLLM cannot generate from it")


# model names of vision/audio-language families (their -VL, -V, vision, omni... suffixes): a multimodal model whose
# architecture the installed vLLM does not list as multimodal
_MULTIMODAL_NAME = lazyre.compile(r"(?i)(?:^|[/_\-.])(?:[\w.]*-?vl\b|[\w.]*vl-|llava|internvl|glm-4\.[15]v|cogvlm|"
                                  r"[\w.]*vision|[\w.]*omni|molmo|pixtral|idefics|minicpm-[vo]|mllama|paligemma|"
                                  r"phi-4-multimodal|kimi-vl|deepseek-vl|aria\b|chameleon|fuyu|[\w.]*-audio)")


def _installed(ctx: RunState) -> str:
    version = ctx.run.versions.get("vllm")
    return f" ({version}, as the log shows it installed)" if version else ""


def _multimodal_refusal(option: str, ctx: RunState) -> Diagnosis:
    served = (str(launch.flags.get("model") or "") for launch in ctx.run.launches if launch.command == "serve")
    model = str(ctx.run.get("model") or next((m for m in served if m), ""))
    told = f"`{model}`" if model else "the model"
    doc = (f"vLLM refused `{option}`, an option only for multimodal models, because its model registry does not list "
           f"the architecture in {told}'s config.json as multimodal (vllm/config.py `_init_multimodal_config`).")
    upgrade = ("Upgrade vLLM to a release whose supported-models list marks this architecture as multimodal (the model "
               "card names the release), together with the trainer versions that support that vLLM; keep the option: "
               "without it the model would not take images.")
    check = ("Check `architectures` in the model's config.json: a conversion saved under another class name (an "
             "HF-native port of a model vLLM knows under its remote-code class) is not the architecture vLLM lists.")
    drop = f"If the model is text-only, drop `{option}` (and the other multimodal options) from the launch."
    if model and _MULTIMODAL_NAME.search(model):
        return Diagnosis(message=doc + f" {told} is a vision-language model by its name: the installed vLLM predates "
                                       f"its support{_installed(ctx)}, or the checkpoint names an architecture vLLM registers "
                                       f"under another class.",
                         fix=(upgrade, check), title="The installed vLLM does not know the model as multimodal")
    return Diagnosis(message=doc + (" The model name read does not say whether it is a vision model." if model else
                                    " The model is not named in what was read."),
                     fix=(upgrade, check, drop), title="The installed vLLM does not know the model as multimodal")


def architecture_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    refused = next((h.groups["option"] for h in hits if h.groups.get("option")), None)
    if refused is not None and not any(h.groups.get("arch") for h in hits):
        return _multimodal_refusal(refused, ctx)
    # the refusal's line names the list of architectures; the registry's inspection line only the one it tried
    hit = next((h for h in hits if "not supported for now" in h.evidence.text), hits[0])
    text = hit.line.text if hit.line is not None else hit.evidence.text
    arch = hit.groups.get("arch") or "the model's architecture"
    names = _ARCHS.findall(arch)
    listed = _SUPPORTED.search(text)
    inspected = any(w in t.text for tail in ctx.tails.values() for t in tail for w in _INSPECT)
    logged = next((m.group("error") for tail in ctx.tails.values() for t in tail
                   for m in [_INSPECT_LOGGED.search(t.raw)] if m), None)
    inspected = inspected or logged is not None
    headless = None if inspected else _headless(names)
    if headless is not None:
        return headless
    if names and listed and all(f"'{n}'" in listed.group(1) for n in names) or inspected:
        msg = (f"vLLM lists {arch} among the architectures it supports, yet refused it: its implementation failed to "
               f"import (the registry inspects each model class in a subprocess and logs 'Error in inspecting model "
               f"architecture' with the real error above this line), which is a broken install or a package clash, "
               f"not a model vLLM lacks."
               + (f" The registry's own line shows it: `{logged}`." if logged else ""))
        fix = ("Read the registry's error above this line (the subprocess's traceback), or run `python -c \"import "
               "vllm.model_executor.models\"` and `python -m vllm.model_executor.models.registry` in the run's "
               "environment; reinstall vllm with the torch and transformers versions it pins.",)
        if any(_WINDOWS.match(f.path) for e in ctx.exceptions for f in e.frames) or \
                any(_WINDOWS.search(t.text) for tail in ctx.tails.values() for t in list(tail)[:40]):
            msg += " The paths are Windows paths: vLLM's CUDA builds run on Linux only."
            fix = ("vLLM does not run on native Windows: run it under WSL2 or in a Linux container (the vLLM Docker "
                   "image).",) + fix
        return Diagnosis(message=msg, fix=fix, category="import-or-dependency-error",
                         title="vLLM refused an architecture it lists: the model's implementation failed to import")
    if listed and not listed.group(1).rstrip().endswith(("]", ")")):
        # the list was cut by the paste: its absence from what is shown proves nothing
        return Diagnosis(message=f"vLLM refused {arch}; the list of supported architectures after it is cut in this "
                                 f"paste and does not show it: most likely the model is newer than the installed vLLM "
                                 f"(a listed architecture whose implementation failed to import gives the same words, "
                                 f"after the registry's 'Error in inspecting model architecture').")
    return Diagnosis()
