"""What a weight name that vLLM's loader refused says about the checkpoint: read from the name itself (the KeyError's
key), so that a report states the one reading the name supports instead of a list of usual causes.

Each reading is backed by vLLM's loader source:
- every model file's ``load_weights`` looks a checkpoint name up with ``param = params_dict[name]`` (KeyError with the
  name when the model class defines no such parameter);
- tied output head: vLLM 0.2-0.3 gemma.py / llama.py looked ``lm_head.weight`` up like any other name; later files
  skip it (``# lm_head is not used in vllm as it is tied with embed_token. To prevent errors, skip loading
  lm_head.weight.``);
- packed modules: ``stacked_params_mapping`` (``("gate_up_proj", "up_proj", 1)``, ``("qkv_proj", "v_proj", "v")``...)
  renames by substring, ``name = name.replace(weight_name, param_name)``: a checkpoint name that is already packed
  (``gate_up_proj``) contains ``up_proj`` and becomes ``gate_gate_up_proj``;
- MoE router: the router gate is a ``ReplicatedLinear`` built with ``quant_config=None`` in most MoE files
  (deepseek_v2.py, mixtral_quant.py, qwen2_moe.py before 0.10), so its quantisation tensors have no parameter;
  vLLM PR #22017 gave Qwen3-MoE's gate the quant config (public thread "PR #22017 break Qwen3 MoE GGUF loading"):
  whether the router is quantised is a property of the vLLM release and the quantiser together;
- quantisation tensors (GPTQ ``qweight``/``qzeros``/``scales``/``g_idx``, compressed-tensors ``weight_scale`` /
  ``input_scale`` / ``weight_packed``, Ascend ``deq_scale``, bitsandbytes ``absmax``/``quant_map``) exist as
  parameters only when the layer was built with the matching quantisation method;
- reward / classification heads (``score``, ``classifier``, ``v_head``) belong to other model classes than the
  generative one (transformers ``*ForSequenceClassification.score``, trl ``AutoModelForCausalLMWithValueHead.v_head``).
Pure: a string in, sentences out.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import lazyre


class Reading(NamedTuple):
    kind: str
    why: str
    fix: str


_KEY = lazyre.compile(r"^'?([\w.]+?)'?$")
# an OCR'd paste reads `lm_head` as `Im_head` or `1m_head`
_TIED_HEAD = lazyre.compile(r"(?:^|\.)[lI1]m_head\.weight$")
_DOUBLED = lazyre.compile(r"(?:^|\.)(?P<once>[a-z]+)_(?P=once)_\w*proj\b|(?:^|\.)qkqkv_proj\b")
_QUANT = lazyre.compile(r"\.(qweight|qzeros|scales|g_idx|deq_scale|quant_bias|weight_scale(?:_inv|_2)?|input_scale"
                        r"|weight_packed|weight_shape|weight_zero_point|weight_offset|absmax|quant_map|quant_state"
                        r"[\w.]*)$")
_ROUTER = lazyre.compile(r"(?:^|\.)mlp\.gate\.")
_HEAD = lazyre.compile(r"^(?:[\w.]*\.)?(score|classifier|v_head|value_head|reward_head)\.(?:weight|bias)$")


def reading(message: str) -> Reading | None:
    """The reading of a KeyError's key that names a model tensor, or None when the name says nothing specific."""
    m = _KEY.match(message.strip())
    if m is None:
        return None
    key = m.group(1)
    if _TIED_HEAD.search(key):
        return Reading(
            "tied-head",
            "The refused name is the output head, `lm_head.weight`: the checkpoint stores the head as its own tensor "
            "while this vLLM model class defines no parameter of that name, as vLLM's model classes do for a model "
            "whose head is tied to its input embeddings (a merged or re-saved checkpoint of such a model; later vLLM "
            "model files skip the name).",
            "Save the checkpoint without a separate `lm_head.weight` (tied embeddings: drop the tensor, or re-save "
            "with tie_word_embeddings true), or use a vLLM release whose model file skips the tied head.")
    doubled = _DOUBLED.search(key)
    if doubled:
        return Reading(
            "packed-twice",
            f"The refused name holds a packed module's name twice (`{doubled.group(0).lstrip('.')}`): vLLM's loader "
            f"renames the transformers names it packs by substring (`up_proj` -> `gate_up_proj`, `v_proj` -> "
            f"`qkv_proj`), so a checkpoint whose names are already packed is renamed a second time. The checkpoint was "
            f"exported with packed names (by a converter or quantiser for another engine or release) that this loader "
            f"does not expect.",
            "Load a checkpoint with the transformers names (gate_proj / up_proj, q_proj / k_proj / v_proj) that the "
            "loader packs itself, or the converter and vLLM (or vLLM plugin) releases made for each other.")
    quant = _QUANT.search(key)
    if quant and _ROUTER.search(key):
        return Reading(
            "router-quantised",
            f"The refused name is a quantisation tensor (`{quant.group(1)}`) of the MoE router (`mlp.gate`): the "
            f"checkpoint's quantiser quantised the router while the model class of this vLLM release has no such "
            f"tensor for it (its gate is built unquantised or with another method; vLLM changed this per model "
            f"between releases).",
            "Use a quantised checkpoint that keeps the MoE router (`mlp.gate`) in full precision (most GPTQ/AWQ "
            "recipes exclude it), or a vLLM release whose model file quantises the gate as this checkpoint does.")
    if quant:
        layer = key[:quant.start()]
        return Reading(
            "quantised-layer",
            f"The refused name is a quantisation tensor (`{quant.group(1)}`) of `{layer}`: the engine built that "
            f"layer without the quantisation the checkpoint used (the engine's quantisation method differs from the "
            f"checkpoint's quantization_config, or the quantiser covered a layer this model class keeps unquantised).",
            "Compare the checkpoint's quantization_config (config.json) with the engine's quantisation option and "
            "the installed vLLM's support for that method on this architecture; use a checkpoint quantised for it.")
    head = _HEAD.search(key)
    if head:
        return Reading(
            "head",
            f"The refused name is a `{head.group(1)}` head: a reward, value or sequence-classification checkpoint, "
            f"which the generative model class vLLM builds does not have.",
            "Serve the checkpoint with the task or runner it was saved for (a reward / classification model), or "
            "give the engine the generative (policy) checkpoint instead.")
    return None
