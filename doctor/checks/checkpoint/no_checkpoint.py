"""GD703's run context: ms-swift's end-of-run `last_model_checkpoint: None` says why a run that crashed saved nothing
no more than its exception does; only a run that ended by itself is reported for it (a fixer: pure)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def _crashed_after(h: Hit, ctx: RunState) -> bool:
    """A traceback follows the line (whole, or cut before its first frame), on any rank."""
    return any("Traceback (most recent call last)" in ln.text for ln in ctx.lines_after(h.evidence.path, h.seq, 40))


def no_checkpoint_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    warned = any("No training was carried out" in h.evidence.text for h in hits)
    # ms-swift logs last_model_checkpoint in a finally path (swift/llm/train/sft.py), also when training raised: a
    # traceback, whole or cut before its exception line, is the run failing, and no save is its consequence
    if not warned and (ctx.exceptions or ctx.open_tracebacks or any(_crashed_after(h, ctx) for h in hits)):
        return None
    return Diagnosis()
