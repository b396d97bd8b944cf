"""GD470: the memory plan (doctor/planner.py): peak per-GPU memory against the GPU memory, ranked fixes."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...values import as_number
from .._numbers import ASSUMED, COMPUTED, Num, mark, read_or
from ._base import _ConfigRule, model_spec

# the planner's settings a command may leave out, with the ms-swift default the plan then takes (swift.planner.Settings)
_DEFAULTS = (("per_device_train_batch_size", (), "1"), ("max_completion_length", ("max_new_tokens",), "512"),
             ("max_length", (), "512 for the prompt"))


def defaults_taken(args: dict[str, Any], world: Num[int]) -> list[str]:
    """What the plan assumed: each setting it needs that the command does not give, with the value taken."""
    out = [f"world size {world.value}"] if world.assumed else []
    out += [f"{k} {v}" for k, alts, v in _DEFAULTS if args.get(k) is None and not any(args.get(a) for a in alts)]
    ml = as_number(args.get("max_length"))
    if ml and ml > 1024:
        out.append(f"prompt length 1024 (max_length {ml:g} is a cap, not the usual prompt)")
    tuner = str(args.get("tuner_type") or args.get("train_type") or "").lower()
    if not tuner:
        out.append("tuner lora")
    if tuner != "full" and args.get("lora_rank") is None:
        out.append("lora_rank 8")
    if str(args.get("use_vllm")).lower() == "true" and args.get("vllm_gpu_memory_utilization") is None \
            and args.get("gpu_memory_utilization") is None:
        out.append("vllm_gpu_memory_utilization 0.9")
    return out


class MemoryPlan(_ConfigRule):
    """GD470: the planner's peak per-GPU memory against the GPU memory; ranked fixes when it does not fit."""

    def check(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        spec = model_spec(ctx)
        if spec is None:
            return []
        gib = ctx.facts.get("gpu_gib")
        src = ctx.facts.get("gpu_source") or ""
        world_ = read_or(run.world_size(), 1)
        world = world_.value
        from ...swift.planner import breakdown_lines, plan  # a config rule runs before a run, not under watch
        p = plan(run.args, spec, gib, world)
        taken = defaults_taken(run.args, world_)
        peak = p.peak
        ev = [Evidence("<memory plan>", i, line) for i, line in enumerate(breakdown_lines(p), 1)]
        where = "config.json" if spec.source == "config.json" else f"the name ({spec.params / 1e9:.2f}B)"
        # the plan is an estimate from read values (computed), assumed when it rests on a value the command leaves out
        how = ASSUMED if taken else COMPUTED
        head = (f"{spec.name}: {spec.params / 1e9:.2f}B parameters (from {where}); {world_} training process(es). "
                f"Peak per GPU: {mark(f'{peak.total:.1f} GiB', how)} in {peak.name}")
        note = f" Assumed (ms-swift's defaults, not in the command): {', '.join(taken)}." if taken else ""
        if p.fits is None:
            msg = head + ". GPU memory unknown: no fit verdict." + note
            return [self.make(message=msg, fix=["Pass --gpu-mem GIB (or --gpu-snapshot FILE) for a verdict."],
                              evidence=ev, severity=Severity.info, title="Memory plan (no GPU size given)")]
        if p.fits:
            msg = head + f", within {gib:.1f} GiB per GPU ({src})."
            if p.vllm_kv_gib is not None:
                msg += f" vLLM keeps {mark(f'{p.vllm_kv_gib:.1f} GiB', how)} for its KV cache."
            msg += note
            return [self.make(message=msg, fix=[], evidence=ev, severity=Severity.info, title="Memory plan fits")]
        over = peak.total - gib
        if p.vllm_kv_gib is not None and p.vllm_kv_gib <= 0:
            msg = head + (f"; and vLLM's budget ({p.settings.vllm_util:g} x {gib:.1f} GiB) cannot even hold its copy "
                          f"of the weights plus overhead (no room for the KV cache).")
        else:
            msg = head + f", {mark(f'{over:.1f} GiB', how)} more than the {gib:.1f} GiB of one GPU ({src})."
        msg += note
        fix = [f"{label}: peak {mark(f'{after:.1f} GiB', how)} (saves {saved:.1f})" for label, after, saved in p.fixes[:7]]
        return [self.make(message=msg, fix=fix or ["No single lever is enough: use more or larger GPUs."],
                          evidence=ev)]
