"""GD407: bf16 (or fp16) requested where the device has no support for it: a CPU run, a pre-Ampere GPU, or a
GPU torch does not see."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def bf16_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    text = hits[0].evidence.text
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
