"""The fixes for a GPU OOM: a ladder of levers ordered by what this run has NOT already set (seed 03, ms-swift GRPO
docs "colocate-mode OOM": vllm_gpu_memory_utilization, sleep_level, offload_model/optimizer, ZeRO-3, tensor
parallel, move_model_batches, LoRA, batch/length, gradient checkpointing, MAX_PIXELS, expandable segments), each
with the flag spelling of the version at hand."""
from __future__ import annotations

from typing import Any

from ...swift.framework import from_text
from ...swift.trainer_kind import GROUP_KINDS
from ...values import as_number
from .._numbers import assumptions, computed, read_or
from ._facts import DOC_MAX_PIXELS, Facts, fmt_gib


def _round_down(x: float, step: float = 0.05) -> float:
    return max(step, int(x / step + 1e-9) * step)


def _fmt_util(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def training_state_gb(f: Facts, zero: int | None, offload: bool) -> float | None:
    """Weights + gradients + Adam states per GPU (bf16 weights, fp32 master and moments: 16 bytes/param for
    full fine-tuning; 2 bytes/param of frozen base for LoRA), before activations."""
    p = f.params
    n = max(f.world or 1, 1)
    if p is None:
        return None
    full = (f.tuner or "lora").lower() == "full"
    z = zero or 0
    if not full:
        return 2 * p / n if z == 3 else 2 * p
    if z == 3:
        return 16 * p / n if not offload else 4 * p / n
    if z == 2:
        return 2 * p + (2 * p + (0 if offload else 12 * p)) / n
    if z == 1:
        return 4 * p + 12 * p / n
    return 16 * p


def _gb(x: float) -> str:
    return f"{x:.0f} GB" if x >= 10 else f"{x:.1f} GB"


def _llamafactory(f: Facts) -> bool:
    """The run is LLaMA-Factory's: its launch (framework.py's own tells of it), or its own arguments."""
    return from_text(f.run.command_texts)[0] == "llamafactory" or "finetuning_type" in f.run.args


def _mp_advice(f: Facts, cut: bool = False) -> str | None:
    if not f.vl and not f.max_pixels_log:
        return None
    mp = f.env.get("MAX_PIXELS") or (str(f.run.args.get("max_pixels")) if f.run.args.get("max_pixels") else None)
    if mp is None and f.max_pixels_log and f.max_pixels_log[1]:
        mp = str(f.max_pixels_log[0])
    vid = {k: f.env[k] for k in ("VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES") if k in f.env}
    if mp is None and _llamafactory(f):
        # LLaMA-Factory caps images in its own arguments (hparams/model_args.py image_max_pixels, default 768*768;
        # video_max_pixels), not through ms-swift's MAX_PIXELS variable
        lf = as_number(f.run.args.get("image_max_pixels"))
        if lf is not None and lf <= DOC_MAX_PIXELS:
            return None   # already capped at or below the value advised
        now = f"now {lf:g}" if lf is not None else "LLaMA-Factory's default 589824"
        return (f"{f.model or 'This model'} is a vision-language model: each image is encoded at up to "
                f"image_max_pixels ({now}). Set `image_max_pixels: {DOC_MAX_PIXELS}` in the training YAML (and "
                f"`video_max_pixels` for videos): fewer image tokens and smaller vision-encoder activations.")
    if mp is None:
        default = (f" (the log shows the default max_pixels {f.max_pixels_log[0]}, "
                   f"{f.max_pixels_log[0] / DOC_MAX_PIXELS:.0f}x more)" if f.max_pixels_log else "")
        return (f"{f.model or 'This model'} is a vision-language model and MAX_PIXELS is not set: each image is encoded at up "
                f"to the template's default size{default}. Set MAX_PIXELS={DOC_MAX_PIXELS} (the value the ms-swift multimodal GRPO "
                f"guide uses against OOM) in the launch environment" + (", and VIDEO_MAX_PIXELS / FPS_MAX_FRAMES for "
                                                                         "videos." if not vid else "."))
    try:
        if int(mp) > DOC_MAX_PIXELS:
            return (f"MAX_PIXELS={DOC_MAX_PIXELS} (the ms-swift multimodal GRPO guide's value against OOM) instead of "
                    f"{mp}: image tokens and vision-encoder activations shrink about {int(mp) / DOC_MAX_PIXELS:.0f}x.")
    except ValueError:
        return None
    return None


def tuner_advice(f: Facts) -> str | None:
    if (f.tuner or "").lower() != "full":
        return None
    flag = f.tuner_flag if f.framework == "swift" else "peft_config (LoRA)"
    extra = ""
    if f.params:
        cur = training_state_gb(f, f.zero, f.offload_ds)
        n_ = f.world_num()
        n = max(n_.value, 1)
        per = (f", ≈ {_gb(cur)} per GPU with this run's sharding over {n_} GPU{'s' if n > 1 else ''}"
               + assumptions(("world size", n_), why="not in the inputs")) if cur else ""
        extra = (f" (full fine-tuning of {f.params:g}B parameters carries ≈ {16 * f.params:.0f} GB of weights, "
                 f"gradients and Adam states{per}; LoRA trains a few million parameters on a frozen "
                 f"{2 * f.params:.0f} GB base)")
    if f.framework == "swift":
        return f"--{flag} lora instead of full{extra}."
    return f"Train a LoRA adapter (peft_config) instead of the full model{extra}."


def ds_advice(f: Facts, for_vllm: bool, total: float | None = None) -> str | None:
    if f.framework == "trl" and f.ds_raw is None:
        return None
    if f.ds_raw is None and f.zero == 3 and f.zero_read:
        # ZeRO-3 read from the log's words or a pasted DeepSpeed config: it already shards the states, so more
        # ranks shrink those, never the activations each GPU holds for its own micro-batch
        return (f"The log's words name ZeRO-3 ({f.zero_read}); if the run uses it, it already shards parameters, "
                f"gradients and optimizer states over the ranks, but each GPU still holds the activations of its own micro-batch at the full "
                f"sequence length and the parameters ZeRO-3 gathers for the layer it computes: more GPUs do not "
                f"lower those. Lower stage3_max_live_parameters and stage3_prefetch_bucket_size (e.g. 1e8) in the "
                f"DeepSpeed config, and offload the optimizer and parameters to the CPU (zero_optimization's "
                f"offload_optimizer / offload_param with device cpu) if the config does not yet.")
    if f.ds_raw is None and not f.run.args:
        return ("--deepspeed zero3 if the run does not use it yet (zero3_offload on a single GPU): ZeRO-3 shards "
                "parameters, gradients and optimizer states over the ranks (no DeepSpeed setting was read from the inputs).")
    z, off = f.zero, f.offload_ds
    n_ = f.world_num()
    n = n_.value
    cur = training_state_gb(f, z, off)
    if z is None or z < 3:
        target = "zero3"
        if n <= 1:
            target = "zero3_offload"  # nothing to shard on one GPU: only CPU offload helps
        new = training_state_gb(f, 3, target.endswith("offload"))
        why = ("shards parameters, gradients and optimizer states over the ranks" if n > 1 else
               "on a single GPU only CPU offload moves states out of GPU memory")
        now = f"--deepspeed {f.ds_raw}" if f.ds_raw else "no DeepSpeed"
        est = ""
        if cur is not None and new is not None and new >= 0.9 * cur:
            return None   # by this run's own numbers the change frees next to nothing: no lever
        if cur is not None and new is not None:
            over = f", more than the {fmt_gib(total)} GPU" if total and cur > total else ""
            est = (f" (weights + gradients + Adam states ≈ {_gb(cur)}{over} -> ≈ {_gb(new)} per GPU for "
                   f"{f.params:g}B {(f.tuner or 'lora').lower()}{'' if f.tuner else ' (assumed)'} on {n_} "
                   f"GPU{'s' if n > 1 else ''}" + assumptions(("world size", n_), why="not in the inputs"))
            est += ", leaving that much more room for vLLM)" if for_vllm else ")"
        return f"{f.ds_flag(target)} instead of {now}: ZeRO-3 {why}{est}."
    if z == 3 and not off:
        return (f"{f.ds_flag('zero3_offload')} (this run already uses ZeRO-3; the offload variant keeps optimizer "
                f"states and parameters in CPU memory, slower but much smaller on the GPU).")
    return None


def batch_advice(f: Facts) -> str | None:
    b = f.b
    if b is None and not f.run.args:
        return (f"Halve per_device_train_batch_size and double gradient_accumulation_steps: the same {f.samples} per "
                "step, half the activations at a time (no batch setting was read from the inputs).")
    if not b or b <= 1:
        return None
    nb = b // 2
    mult = "steps_per_generation" if (f.run.cli.get("steps_per_generation") is not None and f.has("steps_per_generation")) \
        else "gradient_accumulation_steps"
    ga_ = read_or(f.run.int_arg(mult) or f.ga, 1)
    cur_ga = ga_.value
    nmult = cur_ga * b // nb if (cur_ga * b) % nb == 0 else cur_ga * 2
    return (f"--per_device_train_batch_size {nb} with --{mult} {nmult} (was {b} x {ga_}): the same "
            f"{computed(b * cur_ga, ga_)} {f.samples} per rank and step, half the activations at a time"
            f"{assumptions((mult, ga_), why='the default, not in the inputs')}.")


def _llamafactory_levers(f: Facts) -> list[str]:
    """LLaMA-Factory's own levers, in its argument names (hparams/data_args.py cutoff_len, model_args.py
    quantization_bit): the sequence length it cuts samples at, and a 4-bit base under LoRA."""
    if not _llamafactory(f):
        return []
    out = []
    cut = as_number(f.run.args.get("cutoff_len"))
    if cut is not None and cut >= 1024:
        out.append(f"`cutoff_len: {int(cut) // 2}` (was {int(cut)}) in the training YAML: activations and logits grow "
                   f"with the sequence length it cuts samples at.")
    if (f.tuner or "").lower() == "lora" and f.run.args.get("quantization_bit") is None:
        out.append("`quantization_bit: 4` in the training YAML (QLoRA: the frozen base in 4 bits, about a quarter of "
                   "its bf16 memory).")
    return out


def length_advice(f: Facts) -> str | None:
    mc = f.max_completion
    if mc is None and not f.run.args and f.trainer is not None and f.trainer not in GROUP_KINDS:
        # a supervised or preference run has no completions of its own: its sequence length is the lever
        return ("A shorter maximum sequence length (max_length, cutoff_len or max_seq_length, as the framework names "
                "it): activations and logits grow with it (no value of it was read from the inputs).")
    if mc is None and not f.run.args:
        return ("A shorter max_completion_length: activations and logits grow linearly with the completion length "
                "(no value of it was read from the inputs).")
    if f.framework == "swift" and mc is None:
        mc = 512  # ms-swift default
    if not mc or mc < 1024:
        return None
    return (f"--max_completion_length {mc // 2} (was {mc}): activations and logits grow linearly with the "
            f"completion length (ms-swift GRPO best practices).")


def ckpt_advice(f: Facts) -> str | None:
    if f.grad_ckpt is False or (f.framework == "trl" and f.grad_ckpt is None):
        return ("--gradient_checkpointing true: recompute activations in the backward pass instead of storing them"
                + (" (off by default in trl)." if f.framework == "trl" and f.grad_ckpt is None else "."))
    return None


def beta_advice(f: Facts) -> str | None:
    # the reference copy that beta 0 drops is GRPO's (a DPO run needs its reference whatever beta is)
    if f.framework != "swift" or (f.tuner or "").lower() != "full" or f.beta == 0 or \
            (f.trainer is not None and f.trainer not in GROUP_KINDS):
        return None
    size = f" (≈ {2 * f.params:.0f} GB in bf16)" if f.params else ""
    return (f"--beta 0 removes the KL term and with it the second, frozen copy of the model that full-parameter "
            f"GRPO loads as reference{size}; beta is {f.beta if f.beta is not None else '0.04 (assumed: the default)'} now.")


def alloc_conf_advice(f: Facts, oom: dict[str, Any]) -> str | None:
    conf = f.env.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if "expandable_segments:True" in conf:
        return None
    un = oom.get("unalloc") or (oom.get("reserved", 0) - oom.get("by_torch", 0) if oom.get("reserved") else None)
    why = ""
    req = oom.get("alloc")
    if un and req and un < req:
        why = (f" Only {fmt_gib(un)} were reserved by PyTorch but unallocated, less than the {fmt_gib(req)} "
               f"requested: this alone will not make room.")
    elif un and un > 0.5:
        why = f" {fmt_gib(un)} were reserved by PyTorch but unallocated (fragmentation)."
    # the FAQ is ms-swift's own page: cited only in a run shown to be ms-swift
    src = "ms-swift FAQ" if f.framework == "swift" and f.known else "PyTorch memory docs"
    return f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch environment ({src}).{why}"


def util_advice_training(f: Facts, total: float | None) -> list[str]:
    """Colocated vLLM shares the GPU with training: its share and whether it sleeps during the training step."""
    out = []
    if not f.colocate:
        return out
    if (f.sleep or 0) == 0 and f.has("sleep_level"):
        now = "0 here" if f.sleep == 0 and "sleep_level" in f.run.args else "not set: 0 (assumed), the default"
        out.append(f"--sleep_level 1: the colocated vLLM engine keeps its weights and KV cache on the GPU during the "
                   f"training step unless it is put to sleep (sleep_level {now}).")
    if f.util is not None and f.util > 0.5:
        share = f" = {fmt_gib(f.util * total)} of this {fmt_gib(total)} GPU" if total else " of each GPU"
        src = f.util_text()
        out.append(f"--vllm_gpu_memory_utilization 0.5 (was {src}): vLLM may claim "
                   f"{_fmt_util(f.util)} x total{share} for weights and KV cache, on the same GPU as the training state.")
    return out


def vllm_ladder(f: Facts, total: float | None, stage: str, message: str) -> list[str]:
    """Levers for an OOM inside a colocated vLLM engine, in the order the ms-swift GRPO docs give them, minus those
    already set."""
    out: list[str] = []
    cumem = "cumem" in message or "sleep-mode" in stage or "wake-up" in stage
    util = f.util
    if util is not None:
        if util < 0.2:
            weights = f" ({f.params:g}B in bf16 ≈ {2 * f.params / max(f.tp or 1, 1):.1f} GB per GPU" if f.params else ""
            if weights and total:
                weights += f" of the {fmt_gib(util * total)} that {_fmt_util(util)} x {fmt_gib(total)} gives vLLM)"
            elif weights:
                weights += ")"
            out.append(f"vllm_gpu_memory_utilization is only {_fmt_util(util)}: vLLM must fit its weights{weights} "
                       f"and a KV cache for at least one full sequence in that share. Raise it to 0.3-0.4 and make "
                       f"room with the levers below instead of shrinking vLLM further.")
        elif util > 0.5:
            share = f" ({fmt_gib(util * total)} of {fmt_gib(total)})" if total else ""
            src = f.util_text()
            new = 0.5 if util >= 0.7 else _round_down(util - 0.1)
            out.append(f"--vllm_gpu_memory_utilization {_fmt_util(new)} (was {src}{share}): in colocate "
                       f"mode vLLM's share and the training state must fit on the same GPU together.")
        # a moderate share (0.2-0.5) is left alone: the levers below free more than shrinking vLLM further
    if f.framework == "swift":
        if not cumem and (f.sleep or 0) == 0 and f.has("sleep_level"):
            out.append("--sleep_level 1: vLLM releases its weights and KV cache while the model trains.")
        missing = [x for x, v in (("--offload_model true", f.offload_model), ("--offload_optimizer true", f.offload_optimizer))
                   if not v]
        if missing and f.has("offload_model"):
            out.append(f"{' '.join(missing)}: move the training model{' and optimizer states' if len(missing) == 2 else ''} "
                       f"to CPU while vLLM generates (not set in the configuration seen).")
    ds = ds_advice(f, for_vllm=True)
    if ds:
        out.append(ds)
    if f.world and f.world > 1 and f.has("vllm_tensor_parallel_size") and (f.params is None or f.params >= 7):
        tp_ = read_or(f.tp, 1)
        tp = tp_.value
        local = f.run._env_int("NPROC_PER_NODE") or f.world
        cands = [d for d in range(tp + 1, local + 1) if f.world % d == 0 and local % d == 0]
        if cands:
            nt = cands[0] if not f.params or f.params < 14 else cands[min(len(cands) - 1, 1 if tp == 1 else 0)]
            per = (f": {f.params:g}B weights ≈ {2 * f.params / tp:.1f} -> {2 * f.params / nt:.1f} GB per GPU"
                   if f.params else "")
            out.append(f"--vllm_tensor_parallel_size {nt} (was {tp_}) splits vLLM's weights and KV cache over {nt} GPUs"
                       f"{per} (it must divide the world size {f.world}).")
    if f.vllm_max_len is None and f.framework == "swift" and f.has("vllm_max_model_len"):
        need = f.max_length or None
        val = f"{need}" if need else "<prompt length + max_completion_length>"
        out.append(f"--vllm_max_model_len {val}: unset, vLLM takes the model's full context window as its max_model_len "
                   f"and refuses to start unless the KV cache can hold one sequence that long; a shorter one lets it "
                   f"start in less memory.")
    if f.framework == "swift" and f.has("move_model_batches") and (f.zero == 3) and not f.run.args.get("move_model_batches") \
            and ((f.tuner or "").lower() == "full" or (f.params or 0) >= 14):
        out.append("--move_model_batches 8 (or more): under ZeRO-3 the weight sync gathers the whole model at once; "
                   "batches of layers keep the peak small.")
    mp = _mp_advice(f)
    if mp:
        out.append(mp)
    if f.has("vllm_mode") and f.framework == "swift":
        out.append("Or give vLLM its own GPUs: `swift rollout --model ...` on separate GPUs and train with "
                   "--vllm_mode server --vllm_server_host <host> --vllm_server_port <port>.")
    elif f.framework == "trl":
        out.append("Or give vLLM its own GPU: `trl vllm-serve --model ...` on a GPU outside the training processes and "
                   "use_vllm (trl 0.16-0.17; trl >= 0.18 also --vllm_mode server); trl 0.14-0.15: --num_processes one "
                   "less than the GPUs, vLLM takes the next one).")
    tu = tuner_advice(f)
    if tu:
        out.append(tu)
    return out


def training_ladder(f: Facts, oom: dict[str, Any]) -> list[str]:
    total = oom.get("total")
    out: list[str] = []
    un = oom.get("unalloc") or 0
    alloc = oom.get("alloc") or 0
    frag_first = un > 1 and alloc and un >= alloc
    if frag_first:
        a = alloc_conf_advice(f, oom)
        if a:
            out.append(a)
    mp = _mp_advice(f)
    if mp:
        out.append(mp)  # for a VL model the image size is the first lever (ms-swift multimodal GRPO guide)
    out.extend(util_advice_training(f, total))
    if not f.vllm_possible:
        pass
    elif not f.run.args and f.framework == "trl":
        out.append("If vLLM shares this GPU (vllm_mode colocate, trl >= 0.18): a lower vllm_gpu_memory_utilization "
                   "(e.g. 0.3) leaves the training step more room.")
    elif not f.run.args:
        out.append("If vLLM runs colocated with training (use_vllm, vllm_mode colocate): --sleep_level 1 and a lower "
                   "--vllm_gpu_memory_utilization (e.g. 0.5) free its share during the training step.")
    ds = ds_advice(f, for_vllm=False, total=total)
    if ds:
        out.append(ds)
    generic_lora = None if f.run.args or f.framework == "trl" else \
        "LoRA (--tuner_type lora; --train_type on ms-swift 3.x) if this is full-parameter training." if f.known else \
        ("LoRA (a peft LoraConfig) if this is full-parameter training: only the adapter's weights then carry "
         "gradients and optimizer states.")
    for adv in (tuner_advice(f) or generic_lora, batch_advice(f), length_advice(f), ckpt_advice(f), beta_advice(f)):
        if adv:
            out.append(adv)
    out.extend(_llamafactory_levers(f))
    if not frag_first:
        a = alloc_conf_advice(f, oom)
        if a:
            out.append(a)
    return out
