"""What the numerics rules advise against NaN/inf (GD620, GD621, GD623, GD624), and the run's dtype."""
from __future__ import annotations

from ...sources.swiftconfig import RunConfig
from .._runargs import arg_float
from .._series import fmt


def dtype_of(run: RunConfig) -> str | None:
    v = run.args.get("torch_dtype")
    if v is None:
        return None
    s = str(v).lower().replace("torch.", "")
    return {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}.get(s, s)


FAR_ABOVE = 1e-2   # a learning rate no fine-tuning recipe of an LLM uses (they run about 1e-6 to 5e-4)


def nan_fixes(run: RunConfig, *, kl_first: bool, last_ok: int | None,
              lr_seen: float | None, unscaled: bool = False) -> list[str]:
    """``unscaled``: the rows log a constant loss scale of 1 (Megatron's "loss scale: 1.0"): no float16 dynamic loss
    scaling ran, so the run was not in float16 and advice against it does not apply."""
    fix: list[str] = []
    lr = arg_float(run, "learning_rate") or lr_seen
    mgn = arg_float(run, "max_grad_norm")
    if not (lr and lr >= FAR_ABOVE):   # against such a learning rate clipping changes nothing that matters
        fix.append(f"Clip gradients harder: --max_grad_norm {fmt(mgn) if mgn is not None else '1.0 (assumed)'} -> 0.5 "
                   f"(a common choice against sudden gradient spikes; the ms-swift GRPO best practice uses it).")
    if lr and lr >= FAR_ABOVE:
        lora = str(run.args.get("tuner_type") or run.args.get("train_type") or run.args.get("finetuning_type") or "")
        target = 1e-4 if "lora" in lora.lower() else 1e-5
        fix.append(f"Lower --learning_rate from {fmt(lr)} to about {fmt(target)}: {fmt(lr)} is far above what fine-tuning "
                   f"uses (about 1e-6 to 5e-4, LoRA at the upper end), so no clipping keeps its updates finite.")
    elif lr:
        fix.append(f"Lower --learning_rate from {fmt(lr)} to {fmt(lr / 5)} (or use warmup: --warmup_ratio 0.05).")
    else:
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
