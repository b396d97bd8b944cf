"""GD407: bf16 (or fp16) requested where the device has no support for it: a CPU run, a pre-Ampere GPU, or a
GPU torch does not see."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def bf16_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    text = hits[0].evidence.text
    if "--tf32 requires" in text:
        return Diagnosis(
            message="TF32 (tf32=True) is a tensor-core mode of Ampere and newer GPUs (A100, A10, L40, RTX 30xx/40xx, "
                    "H100); transformers refuses it on an older GPU (V100, T4: compute capability 7.x), whatever "
                    "the CUDA and torch versions. bf16 needs Ampere too.",
            fix=("Set tf32 to False (--tf32 False, or leave it unset) and train in fp16 (--fp16 True) or fp32 on this "
                 "GPU; bf16 is not available on it either.",),
            title="TF32 requested on a GPU older than Ampere",
            verify="the arguments are accepted (no `--tf32 requires Ampere` line) and the first step is logged")
    swift = ctx.framework()[0] == "ms-swift" or bool(run.command)
    if not swift:
        return _trainer_args_fix(text)
    given = run.cli.get("torch_dtype")
    src = (f"--torch_dtype {given} was given" if given else
           "no --torch_dtype was given, so ms-swift took bfloat16 from the model's config.json")
    if "fp16" in text and "bf16" not in text:
        return Diagnosis(
            message=f"fp16 mixed precision was requested on a device that has no fp16 support (usually "
                    f"the CPU); {src}.",
            fix=("On CPU: --torch_dtype float32 --use_cpu true.",
                 "If this machine has a GPU, torch does not see it: check `nvidia-smi` and "
                 "`python -c 'import torch; print(torch.cuda.is_available())'` (a CPU-only torch build "
                 "is a common cause)."))
    if "Ampere" in text or "cuda>=11" in text:
        return Diagnosis(
            message=f"bf16 needs an Ampere or newer GPU (A100, A10, L40, RTX 30xx/40xx, H100); this GPU "
                    f"(e.g. V100, T4) has none. {src[0].upper() + src[1:]}.",
            fix=("--torch_dtype float32 (safe), or --torch_dtype float16 (halves memory but may overflow: "
                 "`Attempting to unscale FP16 gradients` means go back to float32).",
                 "Or move the run to a GPU with bf16."))
    return Diagnosis(
        message=f"transformers refuses bf16 here because no GPU with bf16 is available (a CPU-only run, or "
                f"torch cannot see the GPU); {src}.",
        fix=("On CPU: --torch_dtype float32, or --torch_dtype bfloat16 --use_cpu true to keep bf16.",
             "If this machine has a GPU, torch does not see it: check `nvidia-smi`, CUDA_VISIBLE_DEVICES and "
             "`python -c 'import torch; print(torch.cuda.is_available())'` (a CPU-only torch build is a "
             "common cause)."))


def _trainer_args_fix(text: str) -> Diagnosis:
    """The same refusals in a run on transformers' TrainingArguments (trl, LLaMA-Factory, a script): its own flags."""
    if "fp16" in text and "bf16" not in text:
        return Diagnosis(message="fp16 mixed precision (fp16=True) was requested on a device without fp16 support "
                                 "(usually the CPU, or a GPU torch does not see).",
                         fix=("Set fp16 to False (fp32) on CPU; if this machine has a GPU, torch does not see it: "
                              "`python -c 'import torch; print(torch.cuda.is_available())'`.",))
    if "Ampere" in text or "cuda>=11" in text:
        return Diagnosis(message="bf16 (bf16=True) needs an Ampere or newer GPU (A100, A10, L40, RTX 30xx/40xx, H100); "
                                 "this GPU (e.g. V100, T4) has none.",
                         fix=("Set bf16 to False and fp16 to True (half precision; fp32 if fp16 overflows), and load "
                              "the model in float16 or float32 rather than bfloat16.",))
    return Diagnosis(message="transformers refuses bf16 (bf16=True) because no GPU with bf16 is available (a CPU-only "
                             "run, or torch cannot see the GPU).",
                     fix=("On CPU set bf16 to False (and use_cpu True); if this machine has a GPU, check `nvidia-smi`, "
                          "CUDA_VISIBLE_DEVICES and `python -c 'import torch; print(torch.cuda.is_available())'`.",))
