"""GD459: a CUDA kernel that was not compiled for this GPU's architecture (torch, flash-attn, vLLM wheels built for
other compute capabilities): the GPU and the supported capabilities as torch's own warning printed them."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# torch/cuda/__init__.py _check_capability / _warn_typed_storage: "NVIDIA GeForce RTX 5090 with CUDA capability sm_120
# is not compatible with the current PyTorch installation. The current PyTorch install supports CUDA capabilities
# sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90."
_CAPABILITY = lazyre.compile(r"(?P<gpu>[\w .\-]+?) with CUDA capability (?P<sm>sm_\d+) is not compatible with the current "
                         r"PyTorch installation")
_SUPPORTED = lazyre.compile(r"supports CUDA capabilities (?P<list>(?:sm_\d+\s*)+)")


def gpu_arch_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    texts = [t.text for tail in ctx.tails.values() for t in tail] + [h.evidence.text for h in hits]
    gpu = sm = supported = None
    for text in texts:
        m = _CAPABILITY.search(text)
        if m:
            gpu, sm = m.group("gpu").strip(), m.group("sm")
        s = _SUPPORTED.search(text)
        if s:
            supported = " ".join(s.group("list").split())
    if sm:
        built = [int(x[3:]) for x in (supported or "").split()]
        side = "newer than" if built and int(sm[3:]) > max(built) else "older than" if built and int(sm[3:]) < min(built) \
            else "outside"
        msg = (f"The GPU ({gpu}, {sm}, read from torch's warning) is {side} what the installed torch was built for"
               + (f" ({supported})" if supported else "") + ": a CUDA kernel has no code for this GPU, so the first "
               "call into it fails with 'no kernel image is available for execution on the device'.")
    else:
        msg = ("A CUDA kernel has no code for this GPU's architecture ('no kernel image is available for execution on "
               "the device'): torch or a compiled extension (flash-attn, vLLM, bitsandbytes, xformers) was built for "
               "other compute capabilities than this GPU's.")
    fix = ("Check the GPU against the builds: `python -c 'import torch; print(torch.__version__, torch.version.cuda, "
           "torch.cuda.get_device_capability(), torch.cuda.get_arch_list())'`: the GPU's sm_XY must be in the list.",
           "Install a torch built for this GPU (a newer GPU needs a newer CUDA build: Blackwell, sm_100/sm_120, a CUDA "
           "12.8 build of torch 2.7 or later; an older one, such as Pascal or Volta, a build that still lists it), "
           "then the extensions built for that torch (vLLM's and flash-attn's wheels list the GPUs they support); an "
           "extension compiled from source takes TORCH_CUDA_ARCH_LIST=\"<the GPU's capability>\".")
    return Diagnosis(message=msg, fix=fix)
