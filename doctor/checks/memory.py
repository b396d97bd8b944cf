"""GPU memory failures of GRPO runs: training OOM vs rollout-engine (vLLM) OOM, vLLM KV-cache sizing
errors, tracebacks cut before their OOM line, and ZeRO-3 offload that frees nothing.

Which side ran out matters because the levers differ. The frames decide (innermost first): vLLM code
(``site-packages/vllm/``, swift's GRPOVllmEngine, ``prepare_vllm``, ``_initialize_kv_caches``,
``cumem_allocator``, a vLLM engine-core log prefix) means the rollout engine; ``compute_loss``,
``_get_per_token_logps``, ``backward``, an optimizer step mean training. Fixes are a ladder of
levers ordered by what this run has NOT already set (seed 03, ms-swift GRPO docs "colocate-mode
OOM": vllm_gpu_memory_utilization, sleep_level, offload_model/optimizer, ZeRO-3, tensor parallel,
move_model_batches, LoRA, batch/length, gradient checkpointing, MAX_PIXELS, expandable segments),
each with the flag spelling of the version at hand.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import EXCEPTION, LINE, Evidence, ExceptionInfo, Finding, Frame, Severity
from ..rules import MAX_EVIDENCE, FinishContext, Hit, PatternRule, Rule, fold
from ..sources.swiftconfig import Launch, RunConfig
from .fallback.exceptions import CONSEQUENCE_TYPES, describe_frame
from ..planner import _num  # one number reader for the memory plan and the OOM fixes

# --------------------------------------------------------------------------------------------- facts

_PARAMS = re.compile(r"(?<![\d.])(\d+(?:(?:\.|_+)\d+)?)\s*[Bb](?![a-zA-Z])")
_VL = re.compile(r"(?i)(?:[-_]vl\b|[-_]vl[-_]|omni|internvl|llava|minicpm-?v|glm-?4v|cogvlm|ovis|pixtral|"
                 r"[-_]vision|qwen2_5_vl|qwen2_vl|qwen3_vl|idefics|paligemma|mllama)")
_MM_ENV = ("MAX_PIXELS", "VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES", "VIDEO_TOTAL_PIXELS", "IMAGE_MAX_TOKEN_NUM",
           "VIDEO_MAX_TOKEN_NUM", "MIN_PIXELS", "FPS")
DOC_MAX_PIXELS = 262144  # docs/source_en/BestPractices/GRPO-Multi-Modal-Training.md L292

# ms-swift version that introduced a flag (swift-notes §7); None = exists in every GRPO version.
_SINCE = {"sleep_level": (3, 3), "offload_model": (3, 3), "offload_optimizer": (3, 3),
          "move_model_batches": (3, 3), "vllm_mode": (3, 5), "vllm_tensor_parallel_size": (3, 5),
          "vllm_max_model_len": (3, 1), "vllm_gpu_memory_utilization": (3, 1), "steps_per_generation": (3, 5)}


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    if isinstance(v, (int, float)):
        return bool(v)
    return None


def params_b(model: str | None) -> float | None:
    """'Qwen/Qwen2.5-VL-7B-Instruct' -> 7.0; './Qwen3-1_7B' -> 1.7 (ModelScope writes '.' as '_' or '___')."""
    if not model:
        return None
    name = str(model).rstrip("/").split("/")[-1]
    m = _PARAMS.search(name)
    if not m:
        return None
    return float(re.sub(r"_+", ".", m.group(1)))


def zero_stage(ds: Any) -> tuple[int | None, bool]:
    """'zero3_offload' -> (3, True); 'ds_z2_config.json' -> (2, False); None -> (None, False)."""
    if not ds or not isinstance(ds, str):
        return None, False
    low = ds.lower()
    m = re.search(r"(?:zero|z|stage)[_-]?([0-3])", low)
    return (int(m.group(1)) if m else None), "offload" in low


def gib(value: str | None, unit: str | None) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except ValueError:
        return None
    u = (unit or "GiB").upper().replace("I", "")
    return v * {"KB": 1 / 1024 ** 2, "MB": 1 / 1024, "GB": 1.0, "TB": 1024.0}.get(u, 1.0)


def fmt_gib(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.2f} GiB" if v < 10 else f"{v:.1f} GiB"


@dataclass
class Facts:
    """What the run's configuration says about memory, with each framework's defaults filled in."""

    run: RunConfig
    framework: str = "swift"        # swift | trl
    known: bool = False             # the log or command showed which framework ran
    mm: tuple[int, int] | None = None
    tuner: str | None = None
    tuner_flag: str = "tuner_type"
    zero: int | None = None
    offload_ds: bool = False
    ds_raw: str | None = None
    use_vllm: bool | None = None
    mode: str | None = None         # colocate | server | None (no vLLM)
    util: float | None = None
    util_set: bool = False
    sleep: int | None = None
    offload_model: bool | None = None
    offload_optimizer: bool | None = None
    tp: int | None = None
    vllm_max_len: int | None = None
    max_length: int | None = None
    max_completion: int | None = None
    b: int | None = None
    ga: int | None = None
    grad_ckpt: bool | None = None
    beta: float | None = None
    model: str | None = None
    params: float | None = None
    vl: bool = False
    world: int | None = None
    max_pixels_log: tuple[int, bool] | None = None  # "Setting max_pixels: N" (N, set through the env var)
    env: dict[str, str] = field(default_factory=dict)
    server_launch: Launch | None = None
    trainer_launch: Launch | None = None

    def has(self, flag: str) -> bool:
        if self.framework == "trl":
            return flag in ("vllm_gpu_memory_utilization", "per_device_train_batch_size", "max_completion_length",
                            "gradient_accumulation_steps", "gradient_checkpointing", "vllm_tensor_parallel_size",
                            "vllm_mode")
        since = _SINCE.get(flag)
        return since is None or self.mm is None or self.mm >= since

    @property
    def colocate(self) -> bool:
        return bool(self.use_vllm) and self.mode == "colocate"

    def ds_flag(self, value: str) -> str:
        if self.framework == "trl":
            return (f"a DeepSpeed {value.replace('_', ' ')} accelerate config (accelerate launch --config_file "
                    f"examples/accelerate_configs/deepspeed_{value.split('_')[0]}.yaml in the trl repo)")
        return f"--deepspeed {value}"


def facts_of(run: RunConfig, frames: tuple[Frame, ...] = (), swift_hint: bool = False) -> Facts:
    a = run.args
    paths = " ".join(f.path for f in frames)
    f = Facts(run)
    swiftish = bool(run.command or run.major or "rlhf_type" in a or "swift/" in paths or swift_hint)
    trlish = "trl/" in paths or "vllm_device" in a or "num_processes" in a or any(
        l.command in ("vllm-serve", "accelerate") for l in run.launches)
    f.framework = "trl" if trlish and not swiftish else "swift"
    f.known = swiftish or trlish
    f.mm = run.swift_major_minor
    f.tuner = run.tuner()
    major = run.major
    if "tuner_type" in run.cli or major == 4 or (major is None and "train_type" not in run.cli):
        f.tuner_flag = "tuner_type"
    else:
        f.tuner_flag = "train_type"
    ds = a.get("deepspeed")
    if ds is None and f.framework == "trl":
        ds = a.get("config_file") if isinstance(a.get("config_file"), str) else None
    f.ds_raw = ds if isinstance(ds, str) else None
    f.zero, f.offload_ds = zero_stage(f.ds_raw)
    f.use_vllm = _bool(a.get("use_vllm"))
    mode = a.get("vllm_mode")
    for l in run.launches:
        if l.command in ("rlhf", "sft", "pt"):
            f.trainer_launch = f.trainer_launch or l
        elif l.command in ("rollout", "vllm-serve", "serve", "deploy"):
            f.server_launch = f.server_launch or l
    if f.use_vllm:
        if mode in ("server", "colocate"):
            f.mode = mode
        elif a.get("vllm_server_host") or a.get("vllm_server_base_url"):
            f.mode = "server"
        elif f.framework == "trl":
            f.mode = "colocate"  # trl <= 0.16 ran vLLM in-process (on vllm_device); trl >= 0.18 says vllm_mode
        else:
            f.mode = "colocate"  # swift 3.5-3.11 default; in 3.1-3.4 the engine also lived in the trainer
    util = _num(a.get("vllm_gpu_memory_utilization"))
    f.util_set = util is not None
    f.util = util if util is not None else (0.9 if f.use_vllm else None)
    f.sleep = run.int_arg("sleep_level")
    f.offload_model = _bool(a.get("offload_model"))
    f.offload_optimizer = _bool(a.get("offload_optimizer"))
    f.tp = run.int_arg("vllm_tensor_parallel_size") or run.int_arg("tensor_parallel_size")
    f.vllm_max_len = run.int_arg("vllm_max_model_len")
    f.max_length = run.int_arg("max_length")
    f.max_completion = run.int_arg("max_completion_length") or run.int_arg("max_new_tokens")
    f.b = run.int_arg("per_device_train_batch_size")
    f.ga = run.int_arg("gradient_accumulation_steps")
    f.grad_ckpt = _bool(a.get("gradient_checkpointing"))
    f.beta = _num(a.get("beta"))
    f.model = a.get("model") if isinstance(a.get("model"), str) else None
    f.params = params_b(f.model)
    f.env = dict(run.env)
    if f.trainer_launch:
        f.env.update(f.trainer_launch.env)
    mtype = str(a.get("model_type") or "")
    f.vl = bool(_VL.search(f.model or "") or _VL.search(mtype) or any(k in f.env for k in _MM_ENV)
                or re.search(r"vision|visual|_vl\.py|qwen2_5_vl|qwen3_vl", paths))
    f.world = run.world_size()
    acc = next((l for l in run.launches if l.command == "accelerate"), None)
    if f.world is None and acc is not None:
        n = acc.flags.get("num_processes")
        f.world = n if isinstance(n, int) and not isinstance(n, bool) else None
    return f


# ------------------------------------------------------------------------------------- OOM parsing

_OOM_TEXT = re.compile(
    r"(?i)(?:\b(?:CUDA|NPU|XPU|HIP|MPS)\b[^.\n]{0,20}out of memory|CUDA Error: out of memory|"
    r"out of memory occurred when warming up|cudaErrorMemoryAllocation|Cuda failure (?:2 )?'out of memory'|"
    r"CUBLAS_STATUS_ALLOC_FAILED|HIP out of memory|OutOfMemoryError)")
_ALLOC_NEW = re.compile(
    r"Tried to allocate (?P<alloc>[\d.]+) (?P<au>[KMGT]i?B)\. (?:GPU|NPU|Device) (?P<gpu>\d+) has a total "
    r"capacit(?:y(?: of (?P<total>\d+(?:\.\d+)?)(?: (?P<tu>[KMGT]i?B))?(?: of which (?P<free>[\d.]+) "
    r"(?P<fu>[KMGT]i?B) is free)?)?)?")
_ALLOC_OLD = re.compile(
    r"Tried to allocate (?P<alloc>[\d.]+) (?P<au>[KMGT]i?B) \((?:GPU|NPU) (?P<gpu>\d+); (?P<total>[\d.]+) "
    r"(?P<tu>[KMGT]i?B) total capacity; (?P<used>[\d.]+) (?P<uu>[KMGT]i?B) already allocated; (?P<free>[\d.]+) "
    r"(?P<fu>[KMGT]i?B) free;(?: (?P<reserved>[\d.]+) (?P<ru>[KMGT]i?B) reserved in total by PyTorch)?")
_THIS_PROC = re.compile(r"this process has (?P<v>[\d.]+) (?P<u>[KMGT]i?B) memory in use")
_PROC = re.compile(r"Process (?P<pid>\d+) has (?P<v>[\d.]+) (?P<u>[KMGT]i?B) memory in use")
_UNALLOC = re.compile(r"(?P<v>[\d.]+) (?P<u>[KMGT]i?B) is reserved by PyTorch but unallocated")
_BY_TORCH = re.compile(r"Of the allocated memory (?P<v>[\d.]+) (?P<u>[KMGT]i?B) is allocated by PyTorch")


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
_KV_FUNCS = {"_initialize_kv_caches", "initialize_cache", "determine_num_available_blocks", "_init_cache",
             "determine_available_memory", "profile_run", "_dummy_run", "_dummy_sampler_run", "initialize_from_config",
             "_initialize_kv_caches_v1", "initialize_kv_cache", "get_kv_cache_config", "compile_or_warm_up_model",
             "capture_model", "_allocate_kv_cache_tensors", "_init_cache_engine"}
_VLLM_INIT_FUNCS = {"prepare_vllm", "_prepare_vllm_engine", "_prepare_vllm", "init_device", "load_model"}
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
                "_compute_rewards": "reward model", "evaluation_loop": "evaluation", "prediction_step": "evaluation"}
_GEN_FUNCS = {"_generate_completions", "_generate_and_score_completions", "_generate", "generate",
              "_fast_infer", "_colocate_infer", "_infer_single_or_multi_turn"}
_VLLM_PREFIX = re.compile(r"^(?:\[rank\d+\]:\s?)?(?:\((?:VllmWorker|EngineCore|RayWorker|Worker|APIServer)\w*[^)]*\)\s+|"
                          r"(?:ERROR|WARNING|INFO|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d)")


@dataclass
class Side:
    side: str            # "vllm" | "training"
    stage: str           # "kv-cache init", "generation", "weight sync", "vision encoder", "loss", ...
    frame: Frame | None  # the frame that decided


def side_of(frames: tuple[Frame, ...], raw: str, message: str, facts: Facts) -> Side:
    vision = any(re.search(r"vision|visual|patch_embed", f.func + " " + f.code) for f in frames[-8:])
    for fr in reversed(frames):
        func, path = fr.func, fr.path
        if func in _KV_FUNCS or "kv_cache" in path:
            return Side("vllm", "KV-cache / memory-profiling init", fr)
        if func in _SYNC_FUNCS and "/vllm/" not in path:
            return Side("vllm", "weight sync to vLLM", fr)
        if func in _VLLM_INIT_FUNCS or "GRPOVllmEngine(" in fr.code or re.match(r"(?:self\.)?llm\s*=\s*LLM\(", fr.code):
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
    return Side("training", "", None)


# ------------------------------------------------------------------------------------------- fixes


def _round_down(x: float, step: float = 0.05) -> float:
    return max(step, int(x / step + 1e-9) * step)


def _fmt_util(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def training_state_gb(f: Facts, zero: int | None, offload: bool) -> float | None:
    """Weights + gradients + Adam states per GPU (bf16 weights, fp32 master and moments: 16 bytes/param for
    full fine-tuning; 2 bytes/param of frozen base for LoRA), before activations."""
    p = f.params
    n = max(f.world or 1, 1)
    if p is None:
        return None
    full = (f.tuner or "lora").lower() == "full"
    z = zero or 0
    if not full:
        return 2 * p / n if z == 3 else 2 * p
    if z == 3:
        return 16 * p / n if not offload else 4 * p / n
    if z == 2:
        return 2 * p + (2 * p + (0 if offload else 12 * p)) / n
    if z == 1:
        return 4 * p + 12 * p / n
    return 16 * p


def _gb(x: float) -> str:
    return f"{x:.0f} GB" if x >= 10 else f"{x:.1f} GB"


def _mp_advice(f: Facts, cut: bool = False) -> str | None:
    if not f.vl and not f.max_pixels_log:
        return None
    mp = f.env.get("MAX_PIXELS") or (str(f.run.args.get("max_pixels")) if f.run.args.get("max_pixels") else None)
    if mp is None and f.max_pixels_log and f.max_pixels_log[1]:
        mp = str(f.max_pixels_log[0])
    vid = {k: f.env[k] for k in ("VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES") if k in f.env}
    if mp is None:
        default = (f" (the log shows the default max_pixels {f.max_pixels_log[0]}, "
                   f"{f.max_pixels_log[0] / DOC_MAX_PIXELS:.0f}x more)" if f.max_pixels_log else "")
        return (f"{f.model or 'This model'} is a vision-language model and MAX_PIXELS is not set: each image is encoded at up "
                f"to the template's default size{default}. Set MAX_PIXELS={DOC_MAX_PIXELS} (the value the ms-swift multimodal GRPO "
                f"guide uses against OOM) in the launch environment" + (", and VIDEO_MAX_PIXELS / FPS_MAX_FRAMES for "
                                                                         "videos." if not vid else "."))
    try:
        if int(mp) > DOC_MAX_PIXELS:
            return (f"MAX_PIXELS={DOC_MAX_PIXELS} (the ms-swift multimodal GRPO guide's value against OOM) instead of "
                    f"{mp}: image tokens and vision-encoder activations shrink about {int(mp) / DOC_MAX_PIXELS:.0f}x.")
    except ValueError:
        return None
    return None


def tuner_advice(f: Facts) -> str | None:
    if (f.tuner or "").lower() != "full":
        return None
    flag = f.tuner_flag if f.framework == "swift" else "peft_config (LoRA)"
    extra = ""
    if f.params:
        cur = training_state_gb(f, f.zero, f.offload_ds)
        n = max(f.world or 1, 1)
        per = f", ≈ {_gb(cur)} per GPU with this run's sharding over {n} GPU{'s' if n > 1 else ''}" if cur else ""
        extra = (f" (full fine-tuning of {f.params:g}B parameters carries ≈ {16 * f.params:.0f} GB of weights, "
                 f"gradients and Adam states{per}; LoRA trains a few million parameters on a frozen "
                 f"{2 * f.params:.0f} GB base)")
    if f.framework == "swift":
        return f"--{flag} lora instead of full{extra}."
    return f"Train a LoRA adapter (peft_config) instead of the full model{extra}."


def ds_advice(f: Facts, for_vllm: bool, total: float | None = None) -> str | None:
    if f.framework == "trl" and f.ds_raw is None:
        return None
    if f.ds_raw is None and not f.run.args:
        return ("--deepspeed zero3 if the run does not use it yet (zero3_offload on a single GPU): ZeRO-3 shards "
                "parameters, gradients and optimizer states over the ranks (the DeepSpeed setting is not in this log).")
    z, off = f.zero, f.offload_ds
    n = f.world or 1
    cur = training_state_gb(f, z, off)
    if z is None or z < 3:
        target = "zero3"
        if n <= 1:
            target = "zero3_offload"  # nothing to shard on one GPU: only CPU offload helps
        new = training_state_gb(f, 3, target.endswith("offload"))
        why = ("shards parameters, gradients and optimizer states over the ranks" if n > 1 else
               "on a single GPU only CPU offload moves states out of GPU memory")
        now = f"--deepspeed {f.ds_raw}" if f.ds_raw else "no DeepSpeed"
        est = ""
        if cur is not None and new is not None:
            over = f", more than the {fmt_gib(total)} GPU" if total and cur > total else ""
            est = (f" (weights + gradients + Adam states ≈ {_gb(cur)}{over} -> ≈ {_gb(new)} per GPU for "
                   f"{f.params:g}B {(f.tuner or 'lora').lower()} on {n} GPU{'s' if n > 1 else ''}")
            est += ", leaving that much more room for vLLM)" if for_vllm else ")"
        return f"{f.ds_flag(target)} instead of {now}: ZeRO-3 {why}{est}."
    if z == 3 and not off:
        return (f"{f.ds_flag('zero3_offload')} (this run already uses ZeRO-3; the offload variant keeps optimizer "
                f"states and parameters in CPU memory, slower but much smaller on the GPU).")
    return None


def batch_advice(f: Facts) -> str | None:
    b, ga = f.b, f.ga or 1
    if b is None and not f.run.args:
        return ("Halve per_device_train_batch_size and double gradient_accumulation_steps: the same completions per "
                "step, half the activations at a time (the batch settings are not in this log).")
    if not b or b <= 1:
        return None
    nb = b // 2
    nga = ga * b // nb if (ga * b) % nb == 0 else ga * 2
    mult = "steps_per_generation" if (f.run.cli.get("steps_per_generation") is not None and f.has("steps_per_generation")) \
        else "gradient_accumulation_steps"
    cur_ga = f.run.int_arg(mult) or ga
    nmult = cur_ga * b // nb if (cur_ga * b) % nb == 0 else cur_ga * 2
    return (f"--per_device_train_batch_size {nb} with --{mult} {nmult} (was {b} x {cur_ga}): the same "
            f"{b * cur_ga} completions per rank and step, half the activations at a time.")


def length_advice(f: Facts) -> str | None:
    mc = f.max_completion
    if mc is None and not f.run.args:
        return ("A shorter max_completion_length: activations and logits grow linearly with the completion length "
                "(the value is not in this log).")
    if f.framework == "swift" and mc is None:
        mc = 512  # ms-swift default
    if not mc or mc < 1024:
        return None
    return (f"--max_completion_length {mc // 2} (was {mc}): activations and logits grow linearly with the "
            f"completion length (ms-swift GRPO best practices).")


def ckpt_advice(f: Facts) -> str | None:
    if f.grad_ckpt is False or (f.framework == "trl" and f.grad_ckpt is None):
        return ("--gradient_checkpointing true: recompute activations in the backward pass instead of storing them"
                + (" (off by default in trl)." if f.framework == "trl" and f.grad_ckpt is None else "."))
    return None


def beta_advice(f: Facts) -> str | None:
    if f.framework != "swift" or (f.tuner or "").lower() != "full" or f.beta == 0:
        return None
    size = f" (≈ {2 * f.params:.0f} GB in bf16)" if f.params else ""
    return (f"--beta 0 removes the KL term and with it the second, frozen copy of the model that full-parameter "
            f"GRPO loads as reference{size}; beta is {f.beta if f.beta is not None else 'the default 0.04'} now.")


def alloc_conf_advice(f: Facts, oom: dict[str, Any]) -> str | None:
    conf = f.env.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if "expandable_segments:True" in conf:
        return None
    un = oom.get("unalloc") or (oom.get("reserved", 0) - oom.get("by_torch", 0) if oom.get("reserved") else None)
    why = ""
    if un and un > 0.5:
        why = f" {fmt_gib(un)} were reserved by PyTorch but unallocated (fragmentation)."
    src = "ms-swift FAQ" if f.framework == "swift" else "PyTorch memory docs"
    return f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch environment ({src}).{why}"


def util_advice_training(f: Facts, total: float | None) -> list[str]:
    """Colocated vLLM shares the GPU with training: its share and whether it sleeps during the training step."""
    out = []
    if not f.colocate:
        return out
    if (f.sleep or 0) == 0 and f.has("sleep_level"):
        now = "0 here" if f.sleep == 0 and "sleep_level" in f.run.args else "not set, default 0"
        out.append(f"--sleep_level 1: the colocated vLLM engine keeps its weights and KV cache on the GPU during the "
                   f"training step unless it is put to sleep (sleep_level {now}).")
    if f.util is not None and f.util > 0.5:
        share = f" = {fmt_gib(f.util * total)} of this {fmt_gib(total)} GPU" if total else " of each GPU"
        src = _fmt_util(f.util) if f.util_set else f"the default {_fmt_util(f.util)}"
        out.append(f"--vllm_gpu_memory_utilization 0.5 (was {src}): vLLM may claim "
                   f"{_fmt_util(f.util)} x total{share} for weights and KV cache, on the same GPU as the training state.")
    return out


def vllm_ladder(f: Facts, total: float | None, stage: str, message: str) -> list[str]:
    """Levers for an OOM inside a colocated vLLM engine, in the order the ms-swift GRPO docs give them, minus those
    already set."""
    out: list[str] = []
    cumem = "cumem" in message or "sleep-mode" in stage or "wake-up" in stage
    util = f.util
    if util is not None:
        if util < 0.2:
            weights = f" ({f.params:g}B in bf16 ≈ {2 * f.params / max(f.tp or 1, 1):.1f} GB per GPU" if f.params else ""
            if weights and total:
                weights += f" of the {fmt_gib(util * total)} that {_fmt_util(util)} x {fmt_gib(total)} gives vLLM)"
            elif weights:
                weights += ")"
            out.append(f"vllm_gpu_memory_utilization is only {_fmt_util(util)}: vLLM must fit its weights{weights} "
                       f"and a KV cache for at least one full sequence in that share. Raise it to 0.3-0.4 and make "
                       f"room with the levers below instead of shrinking vLLM further.")
        elif util > 0.5:
            share = f" ({fmt_gib(util * total)} of {fmt_gib(total)})" if total else ""
            src = _fmt_util(util) if f.util_set else f"the default {_fmt_util(util)}"
            new = 0.5 if util >= 0.7 else _round_down(util - 0.1)
            out.append(f"--vllm_gpu_memory_utilization {_fmt_util(new)} (was {src}{share}): in colocate "
                       f"mode vLLM's share and the training state must fit on the same GPU together.")
        # a moderate share (0.2-0.5) is left alone: the levers below free more than shrinking vLLM further
    if f.framework == "swift":
        if not cumem and (f.sleep or 0) == 0 and f.has("sleep_level"):
            out.append("--sleep_level 1: vLLM releases its weights and KV cache while the model trains.")
        missing = [x for x, v in (("--offload_model true", f.offload_model), ("--offload_optimizer true", f.offload_optimizer))
                   if not v]
        if missing and f.has("offload_model"):
            out.append(f"{' '.join(missing)}: move the training model{' and optimizer states' if len(missing) == 2 else ''} "
                       f"to CPU while vLLM generates (not set in the configuration seen).")
    ds = ds_advice(f, for_vllm=True)
    if ds:
        out.append(ds)
    if f.world and f.world > 1 and f.has("vllm_tensor_parallel_size") and (f.params is None or f.params >= 7):
        tp = f.tp or 1
        local = f.run._env_int("NPROC_PER_NODE") or f.world
        cands = [d for d in range(tp + 1, local + 1) if f.world % d == 0 and local % d == 0]
        if cands:
            nt = cands[0] if not f.params or f.params < 14 else cands[min(len(cands) - 1, 1 if tp == 1 else 0)]
            per = (f": {f.params:g}B weights ≈ {2 * f.params / tp:.1f} -> {2 * f.params / nt:.1f} GB per GPU"
                   if f.params else "")
            out.append(f"--vllm_tensor_parallel_size {nt} (was {tp}) splits vLLM's weights and KV cache over {nt} GPUs"
                       f"{per} (it must divide the world size {f.world}).")
    if f.vllm_max_len is None and f.framework == "swift" and f.has("vllm_max_model_len"):
        need = f.max_length or None
        val = f"{need}" if need else "<prompt length + max_completion_length>"
        out.append(f"--vllm_max_model_len {val}: unset, vLLM sizes its KV cache for the model's full context window.")
    if f.framework == "swift" and f.has("move_model_batches") and (f.zero == 3) and not f.run.args.get("move_model_batches") \
            and ((f.tuner or "").lower() == "full" or (f.params or 0) >= 14):
        out.append("--move_model_batches 8 (or more): under ZeRO-3 the weight sync gathers the whole model at once; "
                   "batches of layers keep the peak small.")
    mp = _mp_advice(f)
    if mp:
        out.append(mp)
    if f.has("vllm_mode") and f.framework == "swift":
        out.append("Or give vLLM its own GPUs: `swift rollout --model ...` on separate GPUs and train with "
                   "--vllm_mode server --vllm_server_host <host> --vllm_server_port <port>.")
    elif f.framework == "trl":
        out.append("Or give vLLM its own GPU: `trl vllm-serve --model ...` on a GPU outside the training processes and "
                   "use_vllm (trl 0.16-0.17; trl >= 0.18 also --vllm_mode server); trl 0.14-0.15: --num_processes one "
                   "less than the GPUs, vLLM takes the next one).")
    tu = tuner_advice(f)
    if tu:
        out.append(tu)
    return out


def training_ladder(f: Facts, oom: dict[str, Any]) -> list[str]:
    total = oom.get("total")
    out: list[str] = []
    un = oom.get("unalloc") or 0
    alloc = oom.get("alloc") or 0
    frag_first = un > 1 and alloc and un >= alloc
    if frag_first:
        a = alloc_conf_advice(f, oom)
        if a:
            out.append(a)
    mp = _mp_advice(f)
    if mp:
        out.append(mp)  # for a VL model the image size is the first lever (ms-swift multimodal GRPO guide)
    out.extend(util_advice_training(f, total))
    if not f.run.args and f.framework == "trl":
        out.append("If vLLM shares this GPU (vllm_mode colocate, trl >= 0.18): a lower vllm_gpu_memory_utilization "
                   "(e.g. 0.3) leaves the training step more room.")
    elif not f.run.args:
        out.append("If vLLM runs colocated with training (use_vllm, vllm_mode colocate): --sleep_level 1 and a lower "
                   "--vllm_gpu_memory_utilization (e.g. 0.5) free its share during the training step.")
    ds = ds_advice(f, for_vllm=False, total=total)
    if ds:
        out.append(ds)
    generic_lora = None if f.run.args or f.framework == "trl" else \
        "LoRA (--tuner_type lora; --train_type on ms-swift 3.x) if this is full-parameter training."
    for adv in (tuner_advice(f) or generic_lora, batch_advice(f), length_advice(f), ckpt_advice(f), beta_advice(f)):
        if adv:
            out.append(adv)
    if not frag_first:
        a = alloc_conf_advice(f, oom)
        if a:
            out.append(a)
    return out


def _the(stage: str) -> str:
    return stage if stage.startswith(("generation", "KV", "engine creation", "weight sync", "wake-up", "allocation")) \
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


class OomRule(PatternRule):
    """CUDA/NPU out-of-memory, reported by the rule whose side (options.side: training | vllm) the frames point at."""

    def __init__(self, meta):
        super().__init__(meta)
        self.want = meta.options.get("side", "training")

    def feed(self, kind: str, payload: Any) -> None:
        if kind == EXCEPTION and not is_oom(payload):
            return
        super().feed(kind, payload)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if not self.hits:
            return []
        self.hits.sort(key=lambda h: h.seq)
        context = [h for h in self.hits if h.groups.get("maxpix")]
        oom_hits = [h for h in self.hits if not h.groups.get("maxpix")]
        exc_seqs = {h.seq for h in oom_hits if h.exc is not None}
        chosen: list[tuple[Hit, Side]] = []
        frames_all = tuple(fr for h in oom_hits if h.exc for fr in h.exc.frames)
        f = facts_of(ctx.run, frames_all)
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
        nums = numbers_line(oom, ranks)
        where = _ranks_text(ranks, count)
        if self.want == "training":
            stage = best_side.stage
            msg = (f"Out of GPU memory in the training process{where}"
                   + (f", during {_the(stage)}{_where(best_side)}." if stage else "."))
            if nums:
                msg += " " + nums
            if f.colocate:
                msg += f" The colocated vLLM engine shares this GPU (vllm_gpu_memory_utilization {_fmt_util(f.util or 0.9)})."
            fix = training_ladder(f, oom)
        else:
            server = f.mode == "server" or (f.server_launch is not None and best_side.frame is None
                                            and best_side.stage in ("rollout server", "engine", "vision encoder"))
            server = server or (f.server_launch is not None and f.mode == "server")
            stage = best_side.stage or "generation"
            owner = "the vLLM rollout server" if server else "the vLLM rollout engine"
            msg = f"Out of GPU memory in {owner}{where}, during {_the(stage)}{_where(best_side)}."
            if "cumem" in text:
                msg += (" cumem_allocator.cpp is vLLM's sleep-mode memory pool: vLLM could not map its weights or KV "
                        "cache back while the training state held the GPU.")
            if nums:
                msg += " " + nums
            if not server and f.colocate:
                msg += " " + colocate_context(f)
            fix = server_ladder(f, oom) if server else vllm_ladder(f, oom.get("total"), stage, text)
            if best_side.stage == "weight sync to vLLM" and f.framework == "swift" and f.has("move_model_batches") \
                    and not any("move_model_batches" in x for x in fix):
                fix.insert(0, "--move_model_batches 8 (or more): sync the weights to vLLM in batches of layers "
                              "instead of gathering the whole model at once.")
        if not fix:
            fix = list(self.meta.fix)
        return [self.make(message=msg, fix=fix, evidence=evidence[:MAX_EVIDENCE], count=count, ranks=ranks,
                          seq=hits[0].seq)]


def colocate_context(f: Facts) -> str:
    bits = [f"vllm_gpu_memory_utilization {_fmt_util(f.util or 0.9)}{'' if f.util_set else ' (default)'}"]
    if f.tp:
        bits.append(f"vllm_tensor_parallel_size {f.tp}")
    if f.sleep is not None:
        bits.append(f"sleep_level {f.sleep}")
    if f.ds_raw:
        bits.append(f"--deepspeed {f.ds_raw}")
    who = f"{(f.tuner or '').lower() or 'lora'} training of {f.model}" if f.model else ""
    on = f" on {f.world} GPUs" if f.world else ""
    return f"Colocated engine: {', '.join(bits)}" + (f"; {who}{on}" if who else on) + "."


def server_ladder(f: Facts, oom: dict[str, Any]) -> list[str]:
    """An OOM in a separate rollout server: the fixes go on the server's command, not the trainer's."""
    out: list[str] = []
    srv = f.server_launch
    name = {"rollout": "swift rollout", "vllm-serve": "trl vllm-serve", "serve": "vllm serve"}.get(
        srv.command if srv else "", "the rollout server")
    tr_env = f.trainer_launch.env if f.trainer_launch else {}
    srv_env = srv.env if srv else {}
    lim = {k: v for k, v in tr_env.items() if k in _MM_ENV}
    missing = {k: v for k, v in lim.items() if k not in srv_env}
    if missing:
        out.append(f"The trainer's launch sets {' '.join(f'{k}={v}' for k, v in missing.items())} but the {name} launch "
                   f"does not: the server encodes images/videos at its default limits. Start {name} with the same "
                   f"{', '.join(missing)}.")
    elif f.vl and srv is not None and not any(k in srv_env for k in _MM_ENV):
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
    util = _num(flags.get(util_flag.lstrip("-").replace("-", "_")))
    total = oom.get("total")
    cur = util if util is not None else 0.9
    left = f" ({fmt_gib((1 - cur) * total)} of {fmt_gib(total)})" if total else ""
    out.append(f"{util_flag} {_fmt_util(_round_down(cur - 0.1))} on the {name} command (now "
               f"{_fmt_util(cur)}{'' if util is not None else ', the default'}): vLLM pre-allocates that share for "
               f"weights and KV cache, and activations of large inputs (the vision encoder) must fit in the rest{left}.")
    if len_flag.lstrip("-").replace("-", "_") not in flags:
        out.append(f"{len_flag} <longest prompt + max_completion_length> on the {name} command: unset, vLLM plans for "
                   f"the model's full context window.")
    out.append("Shorten or filter the longest inputs (long videos: fewer frames with FPS_MAX_FRAMES).")
    return out


# --------------------------------------------------------------------------- vLLM KV cache / startup

_KV_NUMS = {
    "startup": re.compile(r"Free memory on device \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is less than "
                          r"desired GPU memory utilization \((?P<util>[\d.]+), (?P<req>[\d.]+) GiB\)"),
    "needed": re.compile(r"max seq len \((?P<maxlen>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger "
                         r"than the available KV cache memory \((?P<avail>[\d.]+) GiB\)\.(?: Based on the available "
                         r"memory,(?: the estimated maximum model length is (?P<est>\d+))?)?"),
    "tokens": re.compile(r"The model's max seq len \((?P<maxlen>\d+)\) is larger than the maximum number of tokens that "
                         r"can be stored in KV cache \((?P<tokens>\d+)\)"),
    "profiling": re.compile(r"Error in memory profiling\. Initial (?:free|used) memory (?P<a>[\d.e+]+)(?: GiB)?, "
                            r"current(?:ly used)? (?:free )?memory (?P<b>[\d.e+]+)"),
}


def kv_cache_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
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
    cur_s = f"{_fmt_util(cur)}{'' if f.util_set else ' (default)'}" if cur is not None else "?"
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
        return {"message": msg, "fix": fix}
    m = _KV_NUMS["needed"].search(text)
    if m:
        maxlen, need, avail = int(m.group("maxlen")), float(m.group("need")), float(m.group("avail"))
        est = m.group("est")
        msg = (f"vLLM's KV cache has {avail:g} GiB but one sequence of max_model_len {maxlen} needs {need:g} GiB"
               + (f"; at most {est} tokens fit." if est else "."))
        want = f.max_length or (int(est) if est else None)
        if est:
            v = min(int(est), f.max_length) if f.max_length else int(est)
            fix.append(f"{len_flag} {v} (was {maxlen}{', the model default' if f.vllm_max_len is None else ''}): fits the "
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
        return {"message": msg, "fix": fix}
    m = _KV_NUMS["tokens"].search(text)
    if m:
        maxlen, tokens = int(m.group("maxlen")), int(m.group("tokens"))
        msg = (f"vLLM's KV cache holds {tokens} tokens, fewer than one sequence of max_model_len {maxlen}.")
        v = tokens // 256 * 256 or tokens
        if f.max_length and f.max_length <= tokens:
            v = f.max_length
        fix.append(f"{len_flag} {v} (was {maxlen}): fits the {tokens}-token cache; GRPO needs only prompt + "
                   f"max_completion_length.")
        if cur is not None:
            fix.append(f"Or raise {util_flag} (now {cur_s}) by about {maxlen / max(tokens, 1):.1f}x worth of KV cache.")
        return {"message": msg, "fix": fix}
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
        return {"message": msg, "fix": fix}
    # "No available memory for the cache blocks"
    after_weights = ""
    if f.params and cur is not None:
        after_weights = f" ({f.params:g}B in bf16 ≈ {2 * f.params / max(f.tp or 1, 1):.1f} GB of weights per GPU)"
    msg = (f"vLLM has no memory left for its KV cache after loading the weights{after_weights} and profiling: "
           f"gpu_memory_utilization x GPU memory, minus what this process already uses, is <= 0.")
    if f.colocate:
        msg += " In colocate mode the training model in the same process counts against that budget."
    if cur is not None and cur < 0.3:
        fix.append(f"{util_flag} 0.3 or more (now {cur_s}): too small a share for weights plus cache.")
    elif cur is not None and not f.colocate:
        fix.append(f"{util_flag} {_fmt_util(min(0.95, cur + 0.05))} (now {cur_s}) if the GPU has nothing else on it.")
    if f.colocate:
        fix.extend(x for x in vllm_ladder(f, None, "kv", text) if "vllm_gpu_memory_utilization" not in x)
    if not fix:
        fix.append(f"Raise {util_flag}, or free the GPU (other processes, offload the training state).")
    return {"message": msg, "fix": fix}


# ----------------------------------------------------------------------- cut tracebacks (no exc line)

_LIB_TRANSPARENT = ("torch/", "transformers/", "peft/", "deepspeed/", "accelerate/", "flash_attn", "liger_kernel",
                    "pydantic", "trl/extras/profiling.py", "contextlib", "functools", "trl/trainer/utils.py")
_CONFIG_FUNCS = {"create_model_config", "create_engine_config", "create_load_config", "create_speculative_config",
                 "__post_init__", "from_cli_args", "__pydantic_validator__"}


def classify_cut(frames: tuple[Frame, ...]) -> tuple[str, Frame] | None:
    """Which stage a traceback that stops before its exception line was in: 'training', 'vllm-kv', 'vllm-init',
    'vllm-config'; None when it is anything else."""
    for fr in reversed(frames):
        func, path = fr.func, fr.path
        if "/vllm/" in path and ("arg_utils" in path or "config" in path.rsplit("/", 1)[-1]) and func in _CONFIG_FUNCS:
            return "vllm-config", fr
        if func in _KV_FUNCS:
            return "vllm-kv", fr
        if func in _VLLM_INIT_FUNCS or "GRPOVllmEngine(" in fr.code or re.search(r"\bLLM\($", fr.code.strip()):
            return "vllm-init", fr
        if func in ("compute_loss", "_compute_loss", "_get_per_token_logps", "_get_per_token_logps_and_entropies",
                    "compute_liger_loss", "backward"):
            return "training", fr
        if "/vllm/" in path and func in ("__init__", "from_engine_args", "inner", "_init_executor", "__new__"):
            continue  # engine construction layers: look further out for what was being built
        if any(t in path for t in _LIB_TRANSPARENT):
            continue
        return None
    return None


class CutTraceback(Rule):
    """A log that ends inside a traceback whose exception line is missing: name the likely failure from the stage
    the stack was in (options.infer: training | vllm-init | vllm-config)."""

    kinds: frozenset[str] = frozenset()

    def feed(self, kind: str, payload: Any) -> None:  # pragma: no cover - sees no signal
        pass

    def finish(self, ctx: FinishContext) -> list[Finding]:
        want = self.meta.options.get("infer", "training")
        if not ctx.open_tracebacks:
            return []
        if any(e.short_type not in CONSEQUENCE_TYPES for e in ctx.exceptions):
            return []  # a real exception line exists: the rules that read it speak
        line, frames = ctx.open_tracebacks[-1]
        tail = ctx.tails.get(line.where.path)
        if tail and sum(1 for t in tail if t.seq > line.seq) > 4:
            return []  # the log goes on after this stack: not a cut excerpt
        got = classify_cut(frames)
        if got is None:
            return []
        stage, fr = got
        f = facts_of(ctx.run, frames)
        rank = f" on rank {line.rank}" if line.rank is not None else ""
        ev = [Evidence(line.where.path, line.where.line, line.raw)]
        head = (f"The log ends inside a traceback{rank} before its exception line (the paste or the file was cut); "
                f"the innermost frame is {describe_frame(frames[-1])}.")
        fix_tail = "Find the exception line after this stack in the full log to confirm (grpo-doctor reads it directly)."
        if want == "training" and stage == "training":
            msg = (f"{head} The stack is in the loss pass ({fr.func}), where GRPO's GPU memory peaks: the policy forward "
                   f"over prompt + completion for the per-device batch, with full-vocabulary logits. CUDA out of "
                   f"memory is the usual failure at this point.")
            fix = training_ladder(f, {}) + [fix_tail]
            return [self.make(message=msg, fix=fix, evidence=ev, seq=line.seq, ranks=_r(line))]
        if want == "vllm-init" and (stage == "vllm-kv" or (stage == "vllm-init" and (f.colocate or f.framework == "trl"
                                                                                      or f.use_vllm is None))):
            if stage == "vllm-kv":
                msg = (f"{head} The stack is in vLLM's KV-cache initialisation ({fr.func}): vLLM sizes its cache from "
                       f"gpu_memory_utilization x GPU memory minus what is already in use, and fails here when that is "
                       f"not free (out of memory, or 'No available memory for the cache blocks').")
            else:
                callee = re.match(r"[\w.= ]*?(\w+)\($", fr.code.strip())
                what = f"{fr.func} -> {callee.group(1)}" if callee else fr.func
                msg = (f"{head} The stack is in the trainer's construction of the colocated vLLM engine "
                       f"({what}): on GPUs that already hold the training model, that fails when vLLM's "
                       f"memory share is not available.")
            if f.util is not None and f.use_vllm:
                msg += f" vllm_gpu_memory_utilization is {_fmt_util(f.util)}{'' if f.util_set else ' (default)'} here."
            if f.framework == "trl" and not f.util_set:
                fix = ["--vllm_gpu_memory_utilization 0.5 or lower (trl's default is 0.9 of the GPU) so the KV cache fits "
                       "next to what the training process already holds on that GPU.",
                       "--vllm_max_model_len <prompt + max_completion_length> (trl 0.15) to bound the KV cache a "
                       "single sequence needs.",
                       "Give vLLM a GPU of its own: trl 0.14-0.15 put it on vllm_device (default: the GPU after the "
                       "training ones), so launch with --num_processes one less than the GPUs; trl >= 0.16: "
                       "`trl vllm-serve` on its own GPU (vllm_mode server from 0.18)."]
            else:
                fix = vllm_ladder(f, None, "engine creation", "")
            return [self.make(message=msg, fix=fix + [fix_tail], evidence=ev, seq=line.seq, ranks=_r(line))]
        if want == "vllm-config" and stage == "vllm-config":
            srv = f.server_launch
            who = "trl's vllm-serve" if (srv and srv.command == "vllm-serve") or any("trl/" in x.path for x in frames) \
                else ("ms-swift" if f.framework == "swift" else "the caller")
            msg = (f"{head} The stack is in vLLM building its engine configuration ({fr.func}) from the arguments "
                   f"{who} passed: failures here are vLLM rejecting an argument or value, i.e. a vLLM release that "
                   f"does not match the {who.split(chr(39))[0].strip()} version (vLLM >= 0.9 validates its configs with "
                   f"pydantic and rejects e.g. None for boolean options).")
            vv = f.run.versions.get("vllm")
            fix = [("`pip show trl vllm`: install the vLLM release the installed trl was tested with (pip install "
                    "'trl[vllm]' resolves one), or upgrade trl to a release that supports this vLLM.") if "trl" in who else
                   "`pip show ms-swift vllm`: install the vLLM version the ms-swift release lists (README dependency "
                   "table), or upgrade ms-swift.",
                   "Pass boolean engine options explicitly instead of leaving them unset (e.g. --enforce_eager false on "
                   "trl vllm-serve)." if "trl" in who else "Check the vllm_* flags you pass against this vLLM release."]
            if vv:
                fix.insert(0, f"vLLM {vv} is installed.")
            return [self.make(message=msg, fix=fix + [fix_tail], evidence=ev, seq=line.seq, ranks=_r(line))]
        return []


def _r(line) -> tuple[int, ...]:
    return (line.rank,) if line.rank is not None else ()


# --------------------------------------------------------------------- ZeRO-3 offload frees nothing

_PHASE = re.compile(r"(?i)^\s*(?P<label>(?:before|after)\b[^:0-9]{0,60}?)\s*[,:]?\s*$")
_MEM_KV = re.compile(r"(?i)(?P<key>memory allocated|memory reserved|max memory allocated|allocated|reserved|"
                     r"device memory used(?:/total)?|memory used)\s*(?:\((?:GB|GiB|MB)\))?\s*[:=]\s*"
                     r"(?P<v>[\d.]+)(?:\s*/\s*(?P<t>[\d.]+))?")


class OffloadFreesNothing(Rule):
    """Memory printouts labelled before/after an offload that do not change (dev-log 006)."""

    kinds = frozenset({LINE})
    literals = ("offload", "memory allocated", "memory reserved", "memory used", "vllm init", "allocated (",
                "reserved (")

    def __init__(self, meta):
        super().__init__(meta)
        self.phases: list[tuple[str, dict[str, float], Evidence, int]] = []
        self._label: tuple[str, Evidence, int] | None = None
        self._vals: dict[str, float] = {}

    def _close(self) -> None:
        if self._label and self._vals:
            self.phases.append((self._label[0], dict(self._vals), self._label[1], self._label[2]))
        self._vals = {}

    def feed(self, kind: str, payload: Any) -> None:
        if len(self.phases) > 1000:
            return
        line = payload
        text = line.text
        m = _PHASE.match(text)
        if m and ("offload" in text.lower() or "vllm" in text.lower() or "init" in text.lower()):
            self._close()
            self._label = (m.group("label").strip().rstrip(","), Evidence(line.where.path, line.where.line, line.raw),
                           line.seq)
            # "after model offload, memory allocated (GB): 5.59" on one line
        if self._label is None:
            return
        for mm in _MEM_KV.finditer(text):
            key = mm.group("key").lower()
            self._vals[key] = float(mm.group("v"))
            if mm.group("t"):
                self._vals["total"] = float(mm.group("t"))

    def finish(self, ctx: FinishContext) -> list[Finding]:
        self._close()
        same: list[tuple[str, str]] = []
        ev: list[Evidence] = []
        seq = 0
        for (l0, v0, e0, s0), (l1, v1, e1, s1) in zip(self.phases, self.phases[1:]):
            if "offload" not in l1.lower():
                continue
            keys = [k for k in v1 if k != "total" and k in v0]
            if not keys:
                continue
            if all(v1[k] >= v0[k] - 0.01 for k in keys):
                same.append((l0, l1))
                if not ev:
                    ev.append(e0)
                    seq = s0
                ev.append(e1)
        if not same:
            return []
        last = self.phases[0][1]
        alloc = last.get("memory allocated", last.get("allocated"))
        f = facts_of(ctx.run)
        labels = ", ".join(f"'{b}'" for _, b in same)
        msg = (f"Offloading freed no GPU memory: the readings at {labels} equal the ones before"
               + (f" (allocated {alloc:g} GB)" if alloc is not None else "") + ". Under DeepSpeed ZeRO-3 the parameter "
               "shards live in param.ds_tensor and param.data is an empty placeholder, so an offload that moves "
               "param.data (ms-swift's offload_model before the ZeRO-3-aware fix) releases nothing, and vLLM then starts "
               "without the room it was promised.")
        if f.zero is not None and f.zero != 3:
            msg += f" (This run's DeepSpeed config is {f.ds_raw}, not ZeRO-3: check what the offload moves.)"
        fix = ["Upgrade ms-swift to a release with the ZeRO-3-aware offload (it offloads the ds_tensor shards and the "
               "optimizer state tensors), then re-check the readings.",
               f"Until then: lower --vllm_gpu_memory_utilization{f' (now {_fmt_util(f.util)})' if f.util_set else ''} so "
               f"vLLM fits without the offload, or run vLLM as a separate server (--vllm_mode server + swift rollout).",
               "--offload_optimizer true only helps once the optimizer states are offloaded too; verify with the same "
               "printout after the optimizer offload."]
        return [self.make(message=msg, fix=fix, evidence=ev[:MAX_EVIDENCE], seq=seq)]
