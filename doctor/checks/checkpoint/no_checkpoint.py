"""GD703's run context: ms-swift's end-of-run `last_model_checkpoint: None` says why a run that crashed saved nothing
no more than its exception does; only a run that ended by itself is reported for it (a fixer: pure)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def no_checkpoint_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    warned = any("No training was carried out" in h.evidence.text for h in hits)
    # ms-swift logs last_model_checkpoint in a finally path (swift/llm/train/sft.py), also when training raised: a
    # traceback after it, whole or cut before its first frame (RunState.crashed_after_end), is the run failing, and
    # no save is its consequence
    if not warned and (ctx.exceptions or ctx.open_tracebacks or ctx.crashed_after_end):
        return None
    return Diagnosis()
