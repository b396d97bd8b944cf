"""GD415: several CPU processes without --use_cpu true, from the real run's own lines (edge cases)."""
from __future__ import annotations

from conftest import FIXTURES
from test_hang import ids, run

REAL = FIXTURES / "real-ddp2-cpu-gloo-shape-error-child-failed" / "log.txt"
RANK = "[INFO:swift] rank: 0, local_rank: 0, world_size: 2, local_world_size: 2\n"
CPU = "[INFO:swift] model_kwargs: {'device_map': 'cpu', 'dtype': torch.float32}\n"
TB = ("[rank1]: Traceback (most recent call last):\n"
      '[rank1]:   File "/v/lib/python3.11/site-packages/swift/rl_core/advantage.py", line 64, in compute_advantages\n'
      "[rank1]:     grouped = rewards.view(-1, K)\n"
      "[rank1]: RuntimeError: shape '[-1, 4]' is invalid for input of size 2\n")
CMD = "NPROC_PER_NODE=2 swift rlhf --rlhf_type grpo --num_generations 4 --per_device_train_batch_size 2"


def test_real_log_is_named():
    found = run(REAL.read_text(encoding="utf-8"))
    assert ids(found)[0] == "GD415"
    f = found[0]
    assert "2 processes" in f.message and "groups of 4" in f.message
    assert f.fix[0].startswith("Add --use_cpu true")
    assert "--per_device_train_batch_size 4" in f.fix[1]     # 2 ranks x 2 per rank, by hand


def test_fires_on_the_minimal_lines():
    assert "GD415" in ids(run(RANK + CPU + TB, command=CMD))


def test_not_with_use_cpu_true():
    assert "GD415" not in ids(run(RANK + CPU + TB, command=CMD + " --use_cpu true"))


def test_not_in_a_single_process():
    single = RANK.replace("world_size: 2", "world_size: 1").replace("local_world_size: 2", "local_world_size: 1")
    assert "GD415" not in ids(run(single + CPU + TB, command=CMD.replace("NPROC_PER_NODE=2 ", "")))


def test_not_on_gpu_model_load():
    gpu = CPU.replace("'cpu'", "'cuda:0'")
    assert "GD415" not in ids(run(RANK + gpu + TB, command=CMD))


def test_not_when_the_group_is_not_num_generations():
    assert "GD415" not in ids(run(RANK + CPU + TB, command=CMD.replace("--num_generations 4", "--num_generations 8")))
