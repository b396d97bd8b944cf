"""GD437: training ended without one checkpoint because the dataset is smaller than one optimizer step."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int


def too_little_data_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    n = run.world_size() or 1
    b = as_int(run.get("per_device_train_batch_size")) or 1
    ga = as_int(run.get("gradient_accumulation_steps")) or 1
    g = as_int(run.get("num_generations")) or 8
    per_step = max(n * b * ga // g, 1)
    return Diagnosis(
        message=f"Training ended without a single checkpoint, so the final summary has no "
                f"last_model_checkpoint: the dataset is too small for one step. One optimizer step uses world "
                f"size {n} x per_device_train_batch_size {b} x gradient_accumulation_steps {ga} / "
                f"num_generations {g} = {per_step} prompt(s).",
        fix=(f"Give the run more rows than {per_step} prompts per step (GRPO usually needs a few thousand), "
             f"or check the dataset path and any `#N` sample limit in --dataset.",
             "The rows may also have been dropped: look for `There are errors in the dataset` warnings."))
