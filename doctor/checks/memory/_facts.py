"""What a run's configuration says about memory (``Facts``, with each framework's defaults filled in), and the
small readers behind it: model size from the name, ZeRO stage from the DeepSpeed setting, GiB amounts. The memory,
vLLM and config checks all read these."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ... import lazyre
from ...signals import Frame
from ...sources.command_text import SERVER_COMMANDS
from ...sources.swiftconfig import Launch, RunConfig
from ...swift.flags import flag_exists
from ...swift.trainer_kind import GROUP_KINDS, from_config
from ...values import (  # one number reader for the memory plan and the OOM fixes (swift/planner.py's)
    as_number,
    version_key,
)
from .._numbers import ASSUMED, READ, Num, mark, read_or

_PARAMS = lazyre.compile(r"(?<![\d.])(\d+(?:(?:\.|_+)\d+)?)\s*[Bb](?![a-zA-Z])")
VL_MODEL = lazyre.compile(r"(?i)(?:[-_]vl\b|[-_]vl[-_]|omni|internvl|llava|minicpm-?v|glm-?4v|cogvlm|ovis|pixtral|"
                 r"[-_]vision|qwen2_5_vl|qwen2_vl|qwen3_vl|idefics|paligemma|mllama)")
MM_ENV = ("MAX_PIXELS", "VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES", "VIDEO_TOTAL_PIXELS", "IMAGE_MAX_TOKEN_NUM",
           "VIDEO_MAX_TOKEN_NUM", "MIN_PIXELS", "FPS")
DOC_MAX_PIXELS = 262144  # docs/source_en/BestPractices/GRPO-Multi-Modal-Training.md L292


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
    if 0 < v < 0.01:  # an allocation of a few MiB (KiB) would print as 0.00 GiB
        return f"{v * 1024:.2f} MiB" if v * 1024 >= 0.01 else f"{v * 1024 * 1024:.0f} KiB"
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
    zero_read: str | None = None   # where a ZeRO stage that no argument gives was read (a log line, a pasted config)
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
    trainer: str | None = None   # the trainer the configuration names (grpo, dpo, sft...; None: not told)
    model: str | None = None
    params: float | None = None
    vl: bool = False
    world: int | None = None
    max_pixels_log: tuple[int, bool] | None = None  # "Setting max_pixels: N" (N, set through the env var)
    env: dict[str, str] = field(default_factory=dict)
    # False when the run cannot hold a vLLM engine beside its training process: a framework that never colocates one
    # (LLaMA-Factory, a plain transformers / DeepSpeed / torch job), or frames of the training side from none of the
    # libraries that run a rollout engine
    vllm_possible: bool = True
    vllm_only: bool = False      # the log shows vLLM and no trainer framework (a serving or offline-inference run)
    server_launch: Launch | None = None
    trainer_launch: Launch | None = None

    @property
    def samples(self) -> str:
        """What one row of a batch is in this trainer's words: GRPO's completions, a DPO pair, a sample."""
        if self.trainer is None or self.trainer in GROUP_KINDS or self.trainer == "ppo":
            return "completions"
        return {"dpo": "pairs", "kto": "examples", "orpo": "pairs", "cpo": "pairs", "simpo": "pairs"}.get(
            self.trainer, "samples")

    def util_text(self) -> str:
        """vllm_gpu_memory_utilization as read, or the default 0.9 marked (assumed) when the run does not set it."""
        u = self.util if self.util is not None else 0.9
        return mark(f"{u:.2f}".rstrip("0").rstrip("."), READ if self.util_set else ASSUMED)

    def world_num(self) -> Num[int]:
        """The world size read from the run, else 1 (assumed)."""
        return read_or(self.world, 1)

    def has(self, flag: str) -> bool:
        if self.framework == "trl":
            return flag in ("vllm_gpu_memory_utilization", "per_device_train_batch_size", "max_completion_length",
                            "gradient_accumulation_steps", "gradient_checkpointing", "vllm_tensor_parallel_size",
                            "vllm_mode")
        return flag_exists(self.mm, flag)

    def serving_alone(self, told: str | None) -> bool:
        """vLLM serving or offline inference with no trainer anywhere in the run (``told``: the framework detected):
        a `vllm serve` is then the engine serving requests, not a trainer's rollout server."""
        return (told == "vllm" or self.vllm_only) and self.trainer_launch is None and self.mode != "server"

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
    if f.tuner is None and (_bool(a.get("use_peft")) or "lora_r" in a):
        f.tuner = "lora"   # trl's ModelConfig: --use_peft with --lora_r
    elif f.tuner is None and isinstance(a.get("finetuning_type"), str):
        f.tuner = a["finetuning_type"]   # LLaMA-Factory's finetuning_type: lora, freeze, full
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
        elif l.command in SERVER_COMMANDS:
            f.server_launch = f.server_launch or l
    if f.use_vllm:
        if mode in ("server", "colocate"):
            f.mode = mode
        elif a.get("vllm_server_host") or a.get("vllm_server_base_url"):
            f.mode = "server"
        elif f.framework == "trl":
            # trl never put its engine on a training GPU by default: up to 0.15 in-process on a GPU of its own
            # (vllm_device "auto": the first one after the training processes'), from 0.16 a `trl vllm-serve` server
            # (0.18's vllm_mode defaults to "server"); colocation is said by vllm_mode="colocate" only
            trl = run.versions.get("trl")
            f.mode = "server" if trl is not None and version_key(trl) >= (0, 16) else None
        else:
            f.mode = "colocate"  # swift 3.5-3.11 default; in 3.1-3.4 the engine also lived in the trainer
    util = as_number(a.get("vllm_gpu_memory_utilization"))
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
    f.beta = as_number(a.get("beta"))
    f.trainer = from_config(a, run.command, run.command_texts)
    # ms-swift's --model; transformers' and trl's example scripts take --model_name_or_path (ModelArguments)
    f.model = next((v for v in (a.get("model"), a.get("model_name_or_path")) if isinstance(v, str)), None)
    f.params = params_b(f.model)
    f.env = dict(run.env)
    if f.trainer_launch:
        f.env.update(f.trainer_launch.env)
    mtype = str(a.get("model_type") or "")
    f.vl = bool(VL_MODEL.search(f.model or "") or VL_MODEL.search(mtype) or any(k in f.env for k in MM_ENV)
                or re.search(r"vision|visual|_vl\.py|qwen2_5_vl|qwen3_vl", paths))
    f.world = run.world_size()
    acc = next((l for l in run.launches if l.command == "accelerate"), None)
    if f.world is None and acc is not None:
        n = acc.flags.get("num_processes")
        f.world = n if isinstance(n, int) and not isinstance(n, bool) else None
    return f
