"""GD702: ms-swift rebuilds its arguments from a checkpoint's args.json, and the file is missing."""
from __future__ import annotations

import posixpath

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def args_json_missing_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    path = (hits[0].groups.get("path") or "").rstrip(".")
    ckpt = posixpath.dirname(path) or "<checkpoint>"
    parent = posixpath.dirname(ckpt)
    is_ckpt = posixpath.basename(ckpt).startswith("checkpoint-")
    msg = (f"ms-swift rebuilds its arguments from {path} (load_args, the default for infer/export/deploy and for "
           f"BaseArguments.from_pretrained), but the file is missing: {ckpt} was not saved by a `swift sft/rlhf` run "
           f"(which copies args.json into every checkpoint), or it was copied without it.")
    fix = []
    if is_ckpt and parent:
        fix.append(f"cp {parent}/args.json {ckpt}/  (the run directory holds the args.json of the run that wrote "
                   f"the checkpoint).")
    fix.append(f"Or do not load arguments from the checkpoint: pass the base model and the adapter explicitly, e.g. "
               f"`swift infer --model <base model> --adapters {ckpt} --load_args false` (in Python: build the "
               f"arguments with model=... and adapters=[...] instead of BaseArguments.from_pretrained).")
    fix.append(f"Check that {ckpt} holds adapter_config.json and adapter_model.safetensors; adapter_config.json names "
               f"the base model (base_model_name_or_path).")
    return Diagnosis(message=msg, fix=tuple(fix))
