"""GD406: GRPO refuses a right-side truncation_strategy (the prompt cannot be cut where generation starts)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import at_least


def truncation_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    ts = hits[0].groups.get("ts") or run.get("truncation_strategy", "?")
    delete_ok = at_least(run, 3, 7) is not False
    fix = ["--truncation_strategy left: keeps the end of an over-long prompt (the question) and cuts its start."]
    if delete_ok:
        fix.append("--truncation_strategy delete: drops over-long prompts and samples another row (ms-swift >= 3.7).")
    ml = run.get("max_length")
    if ml:
        fix.append(f"Prompts are measured against --max_length {ml}; raise it if many prompts are longer.")
    allowed = "'left' or 'delete'" if delete_ok else "'left'"
    return Diagnosis(
        message=f"GRPO generates after the prompt, so an over-long prompt cannot be cut on the right: "
                f"truncation_strategy='{ts}' is refused ({allowed} required).",
        fix=tuple(fix))
