"""What the numerics rules advise against NaN/inf (GD620, GD621, GD623, GD624), and the run's dtype."""
from __future__ import annotations

from ...sources.swiftconfig import RunConfig
from .._runargs import arg_float
from .._series import fmt


def _true(v: object) -> bool:
    return v is True or str(v).strip().lower() in ("true", "1", "yes")


def dtype_of(run: RunConfig) -> str | None:
    """The run's training precision: ``torch_dtype`` (ms-swift, a model loaded with it), else the mixed-precision
    switches of transformers' TrainingArguments and LLaMA-Factory's YAML (``bf16: true``, ``pure_bf16``, ``fp16``)."""
    v = run.args.get("torch_dtype")
    if v is None:
        if _true(run.args.get("bf16")) or _true(run.args.get("pure_bf16")):
            return "bfloat16"
        if _true(run.args.get("fp16")):
            return "float16"
        return None
    s = str(v).lower().replace("torch.", "")
    return {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}.get(s, s)


FAR_ABOVE = 1e-2   # a learning rate no fine-tuning recipe of an LLM uses (they run about 1e-6 to 5e-4)


def nan_fixes(run: RunConfig, *, kl_first: bool, last_ok: int | None,
              lr_seen: float | None, unscaled: bool = False, swift_grpo: bool = False,
              first_step: bool = False, lr_next: float | None = None, in_backward: bool = False) -> list[str]:
    """``unscaled``: the rows log a constant loss scale of 1 (Megatron's "loss scale: 1.0"): no float16 dynamic loss
    scaling ran, so the run was not in float16 and advice against it does not apply. ``swift_grpo``: an ms-swift GRPO
    run, the one its GRPO best practice is written for (cited only there). ``first_step``: the first logged step of the
    run is already non-finite, with no finite row before it: no update preceded it, so neither harder clipping nor a
    lower learning rate touches the cause (the first forward/backward pass gave NaN). ``lr_next``: the learning rate
    logged in the row after the first non-finite one (above ``lr_seen``: still warming up). ``in_backward``: a
    backward function itself returned NaN (autograd anomaly detection): clipping acts on its output, too late."""
    fix: list[str] = []
    if first_step:
        dt = dtype_of(run)
        prec = ("float32" if dt == "bfloat16" else "bfloat16 (float32 on GPUs without it: V100, T4)"
                if dt == "float16" else "float32 (or bfloat16 on Ampere or newer GPUs)")
        fix.append(f"Run a few steps in {prec} with eager attention (attn_implementation=\"eager\"): finite "
                   f"gradients there point at the precision or the attention kernel of this run; NaN there as well "
                   f"points at the installed library versions (torch, transformers, peft): compare them with a setup "
                   f"known to work.")
        return fix + _resume(run, last_ok)
    lr = arg_float(run, "learning_rate") or lr_seen
    mgn = arg_float(run, "max_grad_norm")
    if not (lr and lr >= FAR_ABOVE) and not in_backward:   # against such a learning rate clipping changes little
        fix.append(f"Clip gradients harder: --max_grad_norm {fmt(mgn) if mgn is not None else '1.0 (assumed)'} -> 0.5"
                   + (" (a common choice against sudden gradient spikes; the ms-swift GRPO best practice uses it)."
                      if swift_grpo else " (a common choice against sudden gradient spikes)."))
    configured = arg_float(run, "learning_rate")
    warming = (not configured and lr_seen is not None and lr_next is not None and lr_next > lr_seen)
    if lr and lr >= FAR_ABOVE:
        lora = str(run.args.get("tuner_type") or run.args.get("train_type") or run.args.get("finetuning_type") or "")
        target = 1e-4 if "lora" in lora.lower() else 1e-5
        fix.append(f"Lower --learning_rate from {fmt(lr)} to about {fmt(target)}: {fmt(lr)} is far above what fine-tuning "
                   f"uses (about 1e-6 to 5e-4, LoRA at the upper end), so no clipping keeps its updates finite.")
    elif warming and lr_seen is not None and lr_next is not None:
        fix.append(f"The learning rate was still warming up at the NaN ({fmt(lr_seen)}, then {fmt(lr_next)}): lower "
                   f"the configured peak --learning_rate (e.g. 5x) or lengthen the warm-up.")
    elif lr:
        fix.append(f"Lower --learning_rate from {fmt(lr)} to {fmt(lr / 5)} (or use warmup: --warmup_ratio 0.05).")
    elif not in_backward:
        fix.append("Lower --learning_rate (e.g. 5x) and add warmup (--warmup_ratio 0.05).")
    dt = dtype_of(run)
    if dt == "float16":
        fix.append("--torch_dtype float16 overflows easily: use --torch_dtype bfloat16 on Ampere or newer GPUs, "
                   "float32 on older ones (V100, T4 and earlier have no bfloat16).")
    elif dt is None and not unscaled:
        fix.append("Train in bfloat16 (--torch_dtype bfloat16) on Ampere or newer GPUs, or float32 on older ones (V100, "
                   "T4 and earlier have no bfloat16), not float16, which overflows easily.")
    if kl_first or run.args.get("overlong_filter"):
        fix.append(("KL became NaN first: t" if kl_first else "This run uses --overlong_filter true: t")
                   + "he ms-swift GRPO FAQ notes that with --overlong_filter true a GPU whose "
                   "completions were all truncated gets NaN KL; raise --max_completion_length"
                   + (f" (now {run.int_arg('max_completion_length')})" if run.int_arg("max_completion_length") else "")
                   + " or turn --overlong_filter off; a larger --beta keeps the policy closer to the reference.")
    return fix + _resume(run, last_ok)


def _resume(run: RunConfig, last_ok: int | None) -> list[str]:
    fix: list[str] = []
    save = run.int_arg("save_steps")
    if last_ok is not None and save:
        ck = (last_ok // save) * save
        if ck > 0:
            fix.append(f"The last finite step was {last_ok}: resume from checkpoint-{ck} (save_steps {save}) with "
                       f"--resume_from_checkpoint <output_dir>/checkpoint-{ck} after changing the settings above.")
        elif ck == 0:
            fix.append(f"The last finite step was {last_ok}, before the first checkpoint (save_steps {save}): restart "
                       f"from the beginning with the settings above, and save more often (--save_steps) to be able to "
                       f"resume next time.")
    elif last_ok is not None:
        fix.append(f"The last finite step was {last_ok}: resume from the last checkpoint saved before it.")
    return fix


# what leaves a batch without a supervised token, and how to see it: said by GD620's row reading and by the words
# reader (checks/hang/symptom_words.py EMPTY_LABELS)
NO_LABEL_CAUSES = ("a maximum length (max_length, cutoff_len, max_seq_length) that truncates the response away, a "
                   "prompt length limit equal to the whole length (max_prompt_length = max_length in DPO-style "
                   "trainers), or a template or completion-only mask that masks every token")
NO_LABEL_CHECK = "print one encoded example's labels and raise the length or shorten the prompts"


def empty_supervision(values: dict) -> tuple[str, str] | None:
    """(sentence, fix) when a first logged row holds a loss of exactly 0 beside a NaN gradient norm: a mean over zero
    supervised tokens (every label masked, -100), not an overflow; None otherwise. trl's SFTTrainer logs 0.0 for a
    batch whose labels are all masked while the forward loss is NaN (huggingface/trl#6668); SimPO's rows show the same
    pair with max_prompt_length equal to max_length (princeton-nlp/SimPO#35)."""
    loss, grad = values.get("loss"), values.get("grad_norm")
    if not isinstance(loss, (int, float)) or loss != 0 or not isinstance(grad, float) or grad == grad:
        return None
    return ((" The row's loss is exactly 0 beside a NaN gradient norm: that pair is a mean over zero supervised tokens (every "
             "label of the batch masked to -100, so the loss is 0/0), not an overflow."),
            f"Count the supervised tokens of a batch: {NO_LABEL_CAUSES} leaves no label; {NO_LABEL_CHECK}.")


# DeepSpeed ZeRO-1/2 with overlap_comm (the gradient reduction overlapped with the backward pass, in buckets) logs a NaN
# gradient norm beside a finite loss, then a loss of 0 (deepspeedai/DeepSpeed#5242: 0.12.4 and later, not 0.12.3;
# #5347: "Setting overlap_comm to False can avoid this problem", confirmed on 0.15.1 and 0.16.4; #7188: with
# contiguous_gradients too; hiyouga/LlamaFactory#9298 under ds_z2); ZeRO-3 reduces in another code path
GRAD_ONLY = ("The row's loss is finite: the forward pass gave numbers and the gradients did not, so the NaN arose in "
             "the backward pass or in the reduction of the gradients over the ranks, not in the weights or the data.")


def overlap_comm_fix(run: RunConfig) -> str | None:
    """The DeepSpeed setting behind a NaN gradient norm beside a finite loss, said for this run's ZeRO stage: None
    under ZeRO-3 (another reduction) or a run read without DeepSpeed settings other than ZeRO-1/2."""
    from ..memory._facts import zero_stage  # noqa: PLC0415
    stage, _ = zero_stage(run.args.get("deepspeed"))
    if stage == 3 or stage == 0:
        return None
    said = ("Set \"overlap_comm\": false in the DeepSpeed config's zero_optimization block (or raise "
            "reduce_bucket_size, e.g. to 2e8): DeepSpeed ZeRO-1/2 with overlap_comm on gives a NaN gradient norm "
            "beside a finite loss, then a loss of 0, in releases from 0.12.4 on (deepspeedai/DeepSpeed#5242, #5347); "
            "ZeRO-3 reduces gradients another way.")
    if stage in (1, 2):
        return f"--deepspeed {run.args.get('deepspeed')} is ZeRO-{stage}: " + said[0].lower() + said[1:]
    return "If the run uses DeepSpeed ZeRO-1 or -2: " + said[0].lower() + said[1:]
