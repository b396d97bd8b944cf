"""A CUDA OOM whose limit is not the work itself: a per-process cap, or memory other processes hold.

The messages follow torch's own format (c10/cuda/CUDACachingAllocator.cpp, torch 2.1+: ``allowed_info`` is
"<size> allowed; " when torch.cuda.set_per_process_memory_fraction set a cap; ``reportProcessMemoryInfo`` prints
"Process <pid> has <size> memory in use. " for each other process and "Including non-PyTorch memory, this process
has <size> memory in use. " for this one); the numbers are those of OOMs published in public reports of that
format. Before, both got the generic ZeRO/LoRA advice and "together they exceed the card".
"""
from __future__ import annotations

from pathlib import Path

from doctor.analyze import analyze

FRAMES = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 1204, in compute_loss
    per_token_logps = self._get_per_token_logps(model, input_ids, attention_mask, logits_to_keep)
"""
TAIL = ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
        "avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n")
CAP = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total capacity of 79.19 "
       "GiB of which 2.07 GiB is free. Including non-PyTorch memory, this process has 77.11 GiB memory in use. 75.23 "
       "GiB allowed; Of the allocated memory 74.23 GiB is allocated by PyTorch, and 943.54 MiB is reserved by PyTorch "
       "but unallocated. ")
OTHER = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 25.96 GiB. GPU 4 has a total capacity of 79.18 "
         "GiB of which 23.04 GiB is free. Process 7478 has 4.08 GiB memory in use. Including non-PyTorch memory, this "
         "process has 52.02 GiB memory in use. Of the allocated memory 45.89 GiB is allocated by PyTorch, and 3.01 GiB "
         "is reserved by PyTorch but unallocated. ")
# torch before the split named this process "Process <pid>" too: nobody else is on the GPU here
OLD_SELF = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacty of 14.75 "
            "GiB of which 1.66 GiB is free. Process 414660 has 13.09 GiB memory in use. Of the allocated memory 10.09 "
            "GiB is allocated by PyTorch, and 1.92 GiB is reserved by PyTorch but unallocated. ")


def _oom(tmp_path: Path, line: str):
    log = tmp_path / "train.log"
    log.write_text(FRAMES + line + TAIL)
    rep = analyze([str(log)])
    f = rep.findings[0]
    assert f.rule_id == "GD201"
    return f


def test_a_per_process_cap_is_the_limit(tmp_path):
    f = _oom(tmp_path, CAP)
    assert "capped at 75.2 GiB (95% of the card's 79.2 GiB)" in f.message
    assert "the cap, not the card, is the limit" in f.message
    assert "together they exceed the card" not in f.message
    assert f.fix[0].startswith("Raise or remove the per-process memory fraction (the cap is 75.2 GiB")
    # the claim checker's hedge (fragmentation, a limit, or another process) is replaced by what torch printed
    assert "a per-process cap of 75.23 GiB: the process reached its cap, not the card" in f.message
    assert "or another process taking the memory" not in f.message


def test_another_process_holding_the_gpu_is_named_and_freed_first(tmp_path):
    f = _oom(tmp_path, OTHER)
    # 23.04 free + 4.08 held by process 7478 >= 25.96 requested: freeing it makes the request fit (checked by hand)
    assert "Other processes hold 4.08 GiB of GPU 4 (process 7478 4.08 GiB): without them the 26.0 GiB requested " \
           "would have fit (23.0 GiB free)." in f.message
    assert f.fix[0].startswith("Free GPU 4: process 7478 holds 4.08 GiB")
    assert "together they exceed the card" not in f.message


def test_old_torch_wording_names_no_other_process(tmp_path):
    f = _oom(tmp_path, OLD_SELF)
    assert "Other processes hold" not in f.message and not f.fix[0].startswith("Free GPU")
    assert "capped at" not in f.message


# torch 2.1-2.3 wording: both processes as "Process <pid>"; this one's PyTorch memory (0.58 + 0.02 GiB reserved) fits
# only process 449657's 1022 MiB (0.6 <= 1.0 <= 0.6 + 2), so process 441650's 30.5 GiB is another process's
OLD_TWO = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 260.00 MiB. GPU 0 has a total capacity of "
           "31.60 GiB of which 87.44 MiB is free. Process 441650 has 30.51 GiB memory in use. Process 449657 has "
           "1022.00 MiB memory in use. Of the allocated memory 594.01 MiB is allocated by PyTorch, and 19.99 MiB is "
           "reserved by PyTorch but unallocated. ")


def test_old_torch_wording_tells_this_process_by_its_pytorch_memory(tmp_path):
    f = _oom(tmp_path, OLD_TWO)
    assert "Other processes hold 30.5 GiB of GPU 0 (process 441650 30.5 GiB) (computed: this process is process " \
           "449657" in f.message
    assert f.fix[0].startswith("Free GPU 0: process 441650 holds 30.5 GiB")
    assert "together they exceed the card" not in f.message


def test_old_torch_wording_with_two_processes_that_could_be_this_one_names_neither(tmp_path):
    both = OLD_TWO.replace("Process 441650 has 30.51 GiB", "Process 441650 has 1.50 GiB")
    f = _oom(tmp_path, both)
    assert "Other processes hold" not in f.message


_TRL_OOM = (
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "/opt/conda/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 820, in _get_per_token_logps\n'
    "[rank2]:     logits = model(input_ids=input_ids, attention_mask=attention_mask).logits\n"
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 2 has a total capacity of 79.10 "
    "GiB of which 3.12 GiB is free. Including non-PyTorch memory, this process has 75.97 GiB memory in use. Of the "
    "allocated memory 70.11 GiB is allocated by PyTorch, and 4.39 GiB is reserved by PyTorch but unallocated.\n")


def _oom_report(tmp_path: Path, command: str) -> str:
    log = tmp_path / "log.txt"
    log.write_text(command + "\n" + _TRL_OOM)
    f = next(f for f in analyze([str(log)]).findings if f.rule_id == "GD201")
    return " ".join((f.message, *f.fix))


def test_trls_engine_is_on_the_training_gpu_only_when_the_run_colocates_it(tmp_path):
    # trl puts its vLLM engine on a GPU of its own (<= 0.15, vllm_device) or in a `trl vllm-serve` server (>= 0.16,
    # 0.18's vllm_mode default): with --use_vllm alone the training GPU's OOM is not the engine's share
    cmd = "accelerate launch --num_processes 4 train_grpo.py --per_device_train_batch_size 8 --use_vllm"
    alone = _oom_report(tmp_path, cmd)
    assert "colocated vLLM engine shares this GPU" not in alone and "vllm_gpu_memory_utilization" not in alone
    both = _oom_report(tmp_path, cmd + " --vllm_mode colocate")
    assert "colocated vLLM engine shares this GPU" in both and "vllm_gpu_memory_utilization=" in both


def test_an_oom_in_verls_policy_update_is_training_even_under_its_workerdict_prefix(tmp_path):
    # verl's Ray WorkerDict hosts the actor, the rollout and the reference model: its prefix says nothing of the side;
    # the frame does (workers/actor/dp_actor.py update_policy, the backward pass)
    log = tmp_path / "log.txt"
    log.write_text(
        "(WorkerDict pid=12345) Traceback (most recent call last):\n"
        '(WorkerDict pid=12345)   File "/opt/verl/verl/workers/actor/dp_actor.py", line 300, in update_policy\n'
        "(WorkerDict pid=12345)     loss.backward()\n"
        "(WorkerDict pid=12345) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 2.12 GiB is free. Including non-PyTorch memory, this process has 76.97 GiB "
        "memory in use. Of the allocated memory 60.11 GiB is allocated by PyTorch, and 14.39 GiB is reserved by PyTorch "
        "but unallocated.\n")
    top = analyze([str(log)]).findings[0]
    assert (top.rule_id, top.category) == ("GD201", "cuda-oom")
    assert "during the policy update" in top.message and "vLLM rollout engine" not in top.title
