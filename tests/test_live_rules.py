"""The hang watchdog with an injected clock, and the live rules (hang: GD320/GD321 from the watchdog; GD906; the GPU samples of GD502/GD504) fed with samples (GD905 and more sample cases: rules/*/cases.toml)."""
from __future__ import annotations

import pytest

from doctor.engine import Session
from doctor.live import actions
from doctor.live.watchdogs import HangWatchdog, Limits
from doctor.registry import find_rule
from doctor.signals import DiskTick, Gpu, GpuTick

GIB = 1024 ** 3


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_startup_limit_then_fires_once():
    c = Clock()
    d = HangWatchdog(Limits(startup=60), c)
    c.t += 59
    assert d.check() is None
    d.output()          # before the first step any output is progress
    c.t += 60
    assert d.check() is None
    c.t += 0.5          # one poll later than the limit
    ev = d.check()
    assert ev is not None and ev.phase == "startup" and ev.silent_s == pytest.approx(60.5)
    assert d.check() is None  # reported once
    assert d.progress("x") is True  # progress after a report: resumed, re-armed
    c.t += 61
    assert d.check() is not None


def test_output_is_not_progress_after_the_first_step():
    c = Clock()
    d = HangWatchdog(Limits(steady=100), c)
    d.step(1)
    c.t += 90
    d.output()
    c.t += 20
    assert d.check() is not None  # 110 s since step 1, the warning lines did not count


def test_steady_limit_calibrates_from_slowest_step_with_floor():
    c = Clock()
    d = HangWatchdog(Limits(steady_floor=300, steady_factor=5), c)
    d.step(1)
    for dt in (100, 120, 80):
        c.t += dt
        d.step(d.steps + 1)
    assert d.slowest == 120
    assert d.limit() == (600, "5 x slowest step 120.0 s")
    c2 = Clock()
    d2 = HangWatchdog(Limits(steady_floor=300, steady_factor=5), c2)
    d2.step(1)
    c2.t += 10
    d2.step(2)
    assert d2.limit()[0] == 300  # 5 x 10 s is below the floor
    c.t += 599
    assert d.check() is None
    c.t += 2
    ev = d.check()
    assert ev.phase == "steady" and ev.steps == 4


def test_phase_limits_and_overrides():
    c = Clock()
    lim = Limits()
    lim.set("checkpoint-save", 42)
    d = HangWatchdog(lim, c)
    d.step(3)
    d.set_phase("checkpoint-save")
    assert d.limit()[0] == 42
    d.set_phase("vllm-init")
    assert d.limit()[0] == 1200
    with pytest.raises(ValueError):
        lim.set("nap", 3)


def test_checkpoint_save_limit_is_bounded_by_the_step_limit():
    """Without --phase-timeout checkpoint-save, a save may be silent for 3 x the step limit (the --hang-timeout or the
    calibrated one), never more than 1800 s; before, it was 1800 s whatever --hang-timeout said."""
    c = Clock()
    d = HangWatchdog(Limits(steady=30), c)
    d.step(2)
    d.set_phase("checkpoint-save")
    assert d.limit() == (90, "3 x --hang-timeout")
    d2 = HangWatchdog(Limits(steady_floor=300, steady_factor=5), c)   # calibrated: the floor, 300 s
    d2.step(1)
    c.t += 10
    d2.step(2)
    d2.set_phase("checkpoint-save")
    assert d2.limit()[0] == 900 and "the step limit (floor 300 s" in d2.limit()[1]
    d3 = HangWatchdog(Limits(steady=1200), c)
    d3.step(1)
    d3.set_phase("checkpoint-save")
    assert d3.limit()[0] == 1800     # the cap
    c.t += 91
    assert d.check() is not None and d.check() is None   # fired once


def _session_with(*ids):
    return Session([find_rule(i) for i in ids])


def _finish(s, rid):
    return [f for f in s.finish() if f.rule_id == rid]


def test_gpu_idle_with_memory_held():
    s = _session_with("GD903")  # the former id of the live check selects the merged rule
    assert [r.meta.id for r in s.rules] == ["GD504"]
    for t in range(0, 400, 10):
        s.emit(GpuTick(t, (Gpu(0, 0.0, 40 * GIB, 80 * GIB), Gpu(1, 95.0, 40 * GIB, 80 * GIB))))
    f, = _finish(s, "GD504")
    assert "GPU 0 (390 s" in f.message and "GPU 1" not in f.message and f.category == "hang-mid-training"
    assert "py-spy dump --pid <pid> of each rank" in f.fix[0]  # the live fix, not "take two more snapshots"
    s2 = _session_with("GD504")
    for t in range(0, 400, 10):  # idle but empty (not started yet), or busy half the time
        s2.emit(GpuTick(t, (Gpu(0, 0.0, 0, 80 * GIB), Gpu(1, 0.0 if t % 200 else 90.0, 40 * GIB, 80 * GIB))))
    assert _finish(s2, "GD504") == []


def test_gpu_memory_near_full_needs_three_samples():
    s = _session_with("GD502")
    s.run.add_command("swift rlhf --rlhf_type grpo --vllm_gpu_memory_utilization 0.9")
    for t, used in enumerate((79.0, 79.5, 60.0, 79.0, 79.2)):
        s.emit(GpuTick(t, (Gpu(0, 50.0, int(used * GIB), 80 * GIB),)))
    assert _finish(s, "GD502") == []
    s.emit(GpuTick(9, (Gpu(0, 50.0, int(79.9 * GIB), 80 * GIB),)))
    f, = _finish(s, "GD502")
    assert "79.9 GiB of 80.0 GiB" in f.message and "0.9" in f.fix[0]


def _near_full(command: str | None):
    s = _session_with("GD502")
    if command:
        s.run.add_command(command)
    for t in range(3):
        s.emit(GpuTick(t, (Gpu(0, 50.0, int(79.9 * GIB), 80 * GIB),)))
    f, = _finish(s, "GD502")
    return f


def test_gpu_memory_near_full_blames_vllm_only_in_runs_with_vllm():
    """A run without vLLM (trl's default use_vllm False, said on the command line) gets the training levers alone;
    a run that does not say gets them first and vLLM's as a condition (before, vLLM's levers came first always)."""
    no_vllm = _near_full("swift rlhf --rlhf_type grpo --use_vllm false --per_device_train_batch_size 8")
    assert not any("vllm" in line.lower() for line in no_vllm.fix)
    assert no_vllm.fix[0].startswith("Training: --deepspeed zero3")
    unknown = _near_full(None)
    assert unknown.fix[0].startswith("Training:") and unknown.fix[-1].startswith("If vLLM is colocated")
    colocate = _near_full("swift rlhf --rlhf_type grpo --use_vllm true --vllm_mode colocate")
    assert colocate.fix[0].startswith("Colocated vLLM: lower --vllm_gpu_memory_utilization")


def test_disk_too_small_for_next_checkpoint():
    s = _session_with("GD906")
    s.emit(DiskTick(1, "/out", 20 * GIB, 15 * GIB, "size of the last checkpoint"))
    assert _finish(s, "GD906") == []
    s.emit(DiskTick(2, "/out", 10 * GIB, 15 * GIB, "size of the last checkpoint"))
    f, = _finish(s, "GD906")
    assert "10.0 GiB free" in f.message and "5.0 GiB" in f.fix[0] and f.category == "disk-full"


def test_live_rules_silent_in_analyze():
    from conftest import FIXTURES

    from doctor.analyze import analyze
    rep = analyze([str(FIXTURES / "real-hang-cut-after-step-3")])
    assert not [f for f in rep.findings if f.rule_id.startswith("GD80")]


DUMP_RANK = """Process {pid}: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread {pid} (idle): "MainThread"
{frames}
"""
COLLECTIVE = "    wait (torch/distributed/distributed_c10d.py:4200)\n    barrier (torch/distributed/distributed_c10d.py:4100)\n    train (trainer.py:10)"
REWARD = "    wait_for_judge (my_plugin.py:12)\n    __call__ (my_plugin.py:20)\n    _compute_rewards_per_func (swift/rlhf_trainers/grpo_trainer.py:900)"


def _stack(pid, rank, frames):
    text = DUMP_RANK.format(pid=pid, frames=frames)
    threads = actions.parse_dump(text, pid)
    where = actions.classify(threads[0][2])
    top = " <- ".join(f"{fn} ({p.rsplit('/', 1)[-1]}:{ln})" for fn, p, ln in threads[0][2][:3])
    return actions.Stack(pid, rank, text, threads, where, top)


def test_outlier_rank_and_where_from_stacks():
    stacks = [_stack(100 + r, r, REWARD if r == 3 else COLLECTIVE) for r in range(4)]
    assert [s.where for s in stacks] == ["collective", "collective", "collective", "reward"]
    out = actions.outlier(stacks)
    assert out.startswith("Rank 3 is the outlier: it is inside a reward function (wait_for_judge (my_plugin.py:12)")
    assert "ranks 0, 1, 2 are waiting in an NCCL" in out
    key, text = actions.where_stopped(stacks)
    assert key == "reward-function" and "wait_for_judge" in text


def test_thread_without_name_is_main_thread_by_pid():
    text = "Process 55: python x.py\n\nThread 55 (idle)\n    hold (x.py:3)\n    <module> (x.py:9)\n"
    (name, state, frames), = actions.parse_dump(text, 55)
    assert name == "MainThread" and state == "idle" and frames[0] == ("hold", "x.py", 3)


def test_memory_another_job_holds_under_watch():
    """Under watch, a GPU process that is not the run's (neither the child nor a descendant) holding 1 GiB or more in
    three samples in a row is GD503 (before, watch's samples carried no process list and GD503 never fired live);
    the run's own processes and a one-off sample are not."""
    s = _session_with("GD503")
    own = frozenset({100, 101})
    for t in range(5):   # the run's own processes only
        s.emit(GpuTick(t, (Gpu(0, 90.0, 60 * GIB, 80 * GIB, ((100, 50 * GIB), (101, 9 * GIB))),), True, own))
    s.emit(GpuTick(6, (Gpu(0, 90.0, 70 * GIB, 80 * GIB, ((100, 50 * GIB), (4242, 10 * GIB))),), True, own))
    assert _finish(s, "GD503") == []    # one sample: a process passing by
    for t in (7, 8):
        s.emit(GpuTick(t, (Gpu(0, 90.0, 70 * GIB, 80 * GIB, ((100, 50 * GIB), (4242, 10 * GIB))),), True, own))
    f, = _finish(s, "GD503")
    assert "GPU 0: process 4242 10.0 GiB" in f.message and f.category == "gpu-underutilized"


def test_live_hang_in_the_reward_function_is_stopped_not_restarted():
    """watch's stacks put the stall inside the user's reward function: a restart would stop at the same call, so the
    verdict is stop (the fault scoreboard's real runs got restart); a hang elsewhere keeps the rule's action."""
    from doctor.signals import HangReport

    def report(where):
        return HangReport(30.0, "steady", "training", 31.0, 30.0, "--hang-timeout", 3, "step 3", "step 3/10",
                          where, "inside a reward function" if where else "", None, stopped=True)
    s = _session_with("GD321")
    s.emit(report("reward-function"))
    f, = _finish(s, "GD321")
    assert f.action == "stop" and not f.command and "fix the reward function first" in f.message
    s2 = _session_with("GD321")
    s2.emit(report("nccl-collective"))
    g, = _finish(s2, "GD321")
    assert g.action != "stop"


def test_gpu_memory_near_full_in_server_mode_does_not_say_colocated():
    f = _near_full("swift rlhf --rlhf_type grpo --use_vllm true --vllm_mode server --vllm_gpu_memory_utilization 0.9")
    assert f.fix[0].startswith("The vLLM rollout server reserves --vllm_gpu_memory_utilization 0.9")
    assert not any("Colocated" in line for line in f.fix)
