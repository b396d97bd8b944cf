"""GD623: DeepSpeed's fp16 loss scale at its minimum and the gradients still overflow, or falling towards it.

deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale halves the scale after each step whose gradients
overflow and logs `[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: X, reducing to Y` (ZeRO 1/2
stage_1_and_2.py and older stage2.py / stage3.py `[deepscale] ...`, fused_optimizer.py `Overflow detected. Skipping
step.`); at min_loss_scale it raises `Current loss scale already at minimum` unless raise_error_at_min_scale is off,
when it skips every step at scale 1 instead. Halvings from the initial scale (2^16, or 2^32 with initial_scale_power
32) in the first steps are the scaler finding its level and say nothing wrong."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit
from ...values import as_number
from ._nan_fixes import nan_fixes

# a scale this low means the gradients overflow fp16 (max 65504) even when the loss is multiplied by at most 128: they
# are inf/NaN or within a few hundred of fp16's limit, not a warm-up that has yet to settle
_COLLAPSED = 128.0


def _fixes(ctx: RunState) -> tuple[str, ...]:
    fix = [f for f in nan_fixes(ctx.run, kl_first=False, last_ok=None, lr_seen=None) if "float16" not in f]
    fix.insert(0, "Switch to bf16 (--torch_dtype bfloat16; in a custom DeepSpeed JSON set \"bf16\": {\"enabled\": true} "
                  "and remove the \"fp16\" block) on GPUs that support it; fp16 overflows in long GRPO runs.")
    return tuple(fix)


def _skipping(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    scales = [(as_number(h.groups.get("attempted")), as_number(h.groups.get("next"))) for h in hits]
    lowest = min((s for pair in scales for s in pair if s is not None), default=None)
    if lowest is None:
        return None
    if lowest > _COLLAPSED:
        return _still_skipping(hits, scales, lowest, ctx)
    skipped = len(hits)
    stuck = lowest <= 1.0
    msg = (f"DeepSpeed skipped {skipped} optimizer step{'s' if skipped != 1 else ''} for fp16 gradient overflow in this "
           f"log and its loss scale fell to {lowest:g}"
           + (": at scale 1 every step overflows and is skipped, so the weights no longer change (the run goes on "
              "without learning, or stops at `Current loss scale already at minimum`)." if stuck else
              f": gradients that overflow fp16 even with the loss multiplied by {lowest:g} are inf/NaN or about to be "
              f"(a diverging model, fp16's range), not the scaler's first steps of finding its level."))
    return Diagnosis(message=msg, fix=_fixes(ctx), severity=Severity.error if stuck else Severity.warning,
                     title=None if stuck else "fp16 loss scale collapsing: DeepSpeed skips step after step for overflow")


# halvings in one log that a scaler finding its level rarely needs (from 2^16: to 1024 and below)
_MANY_HALVINGS = 6


def _still_skipping(hits: list[Hit], scales: list, lowest: float, ctx: RunState) -> Diagnosis | None:
    """Overflow after overflow to the end of the log, the scale halved six times or more (65536 -> 1024): the steps
    the log shows are all skipped, which the scaler's first steps alone do not explain once they go on this long; said
    as likely, since one excerpt cannot tell a run's first steps from its end."""
    highest = max((s for pair in scales for s in pair if s is not None), default=lowest)
    tail = [ln for ln in ctx.last_tail() if ln.text.strip()]
    if highest / lowest < 2 ** _MANY_HALVINGS or not tail or tail[-1].seq != hits[-1].seq:
        return None
    msg = (f"DeepSpeed skipped at least {len(hits)} optimizer steps for fp16 gradient overflow and the log ends "
           f"while it still skips them: the loss scale fell from {highest:g} to {lowest:g}. A scaler finding its "
           f"level halves a few times in the first steps and then trains; halvings that go on mean gradients that "
           f"overflow fp16 (a diverging model, or fp16's range).")
    return Diagnosis(message=msg, fix=_fixes(ctx), severity=Severity.warning, confidence="likely",
                     title="fp16 loss scale falling: DeepSpeed skips step after step for overflow")


def loss_scale_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    at_minimum = [h for h in hits if not h.groups.get("attempted")]
    if not at_minimum:
        return _skipping(hits, ctx)
    run = ctx.run
    msg = ("DeepSpeed lowered the fp16 loss scale to its minimum and the gradients still overflowed, so it stopped "
           "the run: the gradients are inf/NaN at any scale.")
    ds = run.args.get("deepspeed")
    if ds:
        msg += f" DeepSpeed config: {ds}."
    # the exception first, then the last overflow line before it (not every halving of the way down)
    skipped = [h.evidence for h in hits if h.groups.get("attempted")][-1:]
    return Diagnosis(message=msg, fix=_fixes(ctx), evidence=(*(h.evidence for h in at_minimum), *skipped))
