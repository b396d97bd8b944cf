"""GD605: the soft_overlong reward without --soft_cache_length."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from .._numbers import assumptions, computed, read_or

_DEFAULT = "ms-swift's default, not in the inputs"


def soft_overlong_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    L = read_or(run.int_arg("max_completion_length"), 512)
    cache = computed(max(1, L.value // 4), L)
    return Diagnosis(fix=(
        f"Add --soft_cache_length {cache.value} (the last tokens before max_completion_length {L} over which the "
        f"soft_overlong penalty ramps up; soft_max_length defaults to max_completion_length)"
        f"{assumptions(('max_completion_length', L), why=_DEFAULT)}, or drop "
        f"soft_overlong from --reward_funcs.",))
