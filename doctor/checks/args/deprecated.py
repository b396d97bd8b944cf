"""GD412: a flag ms-swift still accepts with a deprecation warning and removes in a later version."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.flags import RENAMED


def deprecated_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    if g.get("train_type"):
        return Diagnosis(
            message="--train_type still works in ms-swift 4.0.x but was renamed --tuner_type; 4.1 and later "
                    "stop with `remaining_argv: ['--train_type', ...]`.",
            fix=("Rename --train_type to --tuner_type in the script.",))
    name, ver = g.get("name") or "?", g.get("ver") or "?"
    new = RENAMED.get(name, (None, ""))[0]
    if name == "tensor_parallel_size":
        new = "vllm_tensor_parallel_size"
    if new:
        fix = [f"Rename --{name} to --{new} before upgrading to {ver}."]
    elif name in ("vllm_device", "num_infer_workers"):
        fix = [f"Drop --{name} before upgrading to {ver}: use --vllm_mode colocate (vLLM on the training GPUs) or "
               f"--vllm_mode server (a separate swift rollout)."]
    else:
        fix = [f"Drop --{name} before upgrading to {ver} (it is set automatically)."]
    return Diagnosis(
        message=f"--{name} is deprecated and is removed in ms-swift {ver}; from then on it stops the run with "
                f"remaining_argv.",
        fix=tuple(fix))
