"""GD416: a prompt longer than vLLM's max_model_len, skipped by the V0 scheduler (a warning) or refused when the request
is validated (an exception: the request, and the rollout or server call that sent it, fails)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit


def prompt_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    refused = next((h for h in hits if h.exc is not None), None)
    if refused is None:
        return Diagnosis()  # the scheduler's warning: the rule's own message
    n, limit = refused.groups.get("n"), refused.groups.get("limit")
    # vLLM's multimodal wording counts the image / audio tokens in the prompt's length
    what = "text plus multimodal tokens" if "total length" in refused.evidence.text else "tokens"
    return Diagnosis(
        message=f"vLLM refused a request whose prompt has {n} {what}, more than its max_model_len {limit} (both "
                f"read from the message): the request fails, and so does the rollout or API call that sent it.",
        severity=Severity.error)
