"""GD634: torch's backward refused a loss with no graph; which of its causes the log shows beside it.

The rule's patterns also match the two lines that name a cause (torch's reentrant checkpoint warning, a parameter
summary of 0 trainable): they only place the failure, so without the exception itself the finding is dropped (GD633
and GD632 speak for those lines alone).
"""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def no_grad_graph_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    exc = next((h for h in hits if h.groups.get("index") is not None), None)
    if exc is None:
        return None
    # anywhere in the log: a paste often puts the exception first (a title) and the run's lines after it
    others = [h for h in hits if h is not exc]
    head = (f"torch refused the backward pass: `element {exc.groups['index']} of tensors does not require grad and "
            f"does not have a grad_fn`: the loss was computed without any tensor that requires grad.")
    if any(h.groups.get("zero") for h in others):
        return Diagnosis(
            message=head + " The run's parameter summary says no parameter is trainable: nothing the loss is "
                           "computed from can get a gradient.",
            fix=("Make the weights you mean to train trainable: add the adapter for training (or "
                 "PeftModel.from_pretrained(..., is_trainable=True)), and do not freeze the model after adding it.",),
            title="backward() on a loss with no trainable parameter")
    if any(h.groups.get("ckpt") for h in others):
        return Diagnosis(
            message=head + " torch's reentrant gradient checkpointing warned in this run that none of a checkpointed "
                           "block's inputs requires grad (`None of the inputs have requires_grad=True`): with a "
                           "frozen base model the hidden states entering each block carry no graph, so the blocks' "
                           "outputs, and the loss, have none, although the adapters inside are trainable.",
            fix=(CHECKPOINT_FIX,),
            title="backward() on a loss with no graph: gradient checkpointing on a frozen base")
    return Diagnosis(confidence="likely")


# the way out of reentrant checkpointing on a frozen base (also what the words reading offers: hang/symptom_words.py)
CHECKPOINT_FIX = ("Call model.enable_input_require_grads() before adding the adapters (PEFT's "
                  "prepare_model_for_kbit_training does it), or use non-reentrant checkpointing: "
                  "gradient_checkpointing_kwargs={\"use_reentrant\": False}; turning gradient checkpointing off also "
                  "confirms it.")
