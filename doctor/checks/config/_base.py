"""What the config rules (GD460-GD462, GD470) share: rules that matter before a run starts. They read the RunConfig
and the facts the preflight driver gathered (the model's config.json, the GPU memory); no I/O here."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule


def _bool(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1"))


def model_spec(ctx: RunState):
    # the planner (~9 M instructions to import) only where a config rule runs: before a run, not under watch
    from ...swift.planner import spec_from_config, spec_from_name
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

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.only_preflight and not ctx.preflight:
            return []
        if str(ctx.run.get("rlhf_type", "grpo")).lower() != "grpo":
            return []
        return self.check(ctx)

    def check(self, ctx: RunState) -> list[Finding]:  # pragma: no cover - interface
        return []
