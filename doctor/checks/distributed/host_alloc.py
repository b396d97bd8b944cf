"""GD313: a CPU allocation that failed inside the process (torch's CPU allocator, Python's MemoryError): how much it
asked for, and the phase the traceback shows (model load, dataset, training)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_LOAD = ("from_pretrained", "load_state_dict", "_load_state_dict", "load_checkpoint", "safe_open", "load_file",
         "_load_pretrained_model", "_apply", "prepare_model")
_DATA = ("map", "tokenize", "_map_single", "collate", "__getitem__", "encode", "preprocess")


def host_alloc_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    h = hits[0]
    asked = h.groups.get("bytes")
    size = f" of {int(asked) / 2**20:,.0f} MiB ({asked} bytes, read from the message)" if asked else ""
    funcs = [f.func for f in (h.exc.frames if h.exc else ())]
    loading = any(f in _LOAD for f in funcs)
    data = not loading and any(f in _DATA for f in funcs)
    phase = (" while the model's weights were loading" if loading else
             " while the dataset was processed" if data else "")
    msg = (f"A CPU memory allocation{size} failed{phase}: the host (not the GPU) had no RAM left for it. The request "
           f"itself can be small: what was already allocated took the rest.")
    world = ctx.run.world_size()
    fix = []
    if loading or not data:
        per = f"{world} processes on this node each load" if world and world > 1 else "each process loads"
        fix.append(f"Loading: {per} the checkpoint into host RAM before moving it to its GPU; load in bf16 (torch_dtype="
                   f"bfloat16, half of fp32), with low_cpu_mem_usage / a device_map so weights stream to the GPU, or run "
                   f"fewer processes per node while loading; check the container's memory limit.")
    if data or not loading:
        fix.append("Data: tokenize once ahead of the run, fewer dataloader / preprocessing workers, or stream the "
                   "dataset instead of holding it in RAM.")
    fix.append("Watch `free -g` (and `dmesg -T | grep -i oom`) while it runs: more RAM or swap is the other way out.")
    return Diagnosis(message=msg, fix=tuple(fix))
