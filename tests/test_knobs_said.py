"""A hang pasted with the environment switch that causes or cures it (doctor/checks/hang/knobs_said.py)."""
from __future__ import annotations

from conftest import run_text

from doctor.checks.hang.knobs_said import BLOCKING_FIX, P2P_FIX


def _fixes(text: str) -> str:
    found = [f for f in run_text(text) if f.category.startswith("hang")]
    assert found, [f.rule_id for f in run_text(text)]
    return " ".join(found[0].fix)


def test_a_hang_with_cuda_launch_blocking_set_names_the_switch():
    # NVIDIA/nccl#750's title and first sentence
    text = ("NCCL Hang with CUDA_LAUNCH_BLOCKING=1\n"
            "Our DDP training hangs at the first allreduce when we run it with CUDA_LAUNCH_BLOCKING=1.\n")
    assert BLOCKING_FIX in _fixes(text)


def test_a_hang_that_p2p_off_cures_names_the_p2p_transport():
    text = ("Training freezes with 4 or more GPUs on one node\n"
            "The model gets stuck when using 4 or more GPUs. I confirmed that it works by setting NCCL_P2P_DISABLE=1.\n")
    assert P2P_FIX in _fixes(text)


def test_a_hang_whose_run_already_disables_p2p_gets_no_p2p_story():
    # the switch set in the run that still hangs cures nothing: no word of success beside it
    text = ("Training hangs at the first step on one node\n"
            "I launch with NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO torchrun --nproc_per_node 4 train.py and it is stuck.\n")
    assert P2P_FIX not in _fixes(text)
