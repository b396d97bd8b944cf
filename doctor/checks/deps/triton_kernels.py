"""GD912: vLLM's import of its Triton kernels failed; the error it appends names what the installed triton lacks."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def triton_kernels_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    error = next((h.groups.get("error") for h in hits if h.groups.get("error")), None)
    if not error:
        return Diagnosis()  # the rule's own message
    # the appended ImportError / AttributeError is the one fact the line gives about which API is missing
    return Diagnosis(message=f"vLLM could not import its Triton kernels (triton_kernels, used by the fused-MoE and "
                             f"MXFP4 paths): `{error.strip()[:160]}`, read from the line, is an API the installed "
                             f"triton does not have in the form this vLLM's kernels import.")
