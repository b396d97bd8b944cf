"""GD914 (pattern rule's diagnose hook): torch >= 2.10's LR scheduler zips the optimizer's param groups with its
own learning rates strictly; an optimizer whose groups changed after the scheduler was built (DeepSpeed dropping an
empty group) raises "zip() argument 2 is longer than argument 1" at the first scheduler step."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..hang.endings import plain

# where the scheduler steps: torch's lr_scheduler.py (_update_lr), DeepSpeed's lr_schedules.py, the trainer's call
_SCHEDULER_WORDS = ("lr_scheduler", "lr_schedules", "_update_lr")


def _at_scheduler(hit: Hit, ctx: RunState) -> bool:
    if any(w in hit.line.text for w in _SCHEDULER_WORDS):
        return True  # "crashes at lr_scheduler.step() with ValueError: zip() ..." (a title)
    frames = hit.exc.frames if hit.exc is not None else ()
    if any(any(w in f"{fr.path} {fr.func} {fr.code}" for w in _SCHEDULER_WORDS) for fr in frames):
        return True
    # a traceback cut above its exception line, the exception quoted in a title: the frames as lines of the log
    return any(any(w in plain(ln.text) for w in _SCHEDULER_WORDS) for ln in ctx.last_tail())


def sched_groups_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    hit = next((h for h in hits if _at_scheduler(h, ctx)), None)
    if hit is None:
        return None  # a strict zip elsewhere is another mismatch, not the scheduler's
    versions = ctx.run.versions
    shown = ", ".join(f"{name} {versions[name]}" for name in ("torch", "deepspeed", "transformers") if name in versions)
    msg = ("The LR scheduler holds one learning rate per optimizer param group, counted when it was built; at its "
           "step torch >= 2.10 pairs them with the optimizer's groups strictly (zip(..., strict=True) in "
           "LRScheduler._update_lr) and the counts differ: the optimizer's groups changed after the scheduler was "
           "made. In the reported cases DeepSpeed (>= 0.18 drops empty param groups) and LoRA (the no-weight-decay group of bias and "
           "norm weights is empty when only adapters train) leave the optimizer one group of two. Older torch "
           "truncated the pairing silently." + (f" Versions in the log: {shown}." if shown else ""))
    fix = ("pip install 'torch<2.10' (or 'deepspeed<0.18'), keeping the rest of the environment: the group "
           "counts then no longer have to agree.",
           "Or, where the training code is yours to change: build the LR scheduler after DeepSpeed prepared the "
           "optimizer, or leave empty param groups out when the optimizer is made.")
    return Diagnosis(message=msg, fix=fix)
