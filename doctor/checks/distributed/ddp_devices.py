"""GD315 (pattern rule's diagnose hook): DistributedDataParallel refused a module whose parameters sit on several
devices while it was given device_ids: one process's model spans GPUs under a one-GPU-per-rank launcher."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# torch prints the parameters' devices as a set: "{device(type='cuda', index=0), device(type='cuda', index=3)}"
_DEVICE = lazyre.compile(r"device\(type='(\w+)'(?:, index=(\d+))?\)")


def ddp_devices_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    line = hits[0].line.text
    devices = sorted({f"{kind}:{index}" if index else kind for kind, index in _DEVICE.findall(line)})
    ids = hits[0].groups.get("ids") or "?"
    if devices == ["cpu"]:
        # a CPU module takes no device_ids: the model was never moved to the rank's GPU
        msg = (f"DistributedDataParallel was given device_ids {ids} for a module whose parameters are all on the "
               f"CPU: the model was not moved to the rank's GPU before it was wrapped.")
        return Diagnosis(message=msg, fix=("Move the model to the rank's GPU before DDP wraps it: "
                                           "torch.cuda.set_device(local_rank); model.to(local_rank).",))
    spread = (f"its parameters sit on {len(devices)} devices ({', '.join(devices)})" if len(devices) > 1
              else "its parameters sit on several devices (the list is cut in the excerpt)")
    msg = (f"DistributedDataParallel was given device_ids {ids} for a module that is not on one device: {spread}. "
           f"Each DDP rank must hold its whole model on its own GPU; a model split over GPUs inside one process "
           f"(device_map=\"auto\", a sharded load) or weights restored onto the GPUs they were saved from "
           f"(torch.load without map_location) make such a module.")
    fix = ("Load the model on the rank's own device under torchrun/accelerate: device_map={\"\": local_rank} (or "
           "no device_map), not \"auto\".",
           "Restore checkpoints and adapter weights with torch.load(path, map_location=\"cpu\") (or the rank's "
           "device) before they are set into the model.")
    return Diagnosis(message=msg, fix=fix)
