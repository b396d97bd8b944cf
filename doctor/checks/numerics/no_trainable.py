"""GD632: the parameter summary says nothing is trainable; which of the causes the summary's own form points at.

PEFT's ``print_trainable_parameters`` line is printed by a PeftModel, whose adapter layers exist: target_modules that
match no module make PEFT raise in ``inject_adapter`` ("Target modules ... not found in the base model", peft 0.11+)
before any summary is printed. So with PEFT's line, the adapter is there and frozen: loaded for inference
(``PeftModel.from_pretrained`` without ``is_trainable=True``) or frozen after it was added. ms-swift's summary says
less (it prints for any model), and keeps the rule's order of causes.
"""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def no_trainable_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    line = hits[0].groups.get("line") or ""
    if not line.startswith("trainable params:"):
        return Diagnosis()
    msg = (f"The parameter summary says nothing is trainable: `{line}`. That line is PEFT's own summary of a model "
           f"with adapter layers: target_modules that match nothing make PEFT raise \"Target modules ... not found in "
           f"the base model\" before it (peft 0.11+), so here the adapter exists and is frozen: loaded for inference "
           f"(PeftModel.from_pretrained without is_trainable=True, its default) or frozen after it was added. The "
           f"optimizer has no parameters to update, so the loss cannot go down and grad_norm is 0.")
    fix = ("Load an adapter you continue training with `PeftModel.from_pretrained(model, path, is_trainable=True)` "
           "(ms-swift: pass it with --adapters or --resume_from_checkpoint).",
           "Do not freeze the model after adding the adapter (no requires_grad_(False) on the whole PeftModel).",
           "With an older PEFT that does not check target_modules: compare them with the model's module names "
           "(`print(model)`).")
    return Diagnosis(message=msg, fix=fix)
