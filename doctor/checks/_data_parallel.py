"""An out-of-memory inside torch's nn.DataParallel: one process driving every visible GPU. transformers' Trainer
wraps the model in it when one process sees several GPUs and no distributed launcher started it (trainer.py
``_wrap_model``: ``if self.args.n_gpu > 1 ...: model = nn.DataParallel(model)``, 4.x); DataParallel keeps the module
on its first device, copies it to the others at every forward (``replicate``) and gathers the outputs there
(torch/nn/parallel/data_parallel.py: output_device defaults to device_ids[0]), and torch's own docs recommend
DistributedDataParallel instead, even on one node."""
from __future__ import annotations

from .. import lazyre

# its frames: the wrapper's forward and the threads that run each replica
FRAMES = lazyre.compile(r"torch/nn/parallel/(?:data_parallel|parallel_apply|replicate)\.py$")
# the error a replica's thread raised, re-raised in the main thread (parallel_apply.py: ExceptionWrapper(where=f"in
# replica {i} on device {device}"), torch/_utils.py: "Caught {exc_type} {where}.")
CAUGHT = lazyre.compile(r"\bCaught \w+ in replica \d+ on device \d+")


def shown(frame_paths: list[str], text: str) -> bool:
    """The frames or the error's text show an nn.DataParallel step."""
    return bool(CAUGHT.search(text)) or any(FRAMES.search(p.replace(chr(92), "/")) for p in frame_paths)


USED_BY = "transformers' Trainer uses it when a plain `python` process sees several GPUs"
SAID = ("The step ran under torch's nn.DataParallel (its replicas, parallel_apply): one process drives every visible "
        "GPU, keeping the model and the gathered outputs on the first one and copying the model to the others at "
        "every step, so the first GPU holds more than any other and their memory together is never used as one. "
        + USED_BY[:1].upper()
        + USED_BY[1:] + ".")
FIX = ("Start one process per GPU (`torchrun --nproc_per_node <GPUs> train.py ...` or `accelerate launch "
       "train.py ...`): each GPU then holds its own copy and batch (DistributedDataParallel), with nothing gathered "
       "on the first; or set CUDA_VISIBLE_DEVICES to one GPU to train on it alone.")
