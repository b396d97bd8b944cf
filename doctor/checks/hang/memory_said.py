"""The cause of an out-of-GPU-memory that a paste describes in words, checked against what the paste shows of the run:
the model (its parameter count from its name), how it is trained (full, LoRA, 4-bit), how its states are sharded
(DeepSpeed ZeRO stage, offload), over how many GPUs of which memory. Pure: the run's settings and the paste's texts in,
one reading out.

The arithmetic is a floor, so that a claim that the run cannot fit holds whatever the paste leaves out: per parameter, a
full fine-tune keeps its bf16 weights (2 bytes), their gradients (2) and AdamW's two moments (4 in bf16; 2 for an 8-bit
optimizer); under DeepSpeed the optimizer keeps fp32 master weights and moments (12 bytes), partitioned over the ranks
from ZeRO-1 on, gradients too from ZeRO-2, weights too at ZeRO-3 (the ZeRO paper's accounting, DeepSpeed's docs
"Memory requirements"); offload moves the partitioned optimizer (and at ZeRO-3 the weights) to the CPU. LoRA keeps the
frozen base (2 bytes a parameter in bf16, 1 in 8-bit, 0.5 in 4-bit) and a few million trainable ones. Activations,
the CUDA context and a reference model come on top: the floor leaves them out."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import lazyre
from ...classify.run_context import ZERO3
from ...values import as_number
from ..memory._facts import _bool, params_b, zero_stage
from ..memory.fsdp_levers import FRAMEWORKS as FSDP_FRAMEWORKS
from ..memory.fsdp_levers import offload_keys as fsdp_offload_keys
from ..memory.own_levers import own_levers
from .cards_said import cards_said

# the model named by the run's settings (each framework's flag for it)
_MODEL_KEYS = ("model", "model_name_or_path", "pretrain", "actor_rollout_ref.model.path", "model_id_or_path",
               "model_type")
# a model name with its size in a sentence: "qwen3-30b-a3b", "Qwen2.5-7B-Instruct", "llama3 8B", "70B模型"
_NAMED_MODEL = lazyre.compile(r"(?i)(?<![\w.])((?:qwen|llama|mistral|mixtral|gemma|glm|chatglm|deepseek|phi|yi|internlm|"
                              r"baichuan|olmo|falcon|vicuna|codellama|starcoder|minicpm|seed|kimi|gpt-oss)[\w.-]*?"
                              r"[-_ ]?\d+(?:\.\d+)?[bB](?:[-_][\w.-]+)?)")
_FULL_WORDS = lazyre.compile(r"(?i)全参|全量|full[- _](?:parameter|param|fine[- ]?tun|ft|finetun|sft|training)|"
                             r"\bfull\b(?= (?:GRPO|DPO|PPO|SFT|model))")
_LORA_WORDS = lazyre.compile(r"(?i)(?<![a-z])(?:q?lora|peft)(?![a-z])")
_FOUR_BIT = lazyre.compile(r"(?i)(?<![a-z0-9])(?:qlora|4[- _]?bit|bnb[-_]4bit|nf4|int4)(?![a-z0-9])")
_ZERO_LOW = lazyre.compile(r"(?i)(?<![A-Za-z0-9_])(?:zero|ds_z)[-_ ]?(?:stage[-_ ]?)?([12])(?![0-9])")
# offload of the optimizer or the weights (DeepSpeed's config names, OpenRLHF's --adam_offload, a person's "cpu
# offload"); not another model's offload switch (OpenRLHF's --ref_reward_offload moves the frozen models only)
_OFFLOAD = lazyre.compile(r"(?i)(?:adam|zero[-_]?[23]|ds_z[23]|z[23])[-_]offload|offload[-_](?:optimizer|param)|"
                          r"(?<![a-z_])offload(?![a-z_])")
_NOT_BEFORE = lazyre.compile(r"(?i)(?:\bno|\bwithout|\bnot|不|没|未)\W{0,3}(?:\S{1,12}\s?)?$")
# a setting that trains an adapter: its name holds one of these
_ADAPTER_KEYS = ("lora", "peft", "tuner", "finetuning_type", "train_type", "adapter")
GIB = 1024 ** 3


@dataclass(frozen=True)
class MemoryReading:
    """The floor of the model states each GPU holds, against one card's memory."""
    sentence: str        # the numbers and what they make
    fix: str             # the levers, in the framework's own spelling, first the one that brings the floor under
    exceeds: bool        # the floor alone is more than the card holds


def _model(args: dict[str, Any], texts: list[str]) -> tuple[str, float] | None:
    for k in _MODEL_KEYS:
        v = args.get(k)
        if isinstance(v, str) and (billions := params_b(v)):
            return v.rstrip("/").split("/")[-1], billions
    for t in texts:
        m = _NAMED_MODEL.search(t)
        if m and (billions := params_b(m.group(1))):
            return m.group(1), billions
    return None


def _said(rx: Any, texts: list[str]) -> bool:
    """A word the texts name, not only deny ("without offload", "没有开offload")."""
    return any(not _NOT_BEFORE.search(t[max(0, m.start() - 16):m.start()]) for t in texts for m in rx.finditer(t))


def _tuner(args: dict[str, Any], texts: list[str], framework: str | None) -> tuple[str | None, float, str | None]:
    """(full | lora | None, bytes a frozen base parameter takes, why the tuner is assumed: None when the settings or
    the words say it)."""
    quant = as_number(args.get("quantization_bit") or args.get("quant_bits"))
    four = quant == 4 or args.get("load_in_4bit") is True or _said(_FOUR_BIT, texts)
    base = 0.5 if four else 1.0 if quant == 8 or args.get("load_in_8bit") is True else 2.0
    v = str(args.get("finetuning_type") or args.get("tuner_type") or args.get("train_type") or args.get("sft_type")
            or "").lower()
    if v == "full":
        return "full", base, None
    if v in ("lora", "qlora", "dora") or args.get("use_peft") is True or four:
        return "lora", base, None
    if _said(_FULL_WORDS, texts):
        return "full", base, None
    if _said(_LORA_WORDS, texts):
        return "lora", base, None
    # LLaMA-Factory's finetuning_type and ms-swift's tuner default to LoRA; a trl or transformers run trains every
    # weight unless it is given a peft config
    if framework in ("llamafactory", "ms-swift") and args:
        name = "LLaMA-Factory" if framework == "llamafactory" else "ms-swift"
        return "lora", base, f"{name} trains LoRA unless told otherwise, and the settings read do not say"
    # the others (trl, transformers, open-r1, OpenRLHF, verl: lora_rank 0) train every weight unless a setting asks
    # for an adapter: a configuration read without one is a full fine-tune
    if framework != "ms-swift" and "rlhf_type" not in args and len(args) >= 3 and \
            not any(a in k for k in args for a in _ADAPTER_KEYS):
        return "full", base, "none of the settings read asks for an adapter, and this framework then trains every weight"
    return None, base, None


def _zero(args: dict[str, Any], texts: list[str], framework: str | None = None) -> tuple[int, bool] | None:
    """(the ZeRO stage the states are sharded as, whether they are offloaded); None when the reading cannot say. verl
    and EasyR1 train with FSDP, full sharding over every GPU by default (verl's fsdp_config.fsdp_size -1, EasyR1's
    worker.actor.fsdp.enable_full_shard): the accounting of ZeRO-3; offload is theirs only with both keys on, and
    one key alone is a split the floor does not model."""
    if framework in FSDP_FRAMEWORKS:
        keys = fsdp_offload_keys(framework)
        on = [_bool(args.get(k)) is True for k in keys]
        if any(on) and not all(on):
            return None
        return 3, all(on)
    ds = args.get("deepspeed")
    stage, off = zero_stage(ds if isinstance(ds, str) else None)
    stage = stage if stage is not None else int(as_number(args.get("zero_stage")) or 0) or None
    off = off or args.get("adam_offload") is True or str(args.get("offload_optimizer")).lower() == "true"
    if stage is None:
        if any(ZERO3.search(t) for t in texts):
            stage = 3
        else:
            low = next((m for t in texts for m in [_ZERO_LOW.search(t)] if m), None)
            stage = int(low.group(1)) if low else 0
    return stage, off or _said(_OFFLOAD, texts)


def states_floor(params: float, tuner: str, base_bytes: float, zero: int, offload: bool, world: int,
                 optim_bytes: float) -> float:
    """Bytes of model states each GPU holds at least (see the module's docstring)."""
    n = max(world, 1)
    if tuner != "full":
        return 0.0 if zero == 3 and offload else params * base_bytes / (n if zero == 3 else 1)
    if zero == 0:
        return params * (2 + 2 + optim_bytes)
    weights = 0.0 if zero == 3 and offload else params * 2 / (n if zero == 3 else 1)
    grads = params * 2 / (n if zero >= 2 else 1)
    optim = 0.0 if offload else params * 12 / n
    return weights + grads + optim


def _levers(framework: str | None, tuner: str, zero: int, offload: bool, world: int, four_bit: bool) -> list[str]:
    """The changes that lower the floor, in the order they free the most, spelled as the framework takes them."""
    spell = _SPELLING.get(framework or "", _SPELLING[""])
    out = []
    if zero < 3 and world > 1:
        out.append(spell["zero3"])
    if not offload:
        out.append(spell["offload"])
    if tuner == "full":
        out.append(spell["lora"])
    elif not four_bit:
        out.append(spell["4bit"])
    return out


_SPELLING: dict[str, dict[str, str]] = {
    "ms-swift": {"zero3": "`--deepspeed zero3` (weights, gradients and optimizer states sharded over the GPUs)",
                 "offload": "`--deepspeed zero3_offload` (optimizer states and weights in CPU memory)",
                 "lora": "`--train_type lora` (`--tuner_type lora` from ms-swift 4) instead of full",
                 "4bit": "a 4-bit base (`--quant_method bnb --quant_bits 4`, QLoRA)"},
    "llamafactory": {"zero3": "`deepspeed: examples/deepspeed/ds_z3_config.json` (weights, gradients and optimizer "
                              "states sharded over the GPUs)",
                     "offload": "`deepspeed: examples/deepspeed/ds_z3_offload_config.json` (optimizer states and "
                                "weights in CPU memory)",
                     "lora": "`finetuning_type: lora` instead of full",
                     "4bit": "`quantization_bit: 4` (QLoRA: the frozen base in 4 bits)"},
    "": {"zero3": "DeepSpeed ZeRO-3 (e.g. `accelerate launch --config_file` a ZeRO-3 config such as trl's "
                  "examples/accelerate_configs/deepspeed_zero3.yaml): weights, gradients and optimizer states sharded "
                  "over the GPUs",
         "offload": "ZeRO-3 with `offload_optimizer_device: cpu` and `offload_param_device: cpu` in that config "
                    "(optimizer states and weights in CPU memory)",
         "lora": "a LoRA adapter (a peft `LoraConfig` given as `peft_config`) instead of training every weight",
         "4bit": "a 4-bit base (`BitsAndBytesConfig(load_in_4bit=True)`, QLoRA)"},
}


def memory_reading(args: dict[str, Any], texts: list[str], framework: str | None,
                   world_read: int | None) -> MemoryReading | None:
    """The floor of model states per GPU against the card the paste names, or None when the paste does not give the
    model's size and the card's memory, or does not say how the model is trained and its base alone fits."""
    model = _model(args, texts)
    cards = cards_said(texts)
    if model is None or cards is None or cards.gib is None:
        return None
    name, billions = model
    params = billions * 1e9
    tuner, base, tuner_assumed = _tuner(args, texts, framework)
    sharding = _zero(args, texts, framework)
    if sharding is None:
        return None
    zero, offload = sharding
    world = world_read or cards.count
    if world is None and (zero >= 1 and tuner == "full" or zero == 3):
        return None  # the shards' size depends on a count the paste does not give
    world = world or 1
    optim = 2.0 if "8bit" in str(args.get("optim") or "") else 4.0
    floor = states_floor(params, tuner or "lora", base, zero, offload, world, optim)
    gib = floor / GIB
    if gib <= cards.gib * 0.9:
        # the states leave room: the paste's numbers do not place the cause there; a setting that leaves
        # activations unbounded may
        return _activations(args, texts, framework, name)
    how = {"full": "a full fine-tune", "lora": "a LoRA run"}.get(tuner or "", "the frozen model alone")
    base_said = {0.5: " on a 4-bit base", 1.0: " on an 8-bit base"}.get(base, "")
    gpus = f"{world} GPU{'s' if world > 1 else ''}"
    # (without ZeRO the floor does not depend on the count: one the paste does not give is not said)
    fsdp = framework in FSDP_FRAMEWORKS
    shard = (f"{'FSDP full sharding' if fsdp else f'ZeRO-{zero}'}{' with offload' if offload else ''} over {gpus}" if zero else
             f"no ZeRO sharding read ({gpus})" if world_read or cards.count else "no ZeRO sharding read")
    count = "" if world_read or cards.count is None else " (the count the words give)"
    one = (" ZeRO-3 over one GPU shards nothing: each stage divides by the number of ranks."
           if zero == 3 and world == 1 and not offload else "")
    sentence = (f"{name} has {billions:g}B parameters (read from its name); {how}{base_said} under {shard}{count} "
                f"keeps at least {gib:.0f} GiB of model states on each GPU (computed: weights, gradients and "
                f"optimizer states, before activations), more than {'the' if gib > cards.gib else '90% of the'} "
                f"{cards.described()} holds.{one}")
    if tuner_assumed:
        sentence += f" Assumed: {how} ({tuner_assumed})."
    if fsdp:   # their own keys with this run's values (memory/fsdp_levers.py)
        fix = "Bring the model states under the card's memory, in the framework's own keys: " + " ".join(
            own_levers(framework, args) or [])
    else:
        fix = (f"Bring the model states under the card's memory: "
               f"{'; or '.join(_levers(framework, tuner or 'lora', zero, offload, world, base == 0.5))}.")
    return MemoryReading(sentence, fix, gib > cards.gib)


_PIXELS = lazyre.compile(r"(?i)max_pixels|image_max_pixels|MAX_PIXELS")
_VISION = lazyre.compile(r"(?i)[-_]vl(?:\b|[-_])|vision|omni|internvl|llava|minicpm-?v|glm-?4v")


def _activations(args: dict[str, Any], texts: list[str], framework: str | None, name: str) -> MemoryReading | None:
    """A setting the paste shows that leaves a step's activations unbounded: images of a vision-language model with
    no pixel cap in an ms-swift run (its templates encode an image at up to the processor's max_pixels, 12845056 for
    Qwen2-VL; the multimodal GRPO guide caps it with MAX_PIXELS), or gradient checkpointing switched off."""
    if framework == "ms-swift" and _VISION.search(name) and not any(_PIXELS.search(t) for t in texts) and \
            not any(_PIXELS.search(k) for k in args):
        return MemoryReading(
            f"{name} is a vision-language model and the paste sets no pixel cap (MAX_PIXELS): ms-swift then encodes "
            f"each image at up to the processor's default size (12845056 pixels for Qwen2-VL, thousands of tokens "
            f"an image), and those tokens' activations exceed the memory.",
            "Set `MAX_PIXELS=262144` in the launch environment (the value of ms-swift's multimodal GRPO guide; "
            "VIDEO_MAX_PIXELS and FPS_MAX_FRAMES for videos): image tokens shrink with it.", False)
    if _checkpointing_off(args):
        flag = ("`disable_gradient_checkpointing: false`" if "disable_gradient_checkpointing" in args
                else "`--gradient_checkpointing true`")
        return MemoryReading(
            "The paste switches gradient checkpointing off: every layer's activations stay in memory until the "
            "backward pass, several times what a checkpointed step keeps.",
            f"{flag}: activations are recomputed in the backward pass instead of stored.", False)
    return None


def _checkpointing_off(args: dict[str, Any]) -> bool:
    """The settings switch gradient checkpointing off (trl/transformers' flag, or LLaMA-Factory's negative one)."""
    return str(args.get("gradient_checkpointing")).lower() == "false" or args.get("disable_gradient_checkpointing") is True


_LENGTH_KEYS = ("max_completion_length", "cutoff_len", "max_seq_length", "max_length", "max_len")


def levers_left(args: dict[str, Any], texts: list[str], framework: str | None) -> str | None:
    """The generic memory levers with the run's own values, leaving out each one the paste shows already pulled (a
    batch of 1, gradient checkpointing on, LoRA, ZeRO-3): None when the paste shows no settings (three or more)."""
    # OpenRLHF's flags say its defaults where no value was read; verl's and EasyR1's keys need the paste's settings
    own = own_levers(framework, args) if framework == "openrlhf" or len(args) >= 3 else None
    if own is not None:
        where = "OpenRLHF's own flags" if framework == "openrlhf" else "these settings, in the framework's own keys"
        return f"Meanwhile, the levers in {where}: " + " ".join(own)
    if len(args) < 3:
        return None
    out = []
    b = as_number(args.get("per_device_train_batch_size"))
    if b is not None and b > 1:
        out.append(f"per_device_train_batch_size {b:g} -> {max(1, int(b) // 2)} with gradient_accumulation_steps "
                   f"doubled")
    elif b is None:
        out.append("a smaller per-device batch with more gradient accumulation")
    ckpt = str(args.get("gradient_checkpointing")).lower()
    on_by_default = framework in ("ms-swift", "llamafactory")  # both turn it on unless told not to
    if _checkpointing_off(args) or (ckpt == "none" and not on_by_default):
        out.append("gradient checkpointing on")
    length = next(((k, as_number(args[k])) for k in _LENGTH_KEYS if as_number(args.get(k))), None)
    if length is not None:
        out.append(f"a shorter {length[0]} (now {length[1]:g})")
    tuner = _tuner(args, texts, framework)[0]
    if tuner != "lora":
        out.append("LoRA instead of full fine-tuning")
    zero, offload = _zero(args, texts) or (0, False)
    if zero < 3:
        out.append("DeepSpeed ZeRO-3")
    elif not offload:
        out.append("ZeRO-3's CPU offload of the optimizer and weights")
    util = as_number(args.get("vllm_gpu_memory_utilization") or args.get("gpu_memory_utilization"))
    colocated = str(args.get("vllm_mode", "colocate")).lower() == "colocate"
    if str(args.get("use_vllm")).lower() == "true" and util is not None:
        out.append(f"a smaller vLLM memory share if it shares the training GPUs (vllm_gpu_memory_utilization now "
                   f"{util:g})")
    elif str(args.get("use_vllm")).lower() == "true" and colocated:
        # unset, the share is the release's default (ms-swift 4.6 rlhf_trainers/args_mixin.py: 0.9; trl's differs
        # by release: 0.9 before, 0.3 in 0.29), and the colocated engine keeps it through the training step unless
        # it sleeps (ms-swift's sleep_level, 0 by default)
        if framework == "ms-swift":
            asleep = (as_number(args.get("sleep_level")) or 0) >= 1
            out.append("a smaller vLLM memory share (vllm_gpu_memory_utilization, unset here: ms-swift's default 0.9, "
                       "assumed)" + ("" if asleep else " and sleep_level 1, which frees the engine's memory during the "
                                                      "training step"))
        else:
            out.append("a smaller vLLM memory share if it shares the training GPUs (vllm_gpu_memory_utilization, "
                       "unset here: the release's default)")
    if not out:
        return None
    return ("Meanwhile, the levers this paste's settings leave, in the order they free GPU memory for training: "
            + ", ".join(out) + ".")


__all__ = ["MemoryReading", "levers_left", "memory_reading", "states_floor"]
