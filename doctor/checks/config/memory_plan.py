"""GD470: the memory plan (doctor/planner.py): peak per-GPU memory against the GPU memory, ranked fixes."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...swift.planner import breakdown_lines, plan
from ._base import _ConfigRule, model_spec


class MemoryPlan(_ConfigRule):
    """GD470: the planner's peak per-GPU memory against the GPU memory; ranked fixes when it does not fit."""

    def check(self, ctx: RunState) -> list[Finding]:
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
