"""GRPO memory planner: peak per-GPU memory of training and rollout, from the run's flags and the model's shape.

Pure arithmetic (no I/O): ``ModelSpec`` comes from a local ``config.json`` (doctor/sources/modeldir.py) or from
a known size in the model name; ``plan(run, spec, gpu_gib)`` returns the breakdown per phase and, when the
peak does not fit, the fixes ranked by the memory they save.

Formulas (per GPU, bytes; P = parameters, T = trainable parameters, N = data-parallel world size):
- model states, ZeRO paper (Rajbhandari et al. 2020, §3 and Fig. 1): mixed-precision Adam holds 2P weights +
  2T gradients + 12T optimizer (fp32 master, momentum, variance), "16 bytes per parameter" for full training;
  ZeRO-1 divides the 12T by N, ZeRO-2 also the 2T, ZeRO-3 also the 2P; ``*_offload`` moves the optimizer (and for
  ZeRO-3 the parameters) to the CPU. Without DeepSpeed torch AdamW keeps m and v in the parameter dtype (2x2T).
- LoRA: T = rank x sum(in + out) over the target linears (all-linear, ms-swift's default); the frozen base
  weights stay 2P (ZeRO-3 shards them too). A full run with beta > 0 also holds a reference model (2P, sharded
  under ZeRO-3); LoRA uses the base model with the adapter off as its reference.
- activations with gradient checkpointing (ms-swift's default): one bf16 hidden state per layer kept
  (L x b x s x h x 2) plus one layer recomputed (b x s x (16h + 2i) x 2, flash attention: no s^2 term);
  without checkpointing 34 x b x s x h bytes per layer (Korthikanti et al. 2022, Table 2, flash attention).
- logits of the completion tokens: b x c x V x 6 (bf16 logits + one fp32 log-softmax copy).
- ZeRO-3 gathers a layer ahead and the embedding/lm_head when used: (2 layers + V x h) x 2.
- colocated vLLM takes ``vllm_gpu_memory_utilization`` x the GPU's memory from its start (vLLM V1: the
  fraction of the whole GPU, checked against the free memory at start-up), holding its own copy of the
  weights (2P / tensor-parallel) and the KV cache; with ``sleep_level`` >= 1 it releases all but ~0.5 GiB
  while training; ``offload_model``/``offload_optimizer`` move the trainer's weights/optimizer to the CPU
  while vLLM generates.
- 1.0 GiB per GPU for the CUDA context, NCCL and allocator slack.
Assumptions: prompt length = min(max_length, 1024) tokens (512 when max_length is unset); completions of
max_completion_length tokens; bf16 unless --torch_dtype says otherwise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..values import as_number  # its callers here and the memory checks' (doctor/values.py)

GIB = 1024 ** 3
CONTEXT_GIB = 1.0
VLLM_SLEEP_RESIDUE_GIB = 0.5
VLLM_OVERHEAD_GIB = 1.5  # vLLM activations, CUDA graphs, sampler buffers inside its budget


@dataclass(frozen=True)
class ModelSpec:
    """A model's size and shape, as the memory planner needs them."""
    name: str
    params: float                 # parameters (absolute)
    hidden: int
    layers: int
    intermediate: int
    vocab: int
    kv_dim: int                   # num_key_value_heads x head_dim
    max_positions: int | None = None
    source: str = "name"          # config.json | name | table
    vision: bool = False


# Known shapes (config.json of the published checkpoints). Sizes in the name pick one; "7B" alone falls back to a
# generic shape scaled from the nearest entry.
_KNOWN: dict[str, tuple[float, int, int, int, int, int]] = {
    # key: (params, hidden, layers, intermediate, vocab, kv_dim)
    "qwen2.5-0.5b": (0.494e9, 896, 24, 4864, 151936, 128),
    "qwen2.5-1.5b": (1.54e9, 1536, 28, 8960, 151936, 256),
    "qwen2.5-3b": (3.09e9, 2048, 36, 11008, 151936, 256),
    "qwen2.5-7b": (7.62e9, 3584, 28, 18944, 152064, 512),
    "qwen2.5-14b": (14.8e9, 5120, 48, 13824, 152064, 1024),
    "qwen2.5-32b": (32.8e9, 5120, 64, 27648, 152064, 1024),
    "qwen2.5-72b": (72.7e9, 8192, 80, 29568, 152064, 1024),
    "qwen2-7b": (7.62e9, 3584, 28, 18944, 152064, 512),
    "qwen2-72b": (72.7e9, 8192, 80, 29568, 152064, 1024),
    "qwen3-0.6b": (0.596e9, 1024, 28, 3072, 151936, 1024),
    "qwen3-1.7b": (2.03e9, 2048, 28, 6144, 151936, 1024),
    "qwen3-4b": (4.02e9, 2560, 36, 9728, 151936, 1024),
    "qwen3-8b": (8.19e9, 4096, 36, 12288, 151936, 1024),
    "qwen3-14b": (14.8e9, 5120, 40, 17408, 151936, 1024),
    "qwen3-32b": (32.8e9, 5120, 64, 25600, 151936, 1024),
    "qwen2.5-vl-3b": (3.75e9, 2048, 36, 11008, 151936, 256),
    "qwen2.5-vl-7b": (8.29e9, 3584, 28, 18944, 152064, 512),
    "qwen2.5-vl-32b": (33.5e9, 5120, 64, 27648, 152064, 1024),
    "qwen2.5-vl-72b": (73.4e9, 8192, 80, 29568, 152064, 1024),
    "llama-3-8b": (8.03e9, 4096, 32, 14336, 128256, 1024),
    "llama-3.1-8b": (8.03e9, 4096, 32, 14336, 128256, 1024),
    "llama-3.1-70b": (70.6e9, 8192, 80, 28672, 128256, 1024),
    "deepseek-r1-distill-qwen-7b": (7.62e9, 3584, 28, 18944, 152064, 512),
    "deepseek-r1-distill-qwen-1.5b": (1.78e9, 1536, 28, 8960, 151936, 256),
}


def _norm(name: str) -> str:
    base = str(name).rstrip("/").split("/")[-1].lower()
    # ModelScope writes "." as "___" (Qwen2___5-1___5B); a single "_" stands for "." only in 0_5B-1_8B style sizes:
    # "gemma-3_27b" is Gemma 3 27B, "gemma-3_1b" Gemma 3 1B (issue 15 point 6)
    base = base.replace("___", ".")
    base = re.sub(r"(?<=[-_])([01])_(\d)(?=b)", r"\1.\2", base)
    return base.replace("_", "-")


def spec_from_name(model: str | None) -> ModelSpec | None:
    """A known checkpoint by name ('Qwen/Qwen2.5-7B-Instruct' -> 7.62B), else a generic shape for 'NB' in the name."""
    if not model:
        return None
    base = _norm(model)
    vision = bool(re.search(r"-vl\b|-vl-|vision|llava|internvl|omni", base))
    for key in sorted(_KNOWN, key=len, reverse=True):
        if base.startswith(key + "-") or base == key or base.startswith(key + "."):
            if not vision and "-vl" in key:
                continue
            p, h, l, i, v, kv = _KNOWN[key]
            return ModelSpec(key, p, h, l, i, v, kv, source="table", vision=vision)
    m = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)b(?![a-z])", base)
    if not m:
        return None
    b = float(m.group(1)) * 1e9
    # nearest known shape, scaled: hidden ~ sqrt(P), enough for activation estimates
    near = min(_KNOWN.values(), key=lambda t: abs(t[0] - b))
    scale = (b / near[0]) ** 0.5
    return ModelSpec(base, b, int(near[1] * scale), near[2], int(near[3] * scale), near[4], near[5],
                     source="name", vision=vision)


def spec_from_config(name: str, cfg: dict[str, Any]) -> ModelSpec | None:
    """Parameter count from a transformers config.json (decoder-only; a VL config's text_config is used)."""
    c: dict[str, Any] = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
    vision = "vision_config" in cfg
    try:
        h = int(c["hidden_size"])
        layers = int(c["num_hidden_layers"])
        inter = int(c.get("intermediate_size") or 4 * h)
        vocab = int(c.get("vocab_size") or cfg["vocab_size"])
        heads = int(c.get("num_attention_heads") or 1)
        kvh = int(c.get("num_key_value_heads") or heads)
    except (KeyError, TypeError, ValueError):
        return None
    hd = int(c.get("head_dim") or h // max(heads, 1))
    q = heads * hd
    kv = kvh * hd
    experts = int(c.get("num_experts") or c.get("n_routed_experts") or 0)
    moe_inter = int(c.get("moe_intermediate_size") or inter)
    mlp = 3 * h * (moe_inter * experts if experts else inter)
    per_layer = h * q + 2 * h * kv + q * h + mlp + 2 * h
    tied = bool(c.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False)))
    params = layers * per_layer + vocab * h * (1 if tied else 2)
    if vision and isinstance(cfg.get("vision_config"), dict):
        vc = cfg["vision_config"]
        vh = int(vc.get("hidden_size") or vc.get("embed_dim") or 0)
        vl = int(vc.get("depth") or vc.get("num_hidden_layers") or 0)
        params += vl * 12 * vh * vh
    mp = c.get("max_position_embeddings")
    return ModelSpec(name, float(params), h, layers, inter, vocab, kv, int(mp) if isinstance(mp, int) else None,
                     source="config.json", vision=vision)


# ------------------------------------------------------------------------------------------- settings

def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0"):
        return v.strip().lower() in ("true", "1")
    return None


def zero_of(ds: Any) -> tuple[int, bool]:
    """(ZeRO stage, offload) from --deepspeed: 'zero3_offload', 'zero2', 'ds_z3_config.json'; 0 without DeepSpeed."""
    if not ds or not isinstance(ds, str):
        return 0, False
    low = ds.lower()
    m = re.search(r"(?:zero|z|stage)[_-]?([0-3])", low)
    return (int(m.group(1)) if m else 0), "offload" in low


@dataclass(frozen=True)
class Settings:
    """The training settings the memory plan is made for (ms-swift's defaults)."""
    tuner: str = "lora"           # ms-swift's default tuner is LoRA
    lora_rank: int = 8
    dtype_bytes: int = 2
    zero: int = 0
    ds_offload: bool = False
    grad_ckpt: bool = True
    batch: int = 1
    prompt_len: int = 512
    completion_len: int = 512
    world: int = 1
    beta: float = 0.04
    use_vllm: bool = False
    vllm_mode: str | None = None  # colocate | server
    vllm_util: float = 0.9
    sleep_level: int = 0
    vllm_tp: int = 1
    offload_model: bool = False
    offload_optimizer: bool = False
    deepspeed: str | None = None


def settings_of(args: dict[str, Any], world: int | None) -> Settings:
    g = args.get
    tuner = str(g("tuner_type") or g("train_type") or "lora").lower()
    dt = str(g("torch_dtype") or "bfloat16").lower()
    zero, off = zero_of(g("deepspeed"))
    ml = as_number(g("max_length"))
    mcl = as_number(g("max_completion_length")) or as_number(g("max_new_tokens")) or 512
    use_vllm = bool(_bool(g("use_vllm")))
    mode = str(g("vllm_mode")).lower() if g("vllm_mode") else None
    if use_vllm and mode is None:
        mode = "server" if (g("vllm_server_host") or g("vllm_server_base_url")) else "colocate"
    return Settings(
        tuner="full" if tuner == "full" else "lora" if tuner in ("lora", "qlora", "longlora", "adalora", "dora") else tuner,
        lora_rank=int(as_number(g("lora_rank")) or 8),
        dtype_bytes=4 if dt in ("float32", "fp32") else 2,
        zero=zero, ds_offload=off,
        grad_ckpt=_bool(g("gradient_checkpointing")) is not False,
        batch=int(as_number(g("per_device_train_batch_size")) or 1),
        prompt_len=int(min(ml, 1024)) if ml else 512, completion_len=int(mcl),
        world=max(1, world or 1), beta=beta if (beta := as_number(g("beta"))) is not None else 0.04,
        use_vllm=use_vllm, vllm_mode=mode if use_vllm else None,
        vllm_util=as_number(g("vllm_gpu_memory_utilization")) or as_number(g("gpu_memory_utilization")) or 0.9,
        sleep_level=int(as_number(g("sleep_level")) or 0),
        vllm_tp=int(as_number(g("vllm_tensor_parallel_size")) or as_number(g("tensor_parallel_size")) or 1),
        offload_model=bool(_bool(g("offload_model"))), offload_optimizer=bool(_bool(g("offload_optimizer"))),
        deepspeed=g("deepspeed") if isinstance(g("deepspeed"), str) else None)


# ------------------------------------------------------------------------------------------- the plan

@dataclass
class Phase:
    """One phase of the memory plan and what it holds (GiB each)."""
    name: str
    items: list[tuple[str, float]] = field(default_factory=list)  # (what, GiB)

    @property
    def total(self) -> float:
        return sum(v for _, v in self.items)


@dataclass
class Plan:
    """The memory plan of a run: the model, the settings and the phases."""
    spec: ModelSpec
    settings: Settings
    gpu_gib: float | None
    phases: list[Phase]
    rollout_gpu: Phase | None = None      # server mode: the rollout server's GPU
    vllm_kv_gib: float | None = None      # what is left for vLLM's KV cache inside its budget
    fixes: list[tuple[str, float, float]] = field(default_factory=list)  # (flag change, peak after, GiB)
    notes: list[str] = field(default_factory=list)

    @property
    def peak(self) -> Phase:
        return max(self.phases, key=lambda p: p.total)

    @property
    def fits(self) -> bool | None:
        if self.gpu_gib is None:
            return None
        ok = self.peak.total <= self.gpu_gib
        if self.rollout_gpu is not None:
            ok = ok and self.rollout_gpu.total <= self.gpu_gib
        if self.vllm_kv_gib is not None and self.vllm_kv_gib <= 0:
            ok = False
        return ok


def lora_trainable(spec: ModelSpec, rank: int) -> float:
    h, i, kv = spec.hidden, spec.intermediate, spec.kv_dim
    per_layer = (h + h) + (h + kv) * 2 + (h + h) + (h + i) * 2 + (i + h)
    return float(rank * per_layer * spec.layers)


def model_states(spec: ModelSpec, s: Settings) -> list[tuple[str, float]]:
    P = spec.params
    n = s.world
    T = P if s.tuner == "full" else lora_trainable(spec, s.lora_rank)
    wb = s.dtype_bytes
    weights = P * wb / (n if s.zero == 3 else 1)
    if s.zero == 3 and s.ds_offload:
        weights = 0.0  # ZeRO-3 offload_param keeps the weights on the CPU (gathered per layer below)
    grads = T * wb / (n if s.zero >= 2 else 1)
    if s.zero >= 1:
        opt = 12 * T / n
        if s.ds_offload:
            opt = 0.0
    else:
        opt = 2 * T * wb  # torch AdamW: m and v in the parameter dtype
    out = [(f"weights {P / 1e9:.2f}B x {wb} B" + (f" / {n} (ZeRO-3)" if s.zero == 3 else "")
            + (" (offloaded to CPU)" if s.zero == 3 and s.ds_offload else ""), weights / GIB)]
    tlabel = "full" if s.tuner == "full" else f"LoRA r{s.lora_rank}: {T / 1e6:.1f}M"
    out.append((f"gradients ({tlabel})" + (f" / {n} (ZeRO-{s.zero})" if s.zero >= 2 else ""), grads / GIB))
    if s.zero >= 1:
        out.append((f"Adam states 12 B x trainable / {n} (ZeRO-{s.zero})" + (" (offloaded to CPU)" if s.ds_offload else ""),
                    opt / GIB))
    else:
        out.append((f"AdamW m+v ({wb} B each) x trainable", opt / GIB))
    if s.tuner == "full" and s.beta > 0:
        out.append(("reference model (full run, beta > 0)" + (f" / {n} (ZeRO-3)" if s.zero == 3 else ""),
                    P * wb / (n if s.zero == 3 else 1) / GIB))
    return out


def activations(spec: ModelSpec, s: Settings) -> list[tuple[str, float]]:
    b, seq, h, L = s.batch, s.prompt_len + s.completion_len, spec.hidden, spec.layers
    if s.grad_ckpt:
        act = L * b * seq * h * 2 + b * seq * (16 * h + 2 * spec.intermediate) * 2
        label = f"activations (checkpointed: {L} layers x {b} x {seq} tokens x {h})"
    else:
        act = 34 * b * seq * h * L
        label = f"activations (no checkpointing: 34 x {b} x {seq} x {h} x {L} layers)"
    logits = b * s.completion_len * spec.vocab * 6
    out = [(label, act / GIB), (f"logits {b} x {s.completion_len} x vocab {spec.vocab} x 6 B", logits / GIB)]
    if s.zero == 3:
        per_layer = (spec.params - 2 * spec.vocab * spec.hidden) / max(spec.layers, 1)
        out.append(("ZeRO-3 gathered layers + embedding", (2 * per_layer + spec.vocab * spec.hidden) * s.dtype_bytes / GIB))
    return out


def plan(args: dict[str, Any], spec: ModelSpec, gpu_gib: float | None, world: int | None = None,
         _ranking: bool = True) -> Plan:
    s = settings_of(args, world)
    return plan_settings(spec, s, gpu_gib, _ranking)


def plan_settings(spec: ModelSpec, s: Settings, gpu_gib: float | None, _ranking: bool = True) -> Plan:
    states = model_states(spec, s)
    ctx = [("CUDA context, NCCL, allocator slack", CONTEXT_GIB)]
    phases: list[Phase] = []
    vllm_weights = spec.params * 2 / max(s.vllm_tp, 1) / GIB
    kv = None
    rollout_gpu = None
    notes: list[str] = []
    colocate = s.use_vllm and s.vllm_mode == "colocate"
    if colocate:
        budget = s.vllm_util * gpu_gib if gpu_gib else None
        if budget is not None:
            kv = budget - vllm_weights - VLLM_OVERHEAD_GIB
        vl = budget if budget is not None else vllm_weights + VLLM_OVERHEAD_GIB
        vlabel = (f"vLLM {s.vllm_util:g} x {gpu_gib:.1f} GiB (weights {vllm_weights:.1f} GiB"
                  + (f" / TP {s.vllm_tp}" if s.vllm_tp > 1 else "") + " + KV cache)") if budget is not None else \
            f"vLLM weights {vllm_weights:.1f} GiB + overhead (GPU size unknown: KV cache not counted)"
        train_v = [("vLLM asleep (sleep_level %d)" % s.sleep_level, VLLM_SLEEP_RESIDUE_GIB)] if s.sleep_level >= 1 \
            else [(vlabel + ", held while training (sleep_level 0)", vl)]
        phases.append(Phase("training", states + activations(spec, s) + train_v + ctx))
        roll_states = []
        for what, v in states:
            if s.offload_model and (what.startswith("weights") or what.startswith("reference")):
                roll_states.append((what + " (offload_model: on CPU)", 0.0))
            elif s.offload_optimizer and (what.startswith("Adam") or what.startswith("gradients")):
                roll_states.append((what + " (offload_optimizer: on CPU)", 0.0))
            else:
                roll_states.append((what, v))
        phases.append(Phase("rollout", roll_states + [(vlabel, vl)] + ctx))
    else:
        gen = []
        if not s.use_vllm:
            kvb = 2 * spec.layers * spec.kv_dim * (s.prompt_len + s.completion_len) * s.batch * 2
            gen = [("KV cache of HF generate", kvb / GIB)]
        phases.append(Phase("training", states + activations(spec, s) + ctx))
        if gen:
            phases.append(Phase("rollout", states + gen + ctx))
        if s.use_vllm and s.vllm_mode == "server" and gpu_gib:
            budget = s.vllm_util * gpu_gib
            kv = budget - vllm_weights - VLLM_OVERHEAD_GIB
            rollout_gpu = Phase("rollout server GPU (swift rollout)", [
                (f"vLLM {s.vllm_util:g} x {gpu_gib:.1f} GiB (weights {vllm_weights:.1f} GiB + KV cache)", budget)] + ctx)
            notes.append("Server mode: the rollout server runs on GPUs of its own; its vllm_gpu_memory_utilization "
                         "and tensor parallel size are flags of `swift rollout` (assumed as given here).")
    p = Plan(spec, s, gpu_gib, phases, rollout_gpu, kv, notes=notes)
    if _ranking and p.fits is False:
        from .levers import rank_fixes  # noqa: PLC0415 - levers re-plans with plan_settings (a cycle at import)
        p.fixes = rank_fixes(spec, s, gpu_gib)
    return p


def vllm_weights_gib(spec: ModelSpec, s: Settings) -> float:
    return spec.params * 2 / max(s.vllm_tp, 1) / GIB


def fmt(v: float) -> str:
    return f"{v:.1f}"


def breakdown_lines(p: Plan) -> list[str]:
    out = []
    for ph in p.phases + ([p.rollout_gpu] if p.rollout_gpu else []):
        out.append(f"{ph.name}: {fmt(ph.total)} GiB = " + " + ".join(f"{what} {fmt(v)}" for what, v in ph.items if v > 0.005))
    if p.vllm_kv_gib is not None:
        out.append(f"vLLM KV cache room inside its budget: {fmt(p.vllm_kv_gib)} GiB")
    return out
