"""GD313: a CPU allocation that failed inside the process (torch's CPU allocator, a file it maps, Python's MemoryError and
ENOMEM): how much it asked for, and the phase the traceback shows (model load, dataset, training)."""
from __future__ import annotations

import posixpath

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
    world = ctx.run.world_size()
    fix = []
    mapped = h.groups.get("mapped")
    if mapped:
        # a file mapping takes address space, not RAM (the pages are the file's): ENOMEM from mmap is most often the
        # process's address-space limit (RLIMIT_AS, Linux mmap(2)) or a kernel that refuses to overcommit
        name = posixpath.basename((h.groups.get("file") or "").replace("\\", "/")) or "a file"
        msg = (f"Mapping {int(mapped) / 2**20:,.0f} MiB of {name} into memory ({mapped} bytes, read from the message) "
               f"failed with ENOMEM (Cannot allocate memory){phase}. A mapped file takes address space, not RAM, so "
               f"this is most often a limit on the process's virtual memory (`ulimit -v`, or a job scheduler's "
               f"per-job virtual memory limit such as Grid Engine's h_vmem) or a kernel that refuses to overcommit, "
               f"more than RAM in use.")
        fix.append("Check the limits the run starts under: `ulimit -v` in the job's own shell (unlimited is what a "
                   "training process needs: the imports of torch and a trainer alone take 2 GB or more of address "
                   "space before any weight), the scheduler's virtual memory request (h_vmem, --mem with VSizeFactor), and "
                   "`cat /proc/sys/vm/overcommit_memory` (2 refuses what exceeds the commit limit).")
    else:
        msg = (f"A CPU memory allocation{size} failed{phase}: the host (not the GPU) had no RAM left for it. The "
               f"request itself can be small: what was already allocated took the rest.")
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
