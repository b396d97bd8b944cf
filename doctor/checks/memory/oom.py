"""GD201/GD202: CUDA/NPU out of memory in the training process or in the vLLM rollout engine (colocated or a
separate rollout server). Which side ran out matters because the levers differ (``_oom.side_of``); the fixes are
the ladders of ``_ladders``, or, for a rollout server, the flags of the server's own command."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding
from ...rules import MAX_EVIDENCE, Hit, PatternRule, fold
from ...signals import ExceptionInfo
from ...values import as_number
from .. import _data_parallel as data_parallel
from .._numbers import ASSUMED, READ, mark
from ..fallback.exceptions import describe_frame
from ._account import account, order
from ._facts import DOC_MAX_PIXELS, MM_ENV, Facts, facts_of, fmt_gib
from ._ladders import _fmt_util, _round_down, alloc_conf_advice, training_ladder, vllm_ladder
from ._limits import limits
from ._oom import LOAD_STAGE, Side, is_oom, parse_oom, side_of
from .fsdp_levers import share_key
from .own_levers import own_levers

# where weights that do not fit as placed can go instead (DeepSpeed ZeRO-3's zero.Init partitions a model as it is
# built; device_map spreads one over the visible GPUs)
LOAD_FIX = ("Place fewer weights on each GPU at load: build the model under DeepSpeed ZeRO-3 (a zero3 config given "
            "before from_pretrained, so its weights are partitioned as they load) instead of moving it whole with "
            ".to()/.cuda(), put the frozen models (reference, reward) on other GPUs or the CPU, or load them in 8/4 bit.")


def _the(stage: str) -> str:
    return stage if stage.startswith(("generation", "KV", "engine creation", "weight sync", "wake-up", "allocation", "serving")) \
        else f"the {stage}"


def _where(side: Side) -> str:
    if side.frame is None:
        return ""
    return f" ({describe_frame(side.frame)})"


def numbers_line(oom: dict[str, Any], ranks: tuple[int, ...]) -> str:
    if not oom.get("alloc"):
        return ""
    gpu = oom.get("gpu")
    s = f"GPU {gpu}" if gpu is not None else "the GPU"
    bits = [f"tried to allocate {fmt_gib(oom['alloc'])}"]
    if oom.get("free") is not None and oom.get("total"):
        bits.append(f"with {fmt_gib(oom['free'])} free of {fmt_gib(oom['total'])}")
    elif oom.get("total"):
        bits.append(f"on a {fmt_gib(oom['total'])} GPU")
    line = f"{s}: {' '.join(bits)}"
    if oom.get("in_use"):
        line += f"; this process held {fmt_gib(oom['in_use'])}"
    if oom.get("procs") and len(oom["procs"]) > 1:
        line += (f"; {len(oom['procs'])} processes share this GPU ("
                 + ", ".join(f"pid {p} {fmt_gib(v)}" for p, v in oom["procs"]) + ")")
    return line + "."


def _ranks_text(ranks: tuple[int, ...], count: int) -> str:
    if not ranks:
        return ""
    if len(ranks) == 1:
        return f" on rank {ranks[0]}"
    return f" on {len(ranks)} ranks ({', '.join(map(str, ranks[:8]))}{'…' if len(ranks) > 8 else ''})"


# frameworks whose training process can hold a colocated vLLM engine (ms-swift, trl and what is built on it, verl's
# and OpenRLHF's hybrid engines, axolotl's GRPO through trl); a framework not told may be any of them
_COLOCATING = frozenset({"ms-swift", "trl", "unsloth", "verifiers", "verl", "easyr1", "openrlhf", "axolotl", "vllm"})
_ROLLOUT_LIBS = ("/trl/", "/swift/", "/vllm/", "/unsloth", "/verl/", "/openrlhf/", "/axolotl/", "/verifiers/")


def vllm_possible(framework: str | None, frames: tuple, f) -> bool:
    """Whether the OOM'd run may have a vLLM engine on its GPU: its arguments say so, its framework can colocate one,
    or (framework not told) its frames do not rule it out."""
    if f.use_vllm or f.mode:
        return True
    if framework is not None:
        return framework in _COLOCATING
    paths = [fr.path.replace(chr(92), "/") for fr in frames]
    return not paths or any(lib in p for p in paths for lib in _ROLLOUT_LIBS)


class OomRule(PatternRule):
    """CUDA/NPU out-of-memory, reported by the rule whose side (options.side: training | vllm) the frames point at."""
    idle_silent = True   # fed nothing: no hits (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.want = meta.options.get("side", "training")

    def feed(self, signal: Any) -> None:
        if isinstance(signal, ExceptionInfo) and not is_oom(signal):
            return
        super().feed(signal)

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.hits:
            return []
        self.hits.sort(key=lambda h: h.seq)
        context = [h for h in self.hits if h.groups.get("maxpix")]
        oom_hits = [h for h in self.hits if not h.groups.get("maxpix")]
        exc_seqs = {h.seq for h in oom_hits if h.exc is not None}
        chosen: list[tuple[Hit, Side]] = []
        frames_all = tuple(fr for h in oom_hits if h.exc for fr in h.exc.frames)
        # vLLM's own worker or engine lines anywhere in the input (an issue's title above them belongs to no run)
        vllm_lines = any(_VLLM_RECORD.search(t.raw) for tail in ctx.tails.values() for t in tail)
        if oom_hits:  # runs appended to one log: the configuration of the run that ran out of memory
            ctx = ctx.at(oom_hits[0].evidence)
        f = facts_of(ctx.run, frames_all)
        _from_whole_run(f, ctx)
        told = ctx.framework()[0]
        f.vllm_possible = vllm_possible(told, frames_all, f)
        # no trainer told (a framework named is a trainer beside the engine, whatever prefixes its lines carry)
        f.vllm_only = told == "vllm" or (told is None and not f.known and vllm_lines)
        if context:
            c = context[-1]
            f.max_pixels_log = (int(c.groups["maxpix"]), "Using environment variable" in c.evidence.text)
            f.vl = True
        for h in oom_hits:
            if h.exc is None and h.seq in exc_seqs:
                continue
            frames = h.exc.frames if h.exc else ()
            msg = h.exc.message if h.exc else (h.line.text if h.line else h.evidence.text)
            side = side_of(frames, h.evidence.text, msg, f)
            if side.side == self.want:
                chosen.append((h, side))
        if not chosen:
            return []
        # the informative hit: frames and numbers beat a bare line
        best_hit, best_side = max(chosen, key=lambda hs: (bool(hs[0].exc and hs[0].exc.frames),
                                                          bool(parse_oom(hs[0].evidence.text)), -hs[0].seq))
        hits = [h for h, _ in chosen]
        evidence, count, ranks = fold(hits)
        text = best_hit.exc.message if best_hit.exc else best_hit.evidence.text
        oom = parse_oom(text)
        if not oom:
            for h in hits:
                oom = parse_oom(h.exc.message if h.exc else h.evidence.text)
                if oom:
                    break
        if oom and "by_torch" not in oom and "unalloc" not in oom:
            oom = {**oom, **parse_oom(_continued(best_hit.evidence, ctx))}  # a message hard-wrapped by the terminal
        nums = numbers_line(oom, ranks)
        where = _ranks_text(ranks, count)
        # a cap or other processes: the limit, said and fixed first (_limits.py)
        limit_text = text if ("allowed;" in text or "this process has" in text) else \
            text + " " + _continued(best_hit.evidence, ctx)
        limited, limit_fix, limit_last = limits(limit_text, oom, server_mode=f.mode == "server",
                                                   own_pool=bool(f.colocate))
        if self.want == "training":
            stage = best_side.stage
            msg = (f"Out of GPU memory in the training process{where}"
                   + (f", during {_the(stage)}{_where(best_side)}." if stage else "."))
            if nums:
                msg += " " + nums
            if f.colocate:
                msg += f" The colocated vLLM engine shares this GPU ({share_key(told)} {f.util_text()})."
            loading = stage == LOAD_STAGE
            acct, big = account(f, oom, limited=bool(limited), loading=loading)  # where the memory went, fixes ordered by it
            if acct:
                msg += " " + acct
            if limited:
                msg += " " + limited
            own = own_levers(told, f.run.args)
            if own is not None:
                # ms-swift's ladder names flags verl, EasyR1 and OpenRLHF do not have: their own keys and flags, and
                # the allocator's setting
                alloc = alloc_conf_advice(f, oom)
                ladder = own + ([alloc] if alloc else [])
            else:
                ladder = order(training_ladder(f, oom), big, oom)
            if loading:
                # the weights alone do not fit as placed: where they are placed comes before a step's levers
                ladder = [LOAD_FIX, *ladder]
            fix = limit_fix + ladder + limit_last
            gather = [fr for fr in frames_all if "zero/partition_parameters.py" in fr.path.replace(chr(92), "/")
                      and "gather" in fr.func.lower()]
            if gather:
                # deepspeed/runtime/zero/partition_parameters.py _allgather_params_coalesced allocates one flat buffer
                # for the parameters it gathers: the peak is the gather, not the activations
                msg += (f" The allocation failed in DeepSpeed ZeRO-3's parameter all-gather ({gather[-1].func}): "
                        f"ZeRO-3 was materialising full parameters on every rank at once (for a forward pass, or to "
                        f"push the updated weights to vLLM, which gathers the whole model), and that gather is the "
                        f"peak.")
                if f.framework == "swift":
                    fix.insert(0, "--move_model_batches 20 (or more): ms-swift then gathers and syncs the weights to "
                                  "vLLM in batches of layers instead of the whole model at once (the peak drops with "
                                  "the batch size); with a rollout server this is the first lever.")
                fix.insert(1 if f.framework == "swift" else 0,
                           "Lower ZeRO-3's gather sizes in the DeepSpeed config (stage3_max_live_parameters, "
                           "stage3_prefetch_bucket_size, e.g. 1e8) or offload parameters (zero3_offload).")
            elif data_parallel.shown([fr.path for fr in frames_all], text):
                msg += " " + data_parallel.SAID
                fix.insert(0, data_parallel.FIX)
        else:
            # vLLM alone: a `vllm serve` and no trainer anywhere in the run is serving, not a trainer's rollout server
            alone = f.serving_alone(told)
            server = not alone and (f.mode == "server" or (
                f.server_launch is not None and best_side.frame is None
                and best_side.stage in ("rollout server", "engine", "vision encoder")))
            stage = best_side.stage or "generation"
            if alone and stage == "rollout server":
                stage = "serving requests"
            serving = not server and (told == "vllm" or f.vllm_only)
            owner = "the vLLM rollout server" if server else "the vLLM engine" if serving else "the vLLM rollout engine"
            msg = f"Out of GPU memory in {owner}{where}, during {_the(stage)}{_where(best_side)}."
            if "cumem" in text:
                msg += (" cumem_allocator.cpp is vLLM's sleep-mode memory pool: vLLM could not map its weights or KV "
                        "cache back while the training state held the GPU.")
            if nums:
                msg += " " + nums
            if not server and f.colocate:
                msg += " " + colocate_context(f)
            if limited:
                msg += " " + limited
            util = next((float(m.group(1)) for tail in ctx.tails.values() for t in tail
                         for m in [_UTIL_LINE.search(t.text)] if m), None) if serving else None
            util_from = "vLLM's memory-profiling line"
            served = f.server_launch.flags if f.server_launch else {}
            launched = as_number(served.get("gpu_memory_utilization"))
            if util is None and launched is not None:
                util, util_from = launched, "the serve command"
            tp = as_number(served.get("tensor_parallel_size"))
            weights = weights_do_not_fit(oom, " ".join(t.text for tail in ctx.tails.values() for t in tail),
                                         int(tp) if tp else None) if serving else None
            fix = limit_fix + (server_ladder(f, oom) if server else
                               serving_ladder(text, util, weights, util_from, served) if serving else
                               vllm_ladder(f, oom.get("total"), stage, text)) + limit_last
            if best_side.stage == "weight sync to vLLM" and f.framework == "swift" and f.has("move_model_batches") \
                    and not any("move_model_batches" in x for x in fix):
                fix.insert(0, "--move_model_batches 8 (or more): sync the weights to vLLM in batches of layers "
                              "instead of gathering the whole model at once.")
        if not fix:
            fix = list(self.meta.fix)
        title = "Out of GPU memory in the vLLM engine (no trainer in the log)" if \
            self.want == "vllm" and not server and serving else None
        if self.want == "training" and best_side.stage == LOAD_STAGE:
            title = "Out of GPU memory while the model's weights were moved to the GPU"
        return [self.make(message=msg, fix=fix, evidence=evidence[:MAX_EVIDENCE], count=count, ranks=ranks,
                          seq=hits[0].seq, title=title)]


def _continued(ev, ctx: RunState, n: int = 3) -> str:
    """The evidence line with the next lines of its log joined to it (a long OOM message wrapped by a terminal: its
    "allocated by PyTorch" and "reserved but unallocated" figures are on the next line), from the log's last lines."""
    tail = ctx.tails.get(ev.path) or ()
    nxt = [ln.text for ln in tail if ev.line < ln.where.line <= ev.line + n]
    return ev.text + "".join(nxt)


def colocate_context(f: Facts) -> str:
    bits = [f"vllm_gpu_memory_utilization {f.util_text()}"]
    if f.tp:
        bits.append(f"vllm_tensor_parallel_size {f.tp}")
    if f.sleep is not None:
        bits.append(f"sleep_level {f.sleep}")
    if f.ds_raw:
        bits.append(f"--deepspeed {f.ds_raw}")
    who = f"{(f.tuner or '').lower() or 'lora'} training of {f.model}" if f.model else ""
    on = f" on {f.world} GPUs" if f.world else ""
    return f"Colocated engine: {', '.join(bits)}" + (f"; {who}{on}" if who else on) + "."


_WARMUP = lazyre.compile(r"warming up sampler with (\d+)\s+dummy requests")


# a record of vLLM's own logger (vllm/logger.py: "INFO 03-27 10:29:01 [worker.py:267] ...") or a line of its worker
# and engine processes, behind whatever prefixes a launcher or a paste added
_VLLM_RECORD = lazyre.compile(r"\((?:VllmWorker|EngineCore|RayWorkerWrapper|APIServer)\w*[^)]*\)|"
                              r"\b(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./]+\.py:\d+\]")
# vLLM's memory-profiling line: "the current vLLM instance can use total_gpu_memory (44.53GiB) x gpu_memory_utilization
# (0.98) = 43.64GiB" (vllm 0.6-0.8 worker/worker.py determine_num_available_blocks)
_UTIL_LINE = lazyre.compile(r"gpu_memory_utilization \((0?\.\d+|1(?:\.0+)?)\)")


# vLLM's lines from its memory profile on (after the weights loaded): the KV cache sized, its blocks counted
_PROFILED = lazyre.compile(r"# (?:GPU|cuda) blocks:|KV cache|memory profiling|gpu_memory_utilization \(|Memory profiling")


def weights_do_not_fit(oom: dict[str, Any], lines_text: str, tp: int | None = None) -> str | None:
    """The sentence for an OOM before vLLM's memory profile with the GPU nearly all taken (weights loading): there
    gpu_memory_utilization does not apply yet; None otherwise."""
    held, total = oom.get("by_torch"), oom.get("total")
    if not held or not total or held < 0.9 * total or _PROFILED.search(lines_text):
        return None
    return (f"The GPU ran out with {held:.2f} of {total:.2f} GiB already allocated, and no line of vLLM's memory "
            f"profile (KV cache, GPU blocks) comes before it in this log: if the engine was still loading its weights, "
            f"they do not fit this GPU, and gpu_memory_utilization does not apply yet. Spread the model over more GPUs "
            + (f"(--tensor-parallel-size {tp * 2}, now {tp} on the serve command)" if tp else
               "(--tensor-parallel-size 2 or more)")
            + ", load a quantised version of it, or use a GPU that holds its weights.")


def serving_ladder(text: str, util: float | None = None, weights: str | None = None,
                   util_from: str = "vLLM's memory-profiling line", flags: dict[str, Any] | None = None) -> list[str]:
    """An OOM of vLLM serving on its own (no trainer): the engine's own levers, as `vllm serve` spells them.
    ``util``: the gpu_memory_utilization the run shows (``util_from``: where it was read); ``weights``:
    weights_do_not_fit's sentence, which comes first when the weights did not fit."""
    out = [weights] if weights else []
    warm = _WARMUP.search(text)
    if warm or "max_num_seqs" in text:
        n = int(warm.group(1)) if warm else None
        out.append("--max-num-seqs " + (f"{max(n // 4, 16)} (now {n}, read from the message)" if n else "256")
                   + ": at start-up vLLM runs its sampler on that many dummy requests at once, and their logits "
                     "(vocabulary x requests) must fit beside the pre-allocated KV cache.")
    lower = (f"{max(round(util - 0.1, 2), 0.1):g} (now {util:g}, read from {util_from})"
             if util is not None else "0.8 (now 0.9 assumed: vLLM's default, the log does not show the value)")
    out.append(f"--gpu-memory-utilization {lower}: vLLM pre-allocates that share for weights and KV cache, and the "
               f"sampler's, CUDA graphs' and activations' buffers are allocated in the rest.")
    flags = flags or {}
    max_len = as_number(flags.get("max_model_len"))
    tp = as_number(flags.get("tensor_parallel_size"))
    more = (f"or more GPUs (--tensor-parallel-size {int(tp) * 2}, now {int(tp)} on the serve command)" if tp
            else "or more GPUs (--tensor-parallel-size)")
    if max_len:
        out.append(f"--max-model-len below {int(max_len)} (now {int(max_len)} on the serve command), down to the longest "
                   f"request you serve: the KV cache must hold one sequence of that length, {more}.")
    else:
        out.append(f"--max-model-len to the longest request you serve (unset, vLLM plans for the model's full context), "
                   f"{more}.")
    return out


def server_ladder(f: Facts, oom: dict[str, Any]) -> list[str]:
    """An OOM in a separate rollout server: the fixes go on the server's command, not the trainer's."""
    out: list[str] = []
    srv = f.server_launch
    name = {"rollout": "swift rollout", "vllm-serve": "trl vllm-serve", "serve": "vllm serve"}.get(
        srv.command if srv else "", "the rollout server")
    tr_env = f.trainer_launch.env if f.trainer_launch else {}
    srv_env = srv.env if srv else {}
    lim = {k: v for k, v in tr_env.items() if k in MM_ENV}
    missing = {k: v for k, v in lim.items() if k not in srv_env}
    if missing:
        out.append(f"The trainer's launch sets {' '.join(f'{k}={v}' for k, v in missing.items())} but the {name} launch "
                   f"does not: the server encodes images/videos at its default limits. Start {name} with the same "
                   f"{', '.join(missing)}.")
    elif f.vl and srv is not None and not any(k in srv_env for k in MM_ENV):
        out.append(f"Set MAX_PIXELS={DOC_MAX_PIXELS} (and VIDEO_MAX_PIXELS / FPS_MAX_FRAMES for videos) in the "
                   f"{name} launch environment: the server encodes media at its default limits.")
    flags = srv.flags if srv else {}
    if name == "swift rollout":
        util_flag = "--vllm_gpu_memory_utilization" if (f.mm is None or f.mm >= (3, 7)) else "--gpu_memory_utilization"
        len_flag = "--vllm_max_model_len" if (f.mm is None or f.mm >= (3, 7)) else "--max_model_len"
    elif name == "trl vllm-serve":
        util_flag, len_flag = "--gpu_memory_utilization", "--max_model_len"
    else:
        util_flag, len_flag = "--gpu-memory-utilization", "--max-model-len"
    util = as_number(flags.get(util_flag.lstrip("-").replace("-", "_")))
    total = oom.get("total")
    cur = util if util is not None else 0.9
    left = f" ({fmt_gib((1 - cur) * total)} of {fmt_gib(total)})" if total else ""
    out.append(f"{util_flag} {_fmt_util(_round_down(cur - 0.1))} on the {name} command (now "
               f"{mark(_fmt_util(cur), READ if util is not None else ASSUMED)}): vLLM pre-allocates that share for "
               f"weights and KV cache, and activations of large inputs (the vision encoder) must fit in the rest{left}.")
    if len_flag.lstrip("-").replace("-", "_") not in flags:
        out.append(f"{len_flag} <longest prompt + max_completion_length> on the {name} command: unset, vLLM plans for "
                   f"the model's full context window.")
    out.append("Shorten or filter the longest inputs (long videos: fewer frames with FPS_MAX_FRAMES).")
    return out


def _from_whole_run(f: Facts, ctx: RunState) -> None:
    """What the run's arguments do not give and its lines do: a ZeRO stage in its words or a pasted DeepSpeed config
    (classify/run_context.py), the trainer that ran (its frames, class names, metric keys): the levers follow them."""
    if f.zero is None and f.ds_raw is None:
        from ..fallback.structural import run_facts_of
        where = run_facts_of(ctx).get("zero3")
        if where:
            f.zero, f.zero_read = 3, f"read from {where}"
    if f.trainer is None:
        f.trainer = ctx.trainer_kind().kind
