"""GD913 (pattern rule's diagnose hook): which of flash-attn's GPU checks failed decides the way out: another
attention implementation always; a newer flash-attn only where a newer release lifted that check."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_SDPA = "--attn_impl sdpa (or eager): the model trains on this GPU without flash-attn."


def flash_gpu_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    what = hits[0].groups.get("what") or ""
    if "Ampere" in what:
        later = ("flash-attn 2 has no kernel below compute capability 8.0 (V100, T4, RTX 20xx): no release of it runs "
                 "on this GPU.")
    elif "> 192" in what or "224" in what:
        later = ("For heads 256 wide without dropout, flash-attn >= 2.5.5 runs the backward on consumer Ampere/Ada "
                 "GPUs (sm86/sm89): pip install -U flash-attn, if the installed release is older.")
    else:
        # flash-attn 1.x's limits (head dim > 64 backward, the bare is_sm80 check): 2.x runs the backward of heads up
        # to 192 wide on every Ampere/Ada GPU
        later = ("flash-attn 2 runs the backward of heads up to 192 wide on consumer Ampere/Ada GPUs (sm86/sm89): "
                 "this check is flash-attn 1.x's; pip install -U flash-attn.")
    return Diagnosis(fix=(_SDPA, later))
