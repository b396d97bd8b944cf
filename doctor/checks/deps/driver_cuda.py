"""GD907: the NVIDIA driver is older than the CUDA release torch was built for. torch reports the driver's CUDA as
one number (c10/cuda/CUDAFunctions.cpp: "found version N", N = 1000 x major + 10 x minor); torch's own build
(``+cu121``) shows in a version line when the log prints one."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_FOUND = lazyre.compile(r"too old \(found version (?P<n>\d+)\)")
# "torch 2.1.0+cu121", "PyTorch version: 2.7.1+cu126", "Torch: 2.7.0+cu126. CUDA: 8.6. CUDA Toolkit: 12.6"
_BUILD = lazyre.compile(r"(?i)torch(?:\s+version)?\s*[:=]{0,2}\s*v?\d+\.\d+(?:\.\d+)?\+cu(?P<cu>\d{2,3})\b")


def cuda_of(found: int) -> str:
    """11000 -> '11.0', 12080 -> '12.8' (the driver API's version integer)."""
    return f"{found // 1000}.{found % 1000 // 10}"


def driver_cuda_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    texts = [h.evidence.text for h in hits] + [t.text for tail in ctx.tails.values() for t in tail]
    found = next((int(m.group("n")) for m in (_FOUND.search(t) for t in texts) if m), None)
    build = next((m.group("cu") for m in (_BUILD.search(t) for t in texts) if m), None)
    built = f"{build[:-1]}.{build[-1]}" if build else None
    if found is None:
        msg = ("CUDA's own check failed: the driver is older than the CUDA runtime the program was built with "
               "(cudaErrorInsufficientDriver), so no CUDA call can run.")
    else:
        msg = (f"torch found a driver that supports CUDA {cuda_of(found)} at most (found version {found})"
               + (f", older than the CUDA {built} torch was built with (+cu{build})" if built else
                  ", older than the CUDA release the installed torch was built with")
               + ": torch.cuda.is_available() is False, so the run has no GPU (it falls back to the CPU, waits, or "
                 "fails at the first move to cuda).")
    want = (f"CUDA {built} or newer" if built else
            "the CUDA release of the installed torch (`python -c 'import torch; print(torch.version.cuda)'`)")
    fix = [f"Update the NVIDIA driver to one that supports {want} (`nvidia-smi` prints the driver's CUDA version in "
           f"its header).",
           "Or install a torch built for a CUDA release the driver supports"
           + (f" (CUDA {cuda_of(found)} or older)" if found is not None else "")
           + ": https://pytorch.org/get-started/previous-versions/ lists the wheels per CUDA release; in a container, "
             "use an image whose CUDA the host driver supports."]
    return Diagnosis(message=msg, fix=tuple(fix))
