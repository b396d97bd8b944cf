"""An attribute asked of a training wrapper that only the model it wraps has: torch's nn.Module.__getattr__ raises
"'<class>' object has no attribute '<name>'" for a name neither the wrapper nor its parameters, buffers or submodules
hold, and the wrappers keep the model as an attribute of their own (torch/nn/parallel/distributed.py
DistributedDataParallel.module, data_parallel.py DataParallel.module, deepspeed/runtime/engine.py DeepSpeedEngine.module;
FSDP forwards unknown attributes since torch 1.12, which leaves it out). accelerate's Accelerator.unwrap_model and
DeepSpeed's engine.module are the documented ways back to the model. Pure."""
from __future__ import annotations

from ... import lazyre

# the wrappers whose model is their .module, by class name
_WRAPPERS = ("DistributedDataParallel", "DataParallel", "DeepSpeedEngine", "PipelineEngine")
_MESSAGE = lazyre.compile(r"'(?P<cls>" + "|".join(_WRAPPERS) + r")' object has no attribute '(?P<name>\w+)'")


def wrapped_attribute(message: str) -> tuple[str, str] | None:
    """(why, fix) when an AttributeError names an attribute asked of a training wrapper; None otherwise."""
    m = _MESSAGE.search(message)
    if m is None:
        return None
    cls, name = m.group("cls"), m.group("name")
    why = (f"`{name}` was asked of the {cls} wrapper, not of the model inside it: once a launcher or trainer wraps "
           f"the model ({cls} keeps it as `.module`), methods and attributes the model class defines (generate, "
           f"config, its heads) are no longer the wrapper's. Code written for one process reaches the wrapper when "
           f"the run is started on several GPUs or with DeepSpeed.")
    fix = (f"Call it on the unwrapped model: `model.module.{name}` (or `accelerator.unwrap_model(model).{name}` with "
           f"accelerate), or update the project to a release that unwraps the model where it calls `{name}`; "
           f"running on one GPU without DeepSpeed avoids the wrapper.")
    return why, fix


__all__ = ["wrapped_attribute"]
