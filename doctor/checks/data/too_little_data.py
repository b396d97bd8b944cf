"""GD437: training ended without one checkpoint: the dataset is smaller than one optimizer step, or a resume started
at or past the last step (both end with no last_model_checkpoint)."""
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
    resume = run.args.get("resume_from_checkpoint")
    # a step's prompts are its completions / num_generations only in a GRPO run: never divide by an assumed count
    generations = as_int(run.get("num_generations")) if run.args.get("rlhf_type") == "grpo" or \
        run.args.get("num_generations") is not None else None
    factors = (f"{show('world size', n)} x {show('per_device_train_batch_size', b)} x "
               f"{show('gradient_accumulation_steps', ga)}")
    why = assumptions(("world size", n), ("per_device_train_batch_size", b), ("gradient_accumulation_steps", ga),
                      why="ms-swift's defaults, not in the inputs")
    if generations:
        g = read_or(generations, 1)
        per_step = computed(max(n.value * b.value * ga.value // g.value, 1), n, b, ga, g)
        step = f"{factors} / {show('num_generations', g)} = {per_step} prompt(s)"
    else:
        per_step = computed(n.value * b.value * ga.value, n, b, ga)
        step = f"{factors} = {per_step} sample(s)"
    msg = ("Training ended without a single checkpoint, so the final summary has no last_model_checkpoint: either "
           f"the dataset does not fill one optimizer step ({step}), or the run trained no step at all.")
    resume_fix = ("The run resumed (--resume_from_checkpoint " + str(resume) + "): a checkpoint saved at or after the "
                  "last step leaves zero steps to train and saves nothing; raise --max_steps / --num_train_epochs "
                  "past it, or start a new run.") if resume else \
        ("A resume from a checkpoint at the last step (--resume_from_checkpoint) also trains zero steps and ends this "
         "way: check whether the command resumed.")
    data_fix = (f"Give the run more rows than one step uses ({per_step.value} per step; GRPO usually needs a few "
                f"thousand){why}, or check the dataset path and any `#N` sample limit in --dataset; rows may also "
                "have been dropped: look for `There are errors in the dataset` warnings.")
    return Diagnosis(message=msg, fix=(resume_fix, data_fix) if resume else (data_fix, resume_fix))
