"""GD806's fix lines for the device that filled: shared memory only when the failing path is shared memory; the
checkpoint levers by the names of the framework that ran."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# the shared-memory files of DataLoader workers and NCCL (torch/csrc/CudaIPCTypes, MapAllocator: /torch_<pid>_...)
_SHM_SIGNS = ("/dev/shm", "/torch_", "shared memory")


def disk_full_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
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
