"""GD443: a sample carries more images/videos than vLLM was started to accept per prompt."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int


def mm_limit_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    mod = g.get("mod") or "image"
    n = as_int(g.get("n")) or 1
    got = as_int(g.get("got"))
    want = got or n + 1
    return Diagnosis(
        message=f"vLLM was started to accept at most {n} {mod}(s) per prompt, and a sample carries "
                f"{got if got else 'more'}.",
        fix=(f"--vllm_limit_mm_per_prompt '{{\"{mod}\": {want}}}' (the most {mod}s any sample has"
             + ("" if got else f"; {want} is assumed: the error does not say how many this sample carries")
             + "; in server mode the rollout server needs it too).",
             f"Or limit the dataset to {n} {mod}(s) per sample."))
