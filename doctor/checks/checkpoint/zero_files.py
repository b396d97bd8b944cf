"""GD705: a DeepSpeed resume that finds no ZeRO state file for one of its ranks. The rank in the missing file's name
and the run's own world size and ZeRO stage, where the run shows them, say which layout change is the likely one."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int
from ..memory._facts import zero_stage


def zero_rank_file_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    hit = hits[0]
    rank = as_int(hit.groups.get("rank"))
    name = hit.groups.get("file") or "zero_pp_rank_*"
    folder = f" in {hit.groups['dir']}/" if hit.groups.get("dir") else ""
    world = ctx.run.world_size()
    stage, _ = zero_stage(ctx.run.args.get("deepspeed"))
    now = []
    if world:
        now.append(f"{world} ranks (read from the run)")
    if stage is not None:
        now.append(f"ZeRO stage {stage} (read from its DeepSpeed config)")
    shown = f"; this run resumes with {' and '.join(now)}" if now else ""
    if rank == 0:
        why = ("even the first rank's file is missing, so the checkpoint most likely holds no ZeRO state at all: "
               "written under ZeRO stage 0 or without DeepSpeed (before the config moved to stage 1-3), or a "
               "converted, exported or weights-only copy")
    else:
        who = f"rank {rank}'s" if rank is not None else "a rank's"
        why = (f"{who} file is missing: the checkpoint was written by a run with another layout (fewer ranks"
               + (f" than {rank + 1}" if rank is not None else "") + ", or ZeRO stage 0, which writes no per-rank "
               "files, before the config moved to stage 1-3) or without its ZeRO state (a converted, exported or "
               "weights-only copy)")
    msg = (f"DeepSpeed's resume reads one ZeRO state file per data-parallel rank and found no `{name}`{folder}"
           f"{shown}; {why}.")
    fix = ["List the checkpoint's global_step*/ folder: the zero_pp_rank_* files there give the number of ranks it was "
           "saved with (none: saved without ZeRO state). Resume with that layout (the same GPUs x nodes and ZeRO stage), "
           "or start from its weights with a fresh optimizer."]
    framework = ctx.framework()[0]
    if framework == "ms-swift":
        fix.append("ms-swift: --resume_only_model true loads the checkpoint's weights without its optimizer state.")
    elif framework == "llamafactory":
        fix.append("LLaMA-Factory resumes from the last checkpoint of output_dir by itself: give a changed run a new "
                   "output_dir (or overwrite_output_dir: true), or load the weights as the model to start from.")
    else:
        fix.append("transformers' Trainer: pass the checkpoint folder as the model to load instead of "
                   "resume_from_checkpoint; DeepSpeed: load_checkpoint(..., load_optimizer_states=False, "
                   "load_lr_scheduler_states=False).")
    return Diagnosis(message=msg, fix=tuple(fix))
