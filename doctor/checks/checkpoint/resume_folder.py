"""GD813: `Can't find a valid checkpoint at <dir>`. transformers raises the same words in two places: the Trainer's own
resume (trainer.py _load_from_checkpoint: no weights file of this kind of run in the folder) and, under DeepSpeed,
integrations/deepspeed.py deepspeed_load_checkpoint (`glob(f"{checkpoint_path}/global_step*")` is empty: the folder
holds no DeepSpeed engine state; transformers 4.x-5.x, read in 5.19.0). Which one ran is told by the stack, else by the
run's use of DeepSpeed; the second is a checkpoint without what a DeepSpeed resume needs, not a folder of the other
kind of weights."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def _deepspeed_said(hits: list[Hit], ctx: RunState) -> tuple[bool, bool]:
    """(the stack shows DeepSpeed's resume, the run uses DeepSpeed)."""
    # the exception of the matched line (a pattern's hit carries the line; the parsed exception has the frames)
    lines = {(h.evidence.path, h.evidence.line) for h in hits}
    frames = [f for h in hits if h.exc is not None for f in h.exc.frames] + \
        [f for e in ctx.exceptions if (e.where.path, e.where.line) in lines for f in e.frames]
    in_stack = any(f.func == "deepspeed_load_checkpoint" for f in frames)
    every = [f for e in ctx.exceptions for f in e.frames]
    used = in_stack or bool(ctx.run.args.get("deepspeed")) or \
        any("/deepspeed/" in f.path.replace("\\", "/") for f in frames + every)
    return in_stack, used


def resume_folder_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    in_stack, used = _deepspeed_said(hits, ctx)
    if not used:
        return Diagnosis()  # the Trainer's own resume: the rule's reading as written
    where = hits[0].groups.get("dir") or "the checkpoint folder"
    how = ("its stack is in deepspeed_load_checkpoint" if in_stack else
           "the run uses DeepSpeed, read from its settings or frames, and under it transformers raises these words "
           "when a checkpoint has no engine state")
    return Diagnosis(
        message=(f"The resume looked for DeepSpeed's engine state in `{where}` and found none ({how}): under DeepSpeed "
                 f"the Trainer resumes from the checkpoint's `global_step*/` folder (each rank's model and optimizer "
                 f"shards and the `latest` tag), and this checkpoint has no such folder: it was saved with "
                 f"save_only_model, by a run without DeepSpeed, or copied or cleaned up without it."),
        fix=(f"List the folder (`ls {where}`): resume from a checkpoint-N/ that holds a global_step*/ folder and "
             f"`latest`, with the same DeepSpeed stage and number of GPUs that saved it.",
             "If only the weights are there (save_only_model), start a new run from them (load the checkpoint as the "
             "model) instead of resuming: the optimizer and scheduler state is not in the checkpoint."),
        category="checkpoint-corrupt",
        confidence=None if in_stack else "likely",
        title="A DeepSpeed resume from a checkpoint without its engine state (no global_step* folder)")
