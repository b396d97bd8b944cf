"""GD437: training ended without one checkpoint because the dataset is smaller than one optimizer step."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int
from .._numbers import assumptions, computed, read_or, show


def too_little_data_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    n = read_or(run.world_size(), 1)
    b = read_or(as_int(run.get("per_device_train_batch_size")), 1)
    ga = read_or(as_int(run.get("gradient_accumulation_steps")), 1)
    g = read_or(as_int(run.get("num_generations")), 8)
    per_step = computed(max(n.value * b.value * ga.value // g.value, 1), n, b, ga, g)
    why = assumptions(("world size", n), ("per_device_train_batch_size", b), ("gradient_accumulation_steps", ga),
                      ("num_generations", g), why="ms-swift's defaults, not in the inputs")
    return Diagnosis(
        message=f"Training ended without a single checkpoint, so the final summary has no "
                f"last_model_checkpoint: the dataset is too small for one step. One optimizer step uses "
                f"{show('world size', n)} x {show('per_device_train_batch_size', b)} x "
                f"{show('gradient_accumulation_steps', ga)} / {show('num_generations', g)} = {per_step} prompt(s).",
        fix=(f"Give the run more rows than {per_step} prompts per step (GRPO usually needs a few thousand){why}, "
             f"or check the dataset path and any `#N` sample limit in --dataset.",
             "The rows may also have been dropped: look for `There are errors in the dataset` warnings."))
