"""GD605: the soft_overlong reward without --soft_cache_length."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def soft_overlong_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    L = run.int_arg("max_completion_length") or 512
    cache = max(1, L // 4)
    return Diagnosis(fix=(
        f"Add --soft_cache_length {cache} (the last tokens before max_completion_length {L} over which the "
        f"soft_overlong penalty ramps up; soft_max_length defaults to max_completion_length), or drop "
        f"soft_overlong from --reward_funcs.",))
