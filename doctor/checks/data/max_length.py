"""GD432: dataset rows that encode to more tokens than --max_length (skipped, or the run gave up)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit
from ...values import as_int


def _round_up(n: int) -> int:
    for step in (256, 512, 1024, 2048, 4096):
        if n <= step * 8:
            return ((n + step - 1) // step) * step
    return ((n + 4095) // 4096) * 4096


def max_length_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    gave_up = any(h.groups.get("retrieve") for h in hits)
    sized = [h for h in hits if h.groups.get("len")]
    g = (sized[0] if sized else hits[0]).groups
    length = as_int(g.get("len"))
    ml = as_int(g.get("ml")) or as_int(run.get("max_length"))
    mcl = as_int(run.get("max_completion_length"))
    ts = run.get("truncation_strategy")
    fix = []
    if length and ml:
        msg = f"A row encodes to {length} tokens, more than --max_length {ml}."
        new = _round_up(length)
    else:
        msg = ("ms-swift gave up after repeatedly failing to encode dataset rows: usually the prompts are longer "
               "than --max_length" + (f" {ml}" if ml else "") + " (or the rows are malformed; the warnings "
               "`There are errors in the template.encode` just above carry the first real error).")
        new = _round_up(ml * 2) if ml else None
    if new:
        fix.append(f"--max_length {new} (ms-swift measures the prompt against it in GRPO).")
    fix.append("--truncation_strategy left (cut the start of long prompts) or delete (skip them)"
               + (f"; it is now {ts}." if ts else "."))
    if mcl and new:
        fix.append(f"With vLLM, keep --vllm_max_model_len >= max_length + max_completion_length = {new} + {mcl} = "
                   f"{new + mcl}.")
    if not gave_up and (ctx.ended or ctx.metrics_steps > 0):
        return Diagnosis(
            message=msg + f" {len(sized) or len(hits)} such row(s) were skipped; training went on without them.",
            fix=tuple(fix),
            severity=Severity.warning)
    return Diagnosis(message=msg, fix=tuple(fix))
