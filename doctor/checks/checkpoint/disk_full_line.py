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


# the code that was writing, by the frames of the exception: the datasets library's cache (arrow_writer.py, the
# fingerprinted cache files of map/filter; datasets' builder.py when a dataset is downloaded and prepared) and
# huggingface_hub's downloads (file_download.py) fill the Hugging Face cache, not the output folder
_DATA_CACHE = ("datasets/arrow_writer.py", "datasets/arrow_dataset.py", "datasets/builder.py")
_HUB_CACHE = ("huggingface_hub/file_download.py", "modelscope/hub/")


def _cache_full(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    # the exception the hit is (a pattern's hit on its line: the parsed exception printed there)
    seqs = {h.seq for h in hits}
    excs = [h.exc for h in hits if h.exc is not None] + [e for e in ctx.exceptions if e.seq in seqs]
    paths = [f.path.replace("\\", "/") for e in excs for f in e.frames]
    if any(p for p in paths if any(w in p for w in _DATA_CACHE)):
        return Diagnosis(
            message="A write of the datasets library failed with no space left: it was writing the dataset's cache "
                    "files (its Arrow files for map/filter or a prepared download, read from the frames), which live "
                    "in the Hugging Face datasets cache (~/.cache/huggingface/datasets unless HF_DATASETS_CACHE or "
                    "HF_HOME says otherwise), not in the run's output folder.",
            fix=("Point the datasets cache at a disk with room before the run starts (export HF_DATASETS_CACHE="
                 "/path/on/a/big/disk, or HF_HOME for every Hugging Face cache), and free the old one (`du -sh "
                 "~/.cache/huggingface/datasets`; `huggingface-cli delete-cache` for the hub's).",
                 "Preprocess with fewer copies: one num_proc pass writes a shard per process, and every changed "
                 "argument of map writes a new cache file."),
            title="The dataset's cache filled its disk",
            verify="`df -h` of the datasets cache's disk shows room and the dataset's preprocessing finishes")
    if any(p for p in paths if any(w in p for w in _HUB_CACHE)):
        return Diagnosis(
            message="A download failed with no space left: the hub client was writing the model or dataset files "
                    "into its cache (~/.cache/huggingface/hub unless HF_HUB_CACHE or HF_HOME says otherwise; "
                    "ModelScope's under MODELSCOPE_CACHE), read from the frames.",
            fix=("Point the cache at a disk with room (export HF_HOME=/path/on/a/big/disk, or MODELSCOPE_CACHE for "
                 "ModelScope downloads) and free the old one (`huggingface-cli delete-cache`).",),
            title="The download cache filled its disk",
            verify="the download completes and the model loads")
    return None


def disk_full_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    if hits[0].groups.get("ray_path") and len({h.groups.get("ray_path") is None for h in hits}) == 1:
        return _ray_session(hits[0])
    cache = _cache_full(hits, ctx)
    if cache is not None:
        return cache
    said = " ".join(h.evidence.text + " " + (h.exc.message if h.exc else "") for h in hits)
    shm = any(s in said for s in _SHM_SIGNS)
    framework = ctx.framework()[0]
    fix = ["Free space on the output disk (`df -h <output_dir>`; delete old checkpoint folders), or write to a larger "
           "disk."]
    if framework == "verl":  # verl/trainer/config/ppo_trainer.yaml: trainer.max_actor_ckpt_to_keep (0.3+)
        fix.append("Keep fewer checkpoints: trainer.max_actor_ckpt_to_keep=2 (and trainer.max_critic_ckpt_to_keep "
                   "with a critic); a larger trainer.save_freq saves less often.")
    elif framework == "easyr1":  # EasyR1 examples/config.yaml: trainer.save_limit (-1 keeps all), trainer.save_freq
        fix.append("Keep fewer checkpoints: trainer.save_limit=2; a larger trainer.save_freq saves less often.")
    else:
        fix.append("Keep fewer and smaller checkpoints: save_total_limit (ms-swift --save_total_limit, transformers/trl "
                   "save_total_limit=2) and save_only_model (no optimizer state).")
    if shm:
        fix.append("Shared memory (`/torch_...`, `/dev/shm`): start the container with a larger --shm-size (e.g. "
                   "16g), or set dataloader_num_workers 0.")
    fix.append("Resume from the last checkpoint that is complete (the one being written when the disk filled is cut).")
    return Diagnosis(fix=tuple(fix))
