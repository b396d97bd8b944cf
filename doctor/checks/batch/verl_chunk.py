"""GD104's run facts: the batch size and worker count of verl's chunk assertion, or, for an assertion in DataProto.chunk
printed without them (the non-tensor split of later releases), the function alone."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def chunk_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if any(h.groups.get("size") for h in hits):
        return Diagnosis()  # the message's own numbers fill the rule's templates
    frame = next((h.exc.raised_at for h in hits if h.exc is not None and h.exc.raised_at is not None), None)
    if frame is None or frame.func != "chunk":
        return None  # another assertion of verl/protocol.py: not the split into workers
    code = f" (`{frame.code.strip()}`)" if frame.code else ""
    return Diagnosis(
        message=f"verl's DataProto.chunk could not split a batch into equal per-worker chunks{code}: the number of "
                f"samples reaching this dispatch is not a multiple of the number of workers it is dispatched to "
                f"(this assertion prints neither number).",
        fix=("Make data.train_batch_size x actor_rollout_ref.rollout.n (and the validation batch, when validation "
             "fails) a multiple of the workers of that call: trainer.n_gpus_per_node x trainer.nnodes for the actor, "
             "with Megatron its data-parallel size.",
             "When a filter (dynamic sampling, group filtering) shrinks the batch before it is dispatched, pad it with "
             "verl's pad_dataproto_to_divisor or trim it to a multiple of the worker count."))
