"""GD203: vLLM finds no room for its KV cache (free memory at startup below the requested share, one sequence
larger than the cache, memory profiling disturbed, no memory left for the cache blocks)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..hang.vllm_share_said import share_said
from ._facts import facts_of
from ._ladders import _fmt_util, _round_down, vllm_ladder
from .kv_profile import profile_diagnosis

_KV_NUMS = {
    "startup": lazyre.compile(r"Free memory on device \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is less than "
                          r"desired GPU memory utilization \((?P<util>[\d.]+), (?P<req>[\d.]+) GiB\)"),
    "needed": lazyre.compile(r"max seq len \((?P<maxlen>\d+)\), \(?(?P<need>[\d.]+) GiB KV cache is needed, which is larger "
                         r"than the available KV cache memory \((?P<avail>[\d.]+) GiB\)\.(?: Based on the available "
                         r"memory,(?: the estimated maximum model length is (?P<est>\d+))?)?"),
    "tokens": lazyre.compile(r"The model's max seq len \((?P<maxlen>\d+)\) is larger than the maximum number of tokens that "
                         r"can be stored in KV cache \((?:(?P<tokens>\d+)\))?"),
    "profiling": lazyre.compile(r"Error in memory profiling\. Initial (?:free|used) memory (?P<a>[\d.e+]+)(?: GiB)?, "
                            r"current(?:ly used)? (?:free )?memory (?P<b>[\d.e+]+)"),
}


_WRAPPED_TOKENS = lazyre.compile(r"^\s*(\d+)\)")
_ESTIMATE = lazyre.compile(r"^\s*Based on the available memory, the estimated maximum model length is (\d+)")


def kv_cache_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    h = hits[0]
    text = h.exc.message if h.exc else h.evidence.text
    frames = h.exc.frames if h.exc else ()
    f = facts_of(ctx.run, frames)
    util_flag = "--vllm_gpu_memory_utilization" if f.framework == "swift" or f.colocate else "--gpu_memory_utilization"
    len_flag = "--vllm_max_model_len"
    if f.server_launch is not None and f.trainer_launch is None:
        util_flag, len_flag = ("--gpu_memory_utilization", "--max_model_len") if f.server_launch.command == "vllm-serve" \
            else ("--vllm_gpu_memory_utilization", "--vllm_max_model_len")
    cur = f.util
    cur_s = f.util_text() if cur is not None else "?"
    # a refusal read without its type (the pattern's `refused` group) counts as the exception itself
    if not any(x.exc or x.groups.get("refused") for x in hits) \
            and not any("# GPU blocks: 0," in x.evidence.text for x in hits):
        # vLLM's own profile lines before (or without) its exception: kv_profile.py reads them, or drops a healthy one
        tail = [t.text for t in ctx.tails.get(h.evidence.path) or ()]
        return profile_diagnosis(hits, tail, util_flag, len_flag)  # type: ignore[return-value]
    fix: list[str] = []
    m = _KV_NUMS["startup"].search(text)
    if m:
        free, total, util, req = (float(m.group(k)) for k in ("free", "total", "util", "req"))
        fit = _round_down((free - 1.0) / total) if total else None
        used = total - free
        msg = (f"vLLM starts with {free:g} of {total:g} GiB free on its GPU, but gpu_memory_utilization {util:g} asks for "
               f"{req:g} GiB: {used:.1f} GiB are already held by another process or by this process's training state.")
        if fit and fit >= 0.1:
            fix.append(f"{util_flag} {_fmt_util(fit)} or lower (fits in the {free:g} GiB free, leaving ~1 GiB headroom); "
                       f"vLLM needs its weights plus a KV cache for one full sequence inside that share.")
        else:
            fix.append(f"Only {free:g} GiB are free: free the GPU first (another job, a stale process, or the training "
                       f"state: see below) before vLLM starts.")
        if f.colocate and f.framework == "swift":
            fix.extend(x for x in vllm_ladder(f, total, "engine creation", text)[1:] if "vllm_gpu_memory_utilization" not in x)
        else:
            fix.append("Check `nvidia-smi` for other processes on that GPU (a previous run, a rollout server, another rank "
                       "mapped to the same device).")
        return Diagnosis(message=msg, fix=tuple(fix))
    m = _KV_NUMS["needed"].search(text)
    if m:
        maxlen, need, avail = int(m.group("maxlen")), float(m.group("need")), float(m.group("avail"))
        est = m.group("est")
        if est is None:  # the message broken after its first sentence: vLLM's estimate opens the next line
            after = ctx.lines_after(h.evidence.path, h.exc.seq if h.exc else h.seq, 2)
            e = next((x for x in (_ESTIMATE.search(t.text) for t in after) if x), None)
            est = e.group(1) if e else None
        msg = (f"vLLM's KV cache has {avail:g} GiB but one sequence of max_model_len {maxlen} needs {need:g} GiB"
               + (f"; at most {est} tokens fit." if est else "."))
        want = f.max_length or (int(est) if est else None)
        if est:
            v = min(int(est), f.max_length) if f.max_length else int(est)
            # "the model default" only when a launch command was read and does not set it
            default = f.vllm_max_len is None and (f.server_launch is not None or f.trainer_launch is not None)
            fix.append(f"{len_flag} {v} (was {maxlen}{', the model default' if default else ''}): fits the "
                       f"available KV cache" + (f" and still holds max_length {f.max_length}." if f.max_length and
                                                f.max_length <= int(est) else "."))
        elif want:
            fix.append(f"{len_flag} {want} (was {maxlen}): a GRPO rollout never needs more than prompt + "
                       f"max_completion_length tokens.")
        else:
            fix.append(f"{len_flag} <prompt length + max_completion_length> (was {maxlen}).")
        if cur is not None and cur < 0.9:
            ratio = need / avail if avail else None
            fix.append(f"Or raise {util_flag} (now {cur_s})" + (f": the cache must grow {ratio:.1f}x." if ratio else "."))
        return Diagnosis(message=msg, fix=tuple(fix))
    m = _KV_NUMS["tokens"].search(text)
    tokens_read = m.group("tokens") if m else None
    if m and tokens_read is None:
        # the message hard-wrapped right after "KV cache (": its number opens the next line of the same log
        after = ctx.lines_after(h.evidence.path, h.exc.seq if h.exc else h.seq, 1)
        n = _WRAPPED_TOKENS.match(after[0].text) if after else None
        tokens_read = n.group(1) if n else None
        if tokens_read is None:
            maxlen = int(m.group("maxlen"))
            return Diagnosis(message=f"vLLM's KV cache holds fewer tokens than one sequence of max_model_len {maxlen} "
                                     "(the cache's size is cut from the paste).",
                             fix=(f"Lower {len_flag} below what the cache holds (the number after 'KV cache (' in the "
                                  f"full message; a request needs only its prompt + completion tokens), or raise {util_flag}.",))
    if m and tokens_read is not None:
        maxlen, tokens = int(m.group("maxlen")), int(tokens_read)
        msg = (f"vLLM's KV cache holds {tokens} tokens, fewer than one sequence of max_model_len {maxlen}.")
        v = tokens // 256 * 256 or tokens
        if f.max_length and f.max_length <= tokens:
            v = f.max_length
        serving = f.serving_alone(ctx.framework()[0])
        fix.append(f"{len_flag} {v} (was {maxlen}): fits the {tokens}-token cache; a request needs only its prompt + "
                   f"completion tokens" + ("." if serving else " (a GRPO rollout: prompt + max_completion_length)."))
        if cur is not None:
            fix.append(f"Or raise {util_flag} (now {cur_s}) by about {maxlen / max(tokens, 1):.1f}x worth of KV cache.")
        return Diagnosis(message=msg, fix=tuple(fix))
    m = _KV_NUMS["profiling"].search(text)
    if m or "Error in memory profiling" in text:
        msg = ("vLLM's memory profiling saw GPU memory change under it: another process on the same GPU freed or "
               "allocated memory while vLLM measured its budget (in GRPO: the training processes of other ranks, or "
               "the trainer's own model being moved/offloaded while vLLM starts).")
        fix.append("Give vLLM a GPU no other process touches while it starts (server mode on separate GPUs), or make "
                   "sure each rank's vLLM starts after its training model is fully loaded.")
        if f.framework == "trl":
            fix.append("trl 0.14-0.15 patch this assertion only for vLLM 0.7.x: use vllm>=0.7.2,<0.8 with those "
                       "releases, or a newer trl.")
        return Diagnosis(message=msg, fix=tuple(fix))
    # "No available memory for the cache blocks"
    after_weights = ""
    if f.params and cur is not None:
        after_weights = f" ({f.params:g}B in bf16 ≈ {2 * f.params / max(f.tp or 1, 1):.1f} GB of weights per GPU)"
    msg = (f"vLLM has no memory left for its KV cache after loading the weights{after_weights} and profiling: "
           f"gpu_memory_utilization x GPU memory, minus what this process already uses, is <= 0.")
    if "# GPU blocks: 0," in text:  # vLLM 0.2-0.6 log the block count, then raise when it is 0
        msg = ("vLLM logged `# GPU blocks: 0`: it found no room for a single KV-cache block, and raises 'No available "
               "memory for the cache blocks' right after this line. " + msg)
    if f.colocate:
        msg += " In colocate mode the training model in the same process counts against that budget."
    if cur is None and (said := share_said(ctx.paste_lines())) is not None and said.share < 0.3:
        # no launch flag read, but the paste's code or command sets the share: `LLM(..., gpu_memory_utilization=0.1)`
        fix.append(f"{util_flag} 0.9 when vLLM has the GPU alone (now {said.share:g}, read from line "
                   f"{said.line.where.line}): the share is vLLM's whole budget, weights included, and the cache gets "
                   f"what is left; lowering it never makes a model fit.")
    if cur is not None and cur < 0.3:
        fix.append(f"{util_flag} 0.3 or more (now {cur_s}): too small a share for weights plus cache.")
    elif cur is not None and not f.colocate:
        fix.append(f"{util_flag} {_fmt_util(min(0.95, cur + 0.05))} (now {cur_s}) if the GPU has nothing else on it.")
    if f.colocate:
        fix.extend(x for x in vllm_ladder(f, None, "kv", text) if "vllm_gpu_memory_utilization" not in x)
    if not fix:
        fix.append(f"Raise {util_flag}, or free the GPU (other processes, offload the training state).")
    return Diagnosis(message=msg, fix=tuple(fix))
