"""GD703's run context: ms-swift's end-of-run `last_model_checkpoint: None` says why a run that crashed saved nothing
no more than its exception does; only a run that ended by itself is reported for it (a fixer: pure)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def no_checkpoint_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    warned = any("No training was carried out" in h.evidence.text for h in hits)
    if not warned and ctx.exceptions:
        return None  # the run failed: its exception is the finding, and no save is its consequence
    return Diagnosis()
