"""GD454: a compiled extension built against another torch/CUDA (undefined symbol, missing CUDA library)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_PKG_IN_PATH = (("flash_attn", "flash-attn"), ("vllm", "vllm"), ("deepspeed", "deepspeed"),
                ("bitsandbytes", "bitsandbytes"), ("xformers", "xformers"), ("transformer_engine", "transformer-engine"),
                ("apex", "apex"), ("liger", "liger-kernel"), ("torchvision", "torchvision"), ("torchaudio", "torchaudio"),
                ("torch", "torch"))


def binary_ext_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    text = hits[0].evidence.text
    pkg = next((p for m, p in _PKG_IN_PATH if m in text), None)
    if g.get("fa_err"):
        return Diagnosis(
            message=f"--attn_impl flash_attn was requested but flash-attn cannot be used: {g['fa_err']}",
            fix=("pip install flash-attn --no-build-isolation (a wheel matching your torch, CUDA and Python)",
                 "Or --attn_impl sdpa (no extra package; a little slower)."))
    if g.get("vllm_c") is not None:
        # vllm/_custom_ops.py logs the ImportError of its compiled ops as a warning and goes on: every op it serves
        # then fails later; the exception's text says why, when the paste kept it
        why = g["vllm_c"].strip().rstrip(")").strip("'\"")   # the repr's quotes and its closing parenthesis
        shown = f" ({why[:160]})" if why else ""
        return Diagnosis(
            message=f"vLLM's compiled operations (vllm._C) failed to import{shown}: vLLM logs it as a warning and goes "
                    f"on, and the first kernel it needs then fails or the engine never starts. An ImportError here "
                    f"(not 'No module named', which a non-CUDA platform plugin expects) means the installed vllm "
                    f"wheel does not load with this torch, CUDA driver or CUDA libraries.",
            fix=("Check the pair: `pip show vllm torch` against the torch version that vllm release requires; let "
                 "`pip install vllm==<version>` install its own torch (a fresh environment is safest) instead of "
                 "upgrading torch afterwards.",
                 "Then `python -c 'import vllm._C'` shows the full error: `undefined symbol` means another torch, "
                 "`libcuda.so` / `libcudart.so` missing means the driver or CUDA runtime is not visible."))
    if g.get("lib"):
        lib = g["lib"]
        return Diagnosis(
            message=f"A compiled extension{(' of ' + pkg) if pkg else ''} needs {lib}, which this machine "
                    f"does not have: it was built for another CUDA version.",
            fix=(f"Install the build of {pkg or 'the package'} that matches your CUDA and torch "
                 f"(python -c 'import torch; print(torch.__version__, torch.version.cuda)').",
                 "Or install the CUDA runtime it expects."))
    sym = g.get("sym") or "?"
    who = pkg or "a compiled extension"
    fix = [f"Reinstall {who} against the installed torch: pip install --force-reinstall --no-build-isolation {who}"
           if pkg and pkg != "torch" else "Reinstall the package whose .so appears in the error against the "
                                           "installed torch."]
    if pkg == "flash-attn":
        fix.append("Or avoid flash-attn: --attn_impl sdpa.")
    if pkg == "vllm":
        fix = ["A vllm wheel is built for one torch version: let `pip install vllm==<version>` install its torch "
               "(ideally in a fresh environment) instead of upgrading torch afterwards."]
    return Diagnosis(
        message=f"{who} was compiled against a different torch/CUDA than the one installed (undefined symbol "
                f"{sym[:80]}).",
        fix=tuple(fix))
