"""vLLM engine settings that break one of vLLM's own arithmetic limits, the fix computed from the two numbers of the
message: attention heads over the tensor-parallel size (GD242), the scheduler's token budget against max_model_len
(GD243), the quantization method's minimum compute capability against the GPU's (GD244)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int

# compute capability (vLLM's integer form, major x 10 + minor) -> GPUs users train and serve on
_GPUS = {60: "P100", 61: "P40 / GTX 10xx", 70: "V100", 75: "T4 / RTX 20xx", 80: "A100 / A800 / A30", 86: "A10 / A40 / RTX 30xx",
         89: "L4 / L40 / RTX 40xx", 90: "H100 / H800 / H200 / H20", 100: "B200", 120: "RTX 50xx"}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def heads_tp_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    heads, tp = as_int(g.get("heads")) or 0, as_int(g.get("tp")) or 0
    fits = [d for d in _divisors(heads) if d <= max(tp, 1)]
    below = fits[-1] if fits else 1
    above = next((d for d in _divisors(heads) if d > tp), None)
    msg = (f"The model has {heads} attention heads and vLLM was asked to split them over tensor-parallel size {tp} "
           f"(read from the message): {heads} % {tp} = {heads % tp} (computed), and tensor parallelism gives every GPU "
           "an equal share of the heads.")
    fix = [f"Tensor-parallel size {below} (the largest divisor of {heads} not above {tp}: computed)"
           + (f", or {above} on {above} GPUs" if above else "")
           + f"; the divisors of {heads} are {', '.join(map(str, _divisors(heads)[:8]))}."]
    if tp // below > 1:
        fix.append(f"With {tp} GPUs: {tp // below} engines of tensor-parallel size {below} (data parallel) use "
                   f"{tp // below * below} of them.")
    return Diagnosis(message=msg, fix=tuple(fix))


def batched_tokens_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    batched, maxlen = as_int(g.get("batched")) or 0, as_int(g.get("maxlen")) or 0
    msg = (f"vLLM's scheduler budget max_num_batched_tokens {batched} is smaller than max_model_len {maxlen} (read from "
           "the message): with chunked prefill off, a whole prompt is prefilled in one step, so one step must hold "
           "max_model_len tokens.")
    fix = [f"max_num_batched_tokens {maxlen} or more (computed: at least max_model_len), or max_model_len {batched} or "
           f"less if prompt + completion never need more (verl: actor_rollout_ref.rollout.max_num_batched_tokens / "
           f"max_model_len; vLLM: --max-num-batched-tokens / --max-model-len).",
           "Or enable chunked prefill (vLLM --enable-chunked-prefill; verl actor_rollout_ref.rollout."
           "enable_chunked_prefill=True), which lets a long prompt span several steps."]
    return Diagnosis(message=msg, fix=tuple(fix))


def quant_capability_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    method, need, have = g.get("method") or "?", as_int(g.get("need")) or 0, as_int(g.get("have")) or 0
    fmt = f"{need // 10}.{need % 10}", f"{have // 10}.{have % 10}"
    gpus = [name for cc, name in sorted(_GPUS.items()) if cc >= need][:3]
    this = _GPUS.get(have)
    msg = (f"The checkpoint is quantized with {method}, whose vLLM kernels need compute capability {fmt[0]} or newer; "
           f"this GPU has {fmt[1]}" + (f" ({this})" if this else "") + " (read from the message). It is the GPU's "
           "hardware generation, not memory or a setting.")
    fix = [f"Serve this checkpoint on a GPU of capability {fmt[0]} or newer" + (f" ({'; '.join(gpus)})" if gpus else "")
           + f", or load a checkpoint of the same model without {method} (bf16/fp16) or with a quantization this GPU "
             "supports (vLLM's supported-hardware table).",
           f"A newer vLLM may lower {method}'s minimum (weight-only fp8 runs through Marlin kernels on older GPUs in "
           "later releases): check its supported-hardware table before upgrading."]
    return Diagnosis(message=msg, fix=tuple(fix))
