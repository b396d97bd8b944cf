"""What to check meanwhile when a paste says its training loss fell to exactly 0, joined with the settings its command
shows: the precision (an fp16 overflow is no reading of a bf16 or fp32 run) and the learning rate with its warmup (a
loss that diverges under a high rate ends at 0 or NaN). Pure: the run's configuration in, one sentence out."""
from __future__ import annotations

from ...sources.swiftconfig import RunConfig
from .._runargs import arg_float
from .._series import fmt
from ..numerics._nan_fixes import NO_LABEL_CAUSES, NO_LABEL_CHECK, dtype_of

# the learning rates above which fine-tuning recipes rarely go: LoRA ~1e-4 to 2e-4, a full fine-tune ~1e-5 to 2e-5
_HIGH_LORA = 3e-4
_HIGH_FULL = 5e-5


def _lora(run: RunConfig) -> bool | None:
    tuner = str(run.args.get("tuner_type") or run.args.get("train_type") or run.args.get("finetuning_type") or "")
    return ("lora" in tuner.lower()) if tuner else None


def loss_zero_meanwhile(run: RunConfig) -> str:
    dt = dtype_of(run)
    parts = []
    note = ""
    if dt == "float16":
        parts.append("the command trains in fp16 (read), where the loss or its gradients overflow: train in bf16 on "
                     "GPUs that have it (A100/H100, RTX 30/40 series), or fp32, and compare")
    elif dt in ("bfloat16", "float32"):
        note = f" (the command trains in {dt} (read): not an fp16 overflow)"
    else:
        parts.append("under fp16 the loss or its gradients overflow (train in bf16 on GPUs that have it, or in fp32, "
                     "and compare)")
    lr = arg_float(run, "learning_rate")
    lora = _lora(run)
    high = _HIGH_LORA if lora else _HIGH_FULL if lora is False else _HIGH_LORA
    if lr is not None and lr >= high:
        warmup = arg_float(run, "warmup_steps") or 0.0
        ratio = arg_float(run, "warmup_ratio") or 0.0
        no_warmup = warmup <= 0 and ratio <= 0 and ("warmup_steps" in run.args or "warmup_ratio" in run.args)
        kind = "LoRA" if lora else "full fine-tuning" if lora is False else "fine-tuning"
        parts.append(f"the learning rate {fmt(lr)} (read) is high for {kind}"
                     + (" and the command sets no warmup" if no_warmup else "")
                     + f": at such a rate the loss can diverge and then read 0 or NaN; lower it (e.g. {fmt(lr / 5)}) "
                       f"with a warmup (warmup_ratio 0.03-0.1)")
    parts.append(f"a batch holds no supervised token ({NO_LABEL_CAUSES}); {NO_LABEL_CHECK}")
    return f"Meanwhile: a training loss of exactly 0 is not convergence{note}: " + "; or ".join(parts) + "."
