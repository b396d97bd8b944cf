"""Reading a GPU out-of-memory error: the numbers of torch's message, and which side ran out (rollout engine or
training), decided by the frames innermost first: vLLM code (``site-packages/vllm/``, swift's GRPOVllmEngine,
``prepare_vllm``, ``_initialize_kv_caches``, ``cumem_allocator``, a vLLM engine-core log prefix) means the rollout
engine; ``compute_loss``, ``_get_per_token_logps``, ``backward``, an optimizer step mean training."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ... import lazyre
from ...classify.cut_stage import in_stage
from ...signals import ExceptionInfo, Frame
from ._facts import Facts, gib

_OOM_TEXT = lazyre.compile(
    r"(?i)(?:\b(?:CUDA|NPU|XPU|HIP|MPS)\b[^.\n]{0,20}out of memory|CUDA Error: out of memory|"
    r"out of memory occurred when warming up|cudaErrorMemoryAllocation|Cuda failure (?:2 )?'out of memory'|"
    r"CUBLAS_STATUS_ALLOC_FAILED|HIP out of memory|OutOfMemoryError)")
_ALLOC_NEW = lazyre.compile(
    r"Tried to allocate (?P<alloc>[\d.]+) (?P<au>[KMGT]i?B)\. (?:GPU|NPU|Device) (?P<gpu>\d+) has a total "
    r"capacit(?:y(?: of (?P<total>\d+(?:\.\d+)?)(?: (?P<tu>[KMGT]i?B))?(?: of which (?P<free>[\d.]+) "
    r"(?P<fu>[KMGT]i?B) is free)?)?)?")
_ALLOC_OLD = lazyre.compile(
    r"Tried to allocate (?P<alloc>[\d.]+) (?P<au>[KMGT]i?B) \((?:GPU|NPU) (?P<gpu>\d+); (?P<total>[\d.]+) "
    r"(?P<tu>[KMGT]i?B) total capacity; (?P<used>[\d.]+) (?P<uu>[KMGT]i?B) already allocated; (?P<free>[\d.]+) "
    r"(?P<fu>[KMGT]i?B) free;(?: (?P<reserved>[\d.]+) (?P<ru>[KMGT]i?B) reserved in total by PyTorch)?")
_THIS_PROC = lazyre.compile(r"this process has (?P<v>[\d.]+) (?P<u>[KMGT]i?B) memory in use")
_PROC = lazyre.compile(r"Process (?P<pid>\d+) has (?P<v>[\d.]+) (?P<u>[KMGT]i?B) memory in use")
_UNALLOC = lazyre.compile(r"(?P<v>[\d.]+) (?P<u>[KMGT]i?B) is reserved by PyTorch but unallocated")
_BY_TORCH = lazyre.compile(r"Of the allocated memory (?P<v>[\d.]+) (?P<u>[KMGT]i?B) is allocated by PyTorch")


def parse_oom(text: str) -> dict[str, Any]:
    """Numbers of a torch OOM message (torch >= 2.1 and the older '(GPU 0; 23.69 GiB total capacity; ...)')."""
    out: dict[str, Any] = {}
    m = _ALLOC_NEW.search(text) or _ALLOC_OLD.search(text)
    if m:
        g = m.groupdict()
        out["alloc"] = gib(g["alloc"], g["au"])
        out["gpu"] = int(g["gpu"])
        out["total"] = gib(g.get("total"), g.get("tu") or "GiB")
        out["free"] = gib(g.get("free"), g.get("fu"))
        if g.get("used"):
            out["by_torch"] = gib(g["used"], g["uu"])
        if g.get("reserved"):
            out["reserved"] = gib(g["reserved"], g["ru"])
    m = _THIS_PROC.search(text)
    if m:
        out["in_use"] = gib(m.group("v"), m.group("u"))
    procs = [(int(p.group("pid")), gib(p.group("v"), p.group("u"))) for p in _PROC.finditer(text)]
    if procs:
        out["procs"] = procs
        if "in_use" not in out and len(procs) == 1:
            out["in_use"] = procs[0][1]
    m = _UNALLOC.search(text)
    if m:
        out["unalloc"] = gib(m.group("v"), m.group("u"))
    m = _BY_TORCH.search(text)
    if m:
        out["by_torch"] = gib(m.group("v"), m.group("u"))
    return out


def is_oom(exc: ExceptionInfo) -> bool:
    if exc.short_type.endswith("OutOfMemoryError"):
        return True
    return bool(_OOM_TEXT.search(exc.message)) and exc.short_type not in ("MemoryError",)


# ---------------------------------------------------------------------------------- side of an OOM

_VLLM_PATHS = ("/vllm/", "vllm_ascend/", "grpo_vllm_engine", "/vllm_engine.py", "cumem")
# (vLLM 0.10+ v1/core/kv_cache_utils.py get_kv_cache_configs -> check_enough_kv_cache_memory raises the V1 refusals)
_KV_FUNCS = {"_initialize_kv_caches", "initialize_cache", "determine_num_available_blocks", "_init_cache",
             "check_enough_kv_cache_memory", "get_kv_cache_configs",
             "determine_available_memory", "profile_run", "_dummy_run", "_dummy_sampler_run", "initialize_from_config",
             "_initialize_kv_caches_v1", "initialize_kv_cache", "get_kv_cache_config", "compile_or_warm_up_model",
             "capture_model", "_allocate_kv_cache_tensors", "_init_cache_engine"}
# a worker's init_device sets the CUDA device and joins the process group (vLLM's distributed init,
# doctor/data/cut_stages.toml "vllm-dist"): it allocates no KV cache, so it is not read as engine memory
_VLLM_INIT_FUNCS = {"prepare_vllm", "_prepare_vllm_engine", "_prepare_vllm", "load_model"}


def builds_vllm(fr) -> bool:
    """A frame that builds a vLLM engine: a trainer's vLLM set-up, or vLLM's own load_model (a framework's own
    load_model, LLaMA-Factory's model/loader.py, loads the training model, not an engine)."""
    return fr.func in _VLLM_INIT_FUNCS and (fr.func != "load_model" or "vllm" in fr.path.lower())
_VLLM_FUNCS = {"wake_up", "_engine_infer", "_fast_infer", "_infer_vllm", "infer_vllm", "_vllm_generate"}
_SYNC_FUNCS = {"_move_model_to_vllm", "_sync_param_to_vllm", "_load_state_dict_to_vllm", "_sync_peft_weights",
               "load_weights", "_move_full_model_to_vllm", "_move_adapter_to_vllm", "update_named_param"}
_TRAIN_FUNCS = {"compute_loss": "loss computation", "_compute_loss": "loss computation",
                "_get_per_token_logps": "policy forward for per-token log-probs",
                "_get_per_token_logps_and_entropies": "policy forward for per-token log-probs",
                "_get_last_hidden_state": "policy forward for per-token log-probs",
                "compute_liger_loss": "loss computation", "backward": "backward", "step": "optimizer step",
                "training_step": "training step", "_inner_training_loop": "training step",
                "_calculate_rewards": "reward model", "_score_completions": "reward model",
                "_compute_rewards": "reward model", "evaluation_loop": "evaluation", "prediction_step": "evaluation",
                # verl's actor and reference workers (workers/actor/dp_actor.py, workers/fsdp_workers.py)
                "update_policy": "policy update", "update_actor": "policy update",
                "_forward_micro_batch": "policy forward for log-probs", "compute_log_prob": "policy forward for log-probs",
                "compute_ref_log_prob": "reference model forward"}
_GEN_FUNCS = {"_generate_completions", "_generate_and_score_completions", "_generate", "generate",
              "_fast_infer", "_colocate_infer", "_infer_single_or_multi_turn"}
# (not verl's `(WorkerDict pid=N)`: Ray's fused actor/rollout/ref worker, whose lines are training as often as rollout)
_VLLM_PREFIX = lazyre.compile(r"^(?:\[rank\d+\]:\s?)?(?:\((?:VllmWorker|EngineCore|RayWorker|Worker(?!Dict)|APIServer)\w*[^)]*\)\s+|"
                          r"(?:ERROR|WARNING|INFO|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d)")


@dataclass
class Side:
    """Which side of a GRPO run ran out of memory (vLLM or training), and in which stage."""
    side: str            # "vllm" | "training"
    stage: str           # "kv-cache init", "generation", "weight sync", "vision encoder", "loss", ...
    frame: Frame | None  # the frame that decided


# the model's weights moved to the GPU (torch/nn/modules/module.py Module.to / .cuda apply `convert` to every tensor
# through `_apply`), or read into it by transformers' loader: the allocation is the weights', before any step
_LOAD_FUNCS = frozenset({"convert", "_apply", "cuda"})
_LOAD_LOADER = frozenset({"_load_state_dict_into_meta_model", "_load_pretrained_model", "load_state_dict",
                          "_load_state_dict_into_model"})
LOAD_STAGE = "model load (moving the weights to the GPU)"


def side_of(frames: tuple[Frame, ...], raw: str, message: str, facts: Facts) -> Side:
    vision = any(re.search(r"vision|visual|patch_embed", f.func + " " + f.code) for f in frames[-8:])
    if frames:
        last = frames[-1]
        path = last.path.replace(chr(92), "/")
        if (path.endswith("torch/nn/modules/module.py") and last.func in _LOAD_FUNCS) or \
                (last.func in _LOAD_LOADER and "/transformers/" in path):
            return Side("training", LOAD_STAGE, last)
    for fr in reversed(frames):
        func, path = fr.func, fr.path
        if func in _KV_FUNCS or "kv_cache" in path:
            return Side("vllm", "KV-cache / memory-profiling init", fr)
        if func in _SYNC_FUNCS and "/vllm/" not in path:
            return Side("vllm", "weight sync to vLLM", fr)
        if in_stage("vllm-dist", fr):
            return Side("vllm", "distributed init (CUDA device and process group)", fr)
        if builds_vllm(fr) or "GRPOVllmEngine(" in fr.code or re.match(r"(?:self\.)?llm\s*=\s*LLM\(", fr.code):
            return Side("vllm", "engine creation", fr)
        if func == "wake_up":
            return Side("vllm", "wake-up from sleep mode", fr)
        if any(p in path for p in _VLLM_PATHS) or func in _VLLM_FUNCS:
            if "wake_up" in {f.func for f in frames}:
                return Side("vllm", "wake-up from sleep mode", fr)
            return Side("vllm", "vision encoder" if vision else "generation", fr)
        if func in _TRAIN_FUNCS and not (func == "step" and "optim" not in path and "deepspeed" not in path):
            return Side("training", _TRAIN_FUNCS[func] + (", in the vision tower," if vision else ""), fr)
        if func in _GEN_FUNCS and ("transformers/generation" in path or func.startswith("_generate")):
            if facts.use_vllm:
                return Side("vllm", "generation", fr)
            return Side("training", "generation with transformers", fr)
    if _VLLM_PREFIX.match(raw) or "cumem_allocator" in message or "warming up sampler" in message:
        stage = "allocation from the sleep-mode memory pool (cumem_allocator)" if "cumem" in message else (
            "sampler warm-up" if "warming up" in message else ("vision encoder" if vision else "engine"))
        return Side("vllm", stage, None)
    if facts.server_launch is not None and facts.trainer_launch is None:
        return Side("vllm", "rollout server", None)
    if not frames and facts.vllm_only:  # a bare OOM line among a vLLM run's own lines, no trainer in sight
        return Side("vllm", "engine start-up or serving", None)
    return Side("training", "", None)
