"""Config-only rules that matter before a run starts (GD460-GD462, GD470). They read the RunConfig and the
facts the preflight driver gathered (the model's config.json, the GPU memory); no I/O here.

GD460 length budget, GD461 vision-language model without MAX_PIXELS, GD462 checkpoints without
save_total_limit (projected disk use), GD470 the memory plan (doctor/planner.py).
"""
from __future__ import annotations

from typing import Any

from ...model import Evidence, Finding, Severity
from ...planner import breakdown_lines, lora_trainable, plan, spec_from_config, spec_from_name
from ...rules import FinishContext, Rule
from ..memory._facts import DOC_MAX_PIXELS, _MM_ENV, _VL


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _bool(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1"))


def model_spec(ctx: FinishContext):
    run = ctx.run
    model = run.args.get("model") if isinstance(run.args.get("model"), str) else None
    cfg = ctx.facts.get("model_config")
    if isinstance(cfg, dict):
        s = spec_from_config(model or "model", cfg)
        if s is not None:
            return s
    return spec_from_name(model)


class _ConfigRule(Rule):
    kinds = frozenset()
    only_preflight = True

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if self.only_preflight and not ctx.preflight:
            return []
        if str(ctx.run.get("rlhf_type", "grpo")).lower() != "grpo":
            return []
        return self.check(ctx)

    def check(self, ctx: FinishContext) -> list[Finding]:  # pragma: no cover - interface
        return []


class LengthBudget(_ConfigRule):
    """GD460: prompt (max_length) + completion (max_completion_length) must fit vLLM's and the model's context."""

    def check(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        ml = _int(run.get("max_length"))
        mcl = _int(run.get("max_completion_length")) or _int(run.get("max_new_tokens")) or 512
        vmax = _int(run.get("vllm_max_model_len"))
        spec = model_spec(ctx)
        mpos = spec.max_positions if spec is not None else None
        out = []
        if vmax and ml and vmax < ml + mcl:
            out.append(self.make(
                message=(f"--vllm_max_model_len {vmax} is shorter than max_length {ml} + max_completion_length {mcl} "
                         f"= {ml + mcl}: vLLM caps prompt + completion at {vmax}, so long prompts leave only "
                         f"{max(vmax - ml, 0)} tokens to generate (completions are cut) or are rejected."),
                fix=[f"--vllm_max_model_len {ml + mcl} (max_length + max_completion_length)",
                     f"or --max_length {max(vmax - mcl, 1)} to keep prompts within {vmax} - {mcl}."]))
        if ml and ml < mcl:
            out.append(self.make(
                message=(f"--max_length {ml} is smaller than --max_completion_length {mcl}. In GRPO ms-swift applies "
                         f"max_length to the prompt (truncation_strategy decides what happens to longer ones) and "
                         f"generates up to max_completion_length on top; a max_length below the completion length is "
                         f"usually a total budget split the wrong way round, and prompts longer than {ml} tokens "
                         f"are cut or dropped."),
                fix=[f"Set --max_length to the longest prompt you expect (e.g. {max(1024, ml)}) and keep "
                     f"--max_completion_length {mcl} for the answer.",
                     f"With vLLM, --vllm_max_model_len >= max_length + max_completion_length."]))
        if mpos and (ml or 0) + mcl > mpos:
            out.append(self.make(
                message=(f"max_length {ml} + max_completion_length {mcl} = {(ml or 0) + mcl} exceeds the model's "
                         f"max_position_embeddings {mpos} (config.json)."),
                fix=[f"Keep max_length + max_completion_length <= {mpos}."]))
        return out[:2]


class VlWithoutMaxPixels(_ConfigRule):
    """GD461: a vision-language model without MAX_PIXELS: images are encoded at up to the template's default."""

    def check(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        model = str(run.get("model") or "")
        mtype = str(run.get("model_type") or "")
        cfg = ctx.facts.get("model_config")
        vl = bool(_VL.search(model) or _VL.search(mtype) or (isinstance(cfg, dict) and "vision_config" in cfg))
        if not vl:
            return []
        if any(k in run.env for k in ("MAX_PIXELS", "IMAGE_MAX_TOKEN_NUM")) or run.get("max_pixels"):
            return []
        env = " ".join(f"{k}={run.env[k]}" for k in _MM_ENV if k in run.env)
        msg = (f"{model or mtype} is a vision-language model and MAX_PIXELS is not set"
               + (f" ({env} is)" if env else "") + ": ms-swift then encodes each image at up to the template default "
               "(Qwen2-VL/Qwen2.5-VL use qwen_vl_utils' 16384 x 28 x 28 = 12.8M pixels, up to 16384 visual tokens per image), which dominates "
               "activation memory and vLLM's KV cache in GRPO rollouts.")
        fix = [f"MAX_PIXELS={DOC_MAX_PIXELS} swift rlhf ... (the ms-swift multimodal GRPO guide's value; about 330 "
               f"visual tokens per image), or the largest your task needs.",
               "For video inputs also VIDEO_MAX_PIXELS / FPS_MAX_FRAMES."]
        return [self.make(message=msg, fix=fix)]


class CheckpointDisk(_ConfigRule):
    """GD462: save_total_limit unset: every checkpoint is kept. Project the disk use."""

    def check(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        if run.get("save_total_limit") is not None or str(run.get("save_strategy", "")).lower() == "no":
            return []
        spec = model_spec(ctx)
        tuner = str(run.get("tuner_type") or run.get("train_type") or "lora").lower()
        only_model = _bool(run.get("save_only_model"))
        ds = str(run.get("deepspeed") or "")
        save_steps = _int(run.get("save_steps")) or 500
        max_steps = _int(run.get("max_steps"))
        n = (max_steps // save_steps + (1 if max_steps % save_steps else 0)) if max_steps and max_steps > 0 else None
        per = None
        what = ""
        if spec is not None:
            P = spec.params
            if tuner == "full":
                weights = 2 * P
                if only_model:
                    opt, what = 0.0, "bf16 weights"
                elif ds:
                    opt, what = 12 * P + (0 if "3" in ds else 2 * P), "bf16 weights + DeepSpeed fp32 optimizer states"
                else:
                    opt, what = 4 * P, "bf16 weights + AdamW optimizer.pt"
                per = (weights + opt) / 1024 ** 3
            else:
                T = lora_trainable(spec, _int(run.get("lora_rank")) or 8)
                per = (T * 4 + (0 if only_model else 12 * T)) / 1024 ** 3
                what = "adapter + optimizer states"
        if per is None:
            size = "an unknown size (the model size is not known here)"
        else:
            size = f"about {per:.1f} GiB ({what})"
        msg = (f"--save_total_limit is not set, so ms-swift keeps every checkpoint (one each {save_steps} steps), "
               f"each {size}.")
        if n and per is not None:
            msg += f" With max_steps {max_steps} that is {n} checkpoints, about {n * per:.0f} GiB in total."
        fix = ["--save_total_limit 2 (keeps the last two; with load_best_model_at_end also the best)."]
        if tuner == "full" and not only_model:
            fix.append("--save_only_model true if you do not need to resume the optimizer (cuts a full checkpoint "
                       "to the weights).")
        sev = Severity.warning if (per is not None and (per >= 5 or (n and n * per >= 20))) else Severity.info
        return [self.make(message=msg, fix=fix, severity=sev)]


class MemoryPlan(_ConfigRule):
    """GD470: the planner's peak per-GPU memory against the GPU memory; ranked fixes when it does not fit."""

    def check(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        spec = model_spec(ctx)
        if spec is None:
            return []
        gib = ctx.facts.get("gpu_gib")
        src = ctx.facts.get("gpu_source") or ""
        world = run.world_size() or 1
        p = plan(run.args, spec, gib, world)
        peak = p.peak
        ev = [Evidence("<memory plan>", i, line) for i, line in enumerate(breakdown_lines(p), 1)]
        where = "config.json" if spec.source == "config.json" else f"the name ({spec.params / 1e9:.2f}B)"
        head = (f"{spec.name}: {spec.params / 1e9:.2f}B parameters (from {where}); {world} training process(es). "
                f"Peak per GPU: {peak.total:.1f} GiB in {peak.name}")
        if p.fits is None:
            msg = head + ". GPU memory unknown: no fit verdict."
            return [self.make(message=msg, fix=["Pass --gpu-mem GIB (or --gpu-snapshot FILE) for a verdict."],
                              evidence=ev, severity=Severity.info, title="Memory plan (no GPU size given)")]
        if p.fits:
            msg = head + f", within {gib:.1f} GiB per GPU ({src})."
            if p.vllm_kv_gib is not None:
                msg += f" vLLM keeps {p.vllm_kv_gib:.1f} GiB for its KV cache."
            return [self.make(message=msg, fix=[], evidence=ev, severity=Severity.info, title="Memory plan fits")]
        over = peak.total - gib
        if p.vllm_kv_gib is not None and p.vllm_kv_gib <= 0:
            msg = head + (f"; and vLLM's budget ({p.settings.vllm_util:g} x {gib:.1f} GiB) cannot even hold its copy "
                          f"of the weights plus overhead (no room for the KV cache).")
        else:
            msg = head + f", {over:.1f} GiB more than the {gib:.1f} GiB of one GPU ({src})."
        fix = [f"{label}: peak {after:.1f} GiB (saves {saved:.1f})" for label, after, saved in p.fixes[:7]]
        return [self.make(message=msg, fix=fix or ["No single lever is enough: use more or larger GPUs."],
                          evidence=ev)]
