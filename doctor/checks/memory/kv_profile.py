"""GD203 read from the lines vLLM logs while it sizes its KV cache, before (or without) the exception: vLLM 0.7-0.8
worker.py determine_num_available_blocks prints its budget ("the current vLLM instance can use total_gpu_memory (T)
x gpu_memory_utilization (U) = B") and how it was spent ("model weights take A; non_torch_memory takes N; PyTorch
activation peak memory takes P; the rest of the memory reserved for KV Cache is K"), executor_base.py
initialize_cache the block count ("# cuda blocks: 0") and the concurrency of one full request ("Maximum concurrency
for L tokens per request: 0.00x"). A paste that stops there has shown the failure already: no block, less than one
request, or a cache that is a sliver of the weights (a model's KV bytes per token are a few millionths of its
weight bytes, so a share under 0.5% of the weights holds roughly a thousand tokens: less than a GRPO prompt plus
completion). Pure."""
from __future__ import annotations

from ... import lazyre
from ...rules import Diagnosis, Hit

_SPENT = lazyre.compile(r"model weights take (?P<a>[\d.]+) ?GiB; non_torch_memory takes (?P<n>-?[\d.]+) ?GiB; PyTorch "
                        r"activation peak memory takes (?P<p>-?[\d.]+) ?GiB; the rest of the memory reserved for KV "
                        r"Cache is (?P<k>-?[\d.]+) ?GiB")
_BUDGET = lazyre.compile(r"total_gpu_memory \((?P<t>[\d.]+) ?GiB\) x gpu_memory_utilization \((?P<u>[\d.]+)\) = "
                         r"(?P<b>[\d.]+) ?GiB")
_CONCURRENCY = lazyre.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x")
# vLLM 0.2-0.8's block count, by device ("# GPU blocks: 0, # CPU blocks: 256"; 0.7-0.8 name the platform: "# cuda
# blocks: 0"): the KV-cache blocks the profile left room for, logged right before vLLM refuses a count of 0
BLOCKS = lazyre.compile(r"# (?:GPU|cuda|xpu|npu|hpu) blocks: (\d+),")


def no_blocks(text: str) -> str | None:
    """The block-count line's own words ("# cuda blocks: 0") when ``text`` logs a count of 0, else None."""
    m = BLOCKS.search(text)
    return m.group(0)[:-1] if m and m.group(1) == "0" else None
SLIVER = 0.005  # KV share / weights below which one full-length request does not fit (module doc)


def profile_diagnosis(hits: list[Hit], tail_texts: list[str], util_flag: str, len_flag: str) -> Diagnosis | None:
    """The reading of the profile, block and concurrency lines among ``hits`` (with the run's kept lines
    ``tail_texts`` for the budget line), or None when they show a cache with room (a healthy start)."""
    texts = [h.evidence.text for h in hits]
    spent = [m for m in (_SPENT.search(t) for t in texts + tail_texts) if m]
    worst = min(spent, key=lambda m: float(m.group("k")), default=None)
    conc = next((m for m in (_CONCURRENCY.search(t) for t in texts) if m and float(m.group("x")) < 1.0), None)
    none_left = any(no_blocks(t) for t in texts)
    weights = float(worst.group("a")) if worst else None
    kv = float(worst.group("k")) if worst else None
    sliver = kv is not None and weights and 0 < kv < SLIVER * weights
    if not (none_left or conc or (kv is not None and (kv <= 0 or sliver))):
        return None
    budget = next((m for m in (_BUDGET.search(t) for t in tail_texts) if m), None)
    parts = []
    if worst is not None:
        parts.append(f"vLLM's memory profile: weights {weights:g} GiB, non-torch {float(worst.group('n')):g} GiB, "
                     f"activation peak {float(worst.group('p')):g} GiB, leaving {kv:g} GiB for the KV cache"
                     + (f" of the {float(budget.group('b')):g} GiB it may use ({float(budget.group('t')):g} GiB x "
                        f"{float(budget.group('u')):g})" if budget else "") + ".")
    if none_left:
        parts.append("It then logged 0 KV-cache blocks: no room for a single block.")
    if conc is not None:
        parts.append(f"One request of {conc.group('len')} tokens fits {conc.group('x')} times: not even once.")
    elif sliver and not none_left:
        parts.append(f"A KV share under {SLIVER:.1%} of the weights holds, at the usual ratio of a model's KV bytes "
                     f"per token to its weight bytes (assumed: the model's layout is not in the log), on the order of "
                     f"a thousand tokens: less than one request of a usual max_model_len, so vLLM most likely refuses "
                     f"to start right after this (the excerpt stops before it says so).")
    fix = []
    if worst is not None and budget is not None:
        total, util = float(budget.group("t")), float(budget.group("u"))
        used = weights + max(float(worst.group("n")), 0) + max(float(worst.group("p")), 0)
        need = used / total if total else None
        if need is not None and need + 0.05 <= 0.95 and need + 0.05 > util:
            fix.append(f"{util_flag} {min(0.95, round(need + 0.05 + 0.005, 2)):.2f} (now {util:g}): weights, "
                       f"non-torch memory and the activation peak take {used:.2f} of {total:g} GiB "
                       f"({need:.0%}); the rest above that is the KV cache.")
        else:
            fix.append(f"The weights alone take {weights:g} of {total:g} GiB per GPU and {util_flag} is already "
                       f"{util:g}: more GPUs per engine (a larger tensor-parallel size), quantized weights, or a "
                       f"smaller model.")
    fix.append(f"Lower {len_flag} to what prompt + completion need (and, for a vision model, the images per "
               f"prompt): a shorter max_model_len lowers the activation peak vLLM profiles and needs fewer blocks.")
    evidence_first = conc is not None or none_left
    return Diagnosis(message=" ".join(parts), fix=tuple(fix),
                     confidence=None if evidence_first or (kv is not None and kv <= 0) else "likely")
