"""Issue 20 point 3: hang evidence that names the culprit. Identical stacks grouped across ranks; the call the
majority waits in and the ranks elsewhere; real py-spy dumps of real stuck processes and recorded dumps in py-spy's
text format (`py-spy dump --pid N`: a Process/Python header, then `Thread TID (state): "name"` and one indented
`function (file:line)` per frame, innermost first). The NCCL flight recorder's file dump is a pickle: never read."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from watchutil import CHILD, run_watch

from doctor.live.actions import Stack, _focus, classify, parse_dump
from doctor.live.stackgroups import culprit, flight_recorder_note, grouped_text
from doctor.live.supervisor import EXIT_STOPPED
from doctor.live.watchdogs import Limits

# recorded in py-spy 0.4's text format; paths and line numbers as torch 2.x and trl print them (written for this test)
WAITING = """Process {pid}: /usr/bin/python3.11 -u swift/cli/rlhf.py --rlhf_type grpo
Python v3.11.9 (/usr/bin/python3.11)

Thread {pid} (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    wrapper (torch/distributed/c10d_logger.py:83)
    _get_per_token_logps (trl/trainer/grpo_trainer.py:{line})
    training_step (transformers/trainer.py:3741)
    train (transformers/trainer.py:2480)
Thread 4321 (idle): "pt_autograd_0"
    wait (threading.py:327)
"""
ELSEWHERE = """Process {pid}: /usr/bin/python3.11 -u swift/cli/rlhf.py --rlhf_type grpo
Python v3.11.9 (/usr/bin/python3.11)

Thread {pid} (active): "MainThread"
    judge (plugin/reward.py:41)
    __call__ (plugin/reward.py:77)
    _calculate_rewards (trl/trainer/grpo_trainer.py:1102)
    training_step (transformers/trainer.py:3741)
"""


def _stack(pid: int, rank: int | None, text: str) -> Stack:
    threads = parse_dump(text, pid)
    focus = _focus(threads)
    top = " <- ".join(f"{f} ({os.path.basename(p)}:{ln})" for f, p, ln in focus[2][:3])
    return Stack(pid, rank, text, threads, classify(focus[2]), top)


def test_recorded_dumps_majority_collective_and_the_rank_elsewhere():
    stacks = [_stack(100 + r, r, (ELSEWHERE if r == 2 else WAITING).format(pid=100 + r, line=880 + r % 2))
              for r in range(4)]
    text = culprit(stacks)
    assert text == ("3 of 4 processes (ranks 0, 1, 3) wait in all_reduce (distributed_c10d.py:2501); "
                    "rank 2 is elsewhere: judge (reward.py:41)")
    g = grouped_text(stacks)
    assert g.startswith("3 x ranks 0, 1, 3:") and "1 x rank 2:" in g


def test_recorded_dumps_all_in_one_collective_and_no_majority():
    same = [_stack(10 + r, r, WAITING.format(pid=10 + r, line=880)) for r in range(2)]
    assert culprit(same) == "All 2 processes (ranks 0, 1) wait in all_reduce (distributed_c10d.py:2501)"
    split = [_stack(10, 0, WAITING.format(pid=10, line=880)), _stack(11, 1, ELSEWHERE.format(pid=11))]
    assert culprit(split).startswith("No majority: rank 0 in all_reduce")
    assert culprit(same[:1]) is None


def test_flight_recorder_is_a_pickle_and_not_read():
    assert flight_recorder_note({}) is None and flight_recorder_note({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}) is None
    assert "pickle" in flight_recorder_note({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"})


@pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy is not installed")
def test_real_stuck_ranks_two_elsewhere_named(tmp_path):
    """Five real rank processes: 0, 2, 4 wait in barrier(), 1 and 3 are stuck in a reward function (two ranks
    elsewhere: the single-outlier rule says nothing, the grouping names both)."""
    launcher = str(Path(CHILD).parent / "fakedist" / "ranks.py")
    env = dict(os.environ, TORCH_NCCL_TRACE_BUFFER_SIZE="2000")
    r = run_watch(tmp_path, [], argv=[sys.executable, launcher, "5", "1,3"], limits=Limits(startup=8.0),
                  on_hang="stop", grace=1.0, poll=0.2, env=env)
    assert r.code == EXIT_STOPPED
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD320")
    if "ptrace is not permitted" in f["message"]:
        pytest.skip("py-spy may not attach here (ptrace)")
    assert "3 of 5 processes (ranks 0, 2, 4) wait in barrier (distributed_c10d.py:" in f["message"], f["message"]
    assert "ranks 1, 3 are elsewhere: my_reward_func (rank.py:" in f["message"]
    hang = Path(r.watch.run_dir, "grpo-doctor-hang-1.txt").read_text()
    assert "== stacks grouped ==" in hang and "3 x ranks 0, 2, 4:" in hang
    assert "flight recorder" in hang and "pickle" in hang
