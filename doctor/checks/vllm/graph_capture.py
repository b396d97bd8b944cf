"""GD248: a CUDA graph capture refused an operation; vLLM's engine start, or another capture (torch.compile, SGLang)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..fallback.native import in_vllm

# a vLLM run told by its words when the paste has no vLLM frame or prefix (a title, `vllm serve` in the command)
_VLLM_WORDS = lazyre.compile(r"\bvllm\b|\bvLLM\b|enforce[-_]eager")
# the other engines and compilers that capture CUDA graphs: SGLang's runner (disable with --disable-cuda-graph),
# torch.compile's "reduce-overhead" / cudagraph trees
_OTHER_CAPTURE = lazyre.compile(r"(?i)\bsglang\b|cuda_graph_runner|cudagraph_trees|reduce-overhead")


def _vllm_run(hit: Hit, ctx: RunState) -> bool:
    if in_vllm(hit, ctx) or ctx.framework()[0] == "vllm":
        return True
    if any(_OTHER_CAPTURE.search(t.raw) for tail in ctx.tails.values() for t in tail):
        return False
    return any(_VLLM_WORDS.search(t.raw) for tail in ctx.tails.values() for t in tail)


def capture_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    if _vllm_run(hits[0], ctx):
        return Diagnosis()   # the rule's own message and fix: vLLM's capture at engine start
    msg = ("A CUDA graph capture failed: an operation that may not run while a stream is captured (a copy to the host, "
           "a synchronisation, a data-dependent branch, a kernel that is not capture-safe) broke it. Nothing in the log "
           "names the engine that captured: SGLang's CUDA graph runner, torch.compile's reduce-overhead mode and "
           "vLLM all capture this way.")
    fix = ("Turn the capture off where it happens, to confirm: SGLang --disable-cuda-graph, torch.compile with "
           "mode=\"default\" instead of \"reduce-overhead\", or vLLM's enforce_eager.",)
    return Diagnosis(message=msg, fix=fix, category="other", confidence="possible")
