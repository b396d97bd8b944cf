"""GD207 (pattern rule's diagnose hook): accelerate's dispatch put part of a model on the CPU or disk because the
GPUs' memory (or the max_memory given) did not hold it; what that means depends on what the run does next."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# an export or a LoRA merge in the log (LLaMA-Factory's export_model / llamafactory-cli export, ms-swift export,
# peft's merge_and_unload): the merged weights are saved from the offloaded model
_EXPORT = lazyre.compile(r"(?i)export_model|\bexport_dir\b|llamafactory-cli export|swift export|merge_and_unload|"
                         r"merge_lora|Merged \d+ adapter")


def offloaded_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    where = hits[0].groups.get("where") or "cpu"
    texts = [ln.text for tail in ctx.tails.values() for ln in tail] + list(ctx.run.command_texts)
    exporting = any(_EXPORT.search(t) for t in texts) or ctx.run.command == "export"
    msg = (f"accelerate placed part of the model on the {where}: with device_map=\"auto\" the GPUs' free memory (or "
           f"the max_memory given) did not hold the whole model in the dtype it was loaded in, so those layers sit on "
           f"the GPU as meta placeholders and are brought in for each forward pass.")
    if exporting:
        msg += (" The run exports or merges weights: saving from an offloaded model reads those placeholders, and "
                "the save can fail on them (a safetensors error, `Cannot copy out of meta tensor`) or write what "
                "the GPU side holds.")
        fix = ("Export where the whole model fits: on the CPU with enough RAM (hide the GPUs: CUDA_VISIBLE_DEVICES= "
               "or the framework's export device option) or on GPUs with room for it in the export dtype; then "
               "export again with the same adapter.",)
    else:
        fix = ("Give the model room on the GPUs: fewer other processes on them, more GPUs, a smaller dtype or a "
               "quantized load; training with layers offloaded this way is very slow, and backward through "
               "offloaded layers may fail.",)
    return Diagnosis(message=msg, fix=fix)
