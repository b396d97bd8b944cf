"""GD439: a full-parameter run resumes from a checkpoint without full weights (a LoRA adapter checkpoint)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import tuner_flag


def ckpt_index_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    d = (hits[0].groups.get("dir") or run.get("resume_from_checkpoint") or "<checkpoint>").rstrip("/.")
    t = tuner_flag(run)
    tuner = run.tuner() or "full"
    msg = (f"--resume_from_checkpoint {d} holds no full model weights (no model.safetensors or index): it is most "
           f"likely a LoRA adapter checkpoint, and this run is {tuner}-parameter, so the Trainer cannot restore it.")
    fix = [f"To continue the LoRA run: --{t} lora --resume_from_checkpoint {d}.",
           f"To train all weights starting from that LoRA: --model <base model> --adapters {d} --{t} full, without "
           f"--resume_from_checkpoint (a new optimizer state; the adapter is merged first).",
           "For a full checkpoint written with DeepSpeed ZeRO-3 without 16-bit gathering, run zero_to_fp32.py in "
           "it first."]
    return Diagnosis(message=msg, fix=tuple(fix))
