"""GD603: GRPO without --reward_funcs or --reward_model (ms-swift < 4.4 refuses to start)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._flags import BUILTIN_ORMS


def missing_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    mm = ctx.run.swift_major_minor
    fix = ["Add --reward_funcs with one or more built-ins (" + ", ".join(BUILTIN_ORMS) + "), e.g. --reward_funcs "
           "accuracy format, or --reward_model <dir>, or a custom name registered in orms by an --external_plugins "
           "file."]
    if mm is None or mm < (4, 4):
        fix.append("ms-swift >= 4.4 no longer raises here: without rewards it trains with reward 0 and no learning "
                   "signal, so set rewards explicitly either way.")
    return Diagnosis(fix=tuple(fix))
