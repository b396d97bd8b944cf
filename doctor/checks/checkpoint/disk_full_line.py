"""GD806's fix lines for the device that filled: shared memory only when the failing path is shared memory; the
checkpoint levers by the names of the framework that ran."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# the shared-memory files of DataLoader workers and NCCL (torch/csrc/CudaIPCTypes, MapAllocator: /torch_<pid>_...)
_SHM_SIGNS = ("/dev/shm", "/torch_", "shared memory")


def _ray_session(hit: Hit) -> Diagnosis:
    """Ray's own warning that its session folder's disk is nearly full (file_system_monitor.cc): Ray writes its logs
    there and spills objects to it, and creating an object fails once a spill finds no room."""
    g = hit.groups
    msg = (f"Ray's session folder {g['ray_path'][:120]} is over {g['pct']}% full ({g['avail']} GB left of "
           f"{g['cap']} GB, read from Ray's line): Ray writes its logs there and spills objects to that disk, and "
           f"creating an object fails once a spill finds no room; the workers' errors after it follow from it.")
    return Diagnosis(message=msg, fix=(
        "Give Ray a larger disk for its temporary folder (`ray start --temp-dir=/path/on/a/big/disk` or "
        "ray.init(_temp_dir=...)) and free the current one (old session_* folders under /tmp/ray).",
        "Check it with `df -h /tmp`; the object store's spilling can also be pointed elsewhere "
        "(object_spilling_config).",), title="Ray's session disk is nearly full",
        verify="`df -h` of Ray's temporary folder shows room and the workers run past the step where they stopped")


def disk_full_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    if hits[0].groups.get("ray_path") and len({h.groups.get("ray_path") is None for h in hits}) == 1:
        return _ray_session(hits[0])
    said = " ".join(h.evidence.text + " " + (h.exc.message if h.exc else "") for h in hits)
    shm = any(s in said for s in _SHM_SIGNS)
    framework = ctx.framework()[0]
    fix = ["Free space on the output disk (`df -h <output_dir>`; delete old checkpoint folders), or write to a larger "
           "disk."]
    if framework == "verl":  # verl/trainer/config/ppo_trainer.yaml: trainer.max_actor_ckpt_to_keep (0.3+)
        fix.append("Keep fewer checkpoints: trainer.max_actor_ckpt_to_keep=2 (and trainer.max_critic_ckpt_to_keep "
                   "with a critic); a larger trainer.save_freq saves less often.")
    else:
        fix.append("Keep fewer and smaller checkpoints: save_total_limit (ms-swift --save_total_limit, transformers/trl "
                   "save_total_limit=2) and save_only_model (no optimizer state).")
    if shm:
        fix.append("Shared memory (`/torch_...`, `/dev/shm`): start the container with a larger --shm-size (e.g. "
                   "16g), or set dataloader_num_workers 0.")
    fix.append("Resume from the last checkpoint that is complete (the one being written when the disk filled is cut).")
    return Diagnosis(fix=tuple(fix))
