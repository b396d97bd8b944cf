"""Distributed failures and hangs (GD301-GD399): NCCL / c10d timeouts and errors, torchrun's ChildFailedError,
host OOM kills, and logs that stop without an error (hang at start / mid-training, py-spy dumps)."""
from __future__ import annotations

import pytest
from conftest import REAL_SWIFT, feed_text, lines_of, run_text

from doctor.checks._units import duration
from doctor.checks.distributed._elastic import ElasticBlock
from doctor.checks.hang._progress import classify_frames
from doctor.engine import Session
from doctor.model import Role, Severity
from doctor.registry import find_rule, load_catalog

HEALTHY = REAL_SWIFT / "grpo_lora_healthy" / "log.txt"


def run(text: str, *, command: str | None = None, path: str = "t.log"):
    return run_text(text, command=command, path=path)


def ids(findings):
    return [f.rule_id for f in findings]


def by_id(findings, rid):
    return next(f for f in findings if f.rule_id == rid)


def healthy_lines() -> list[str]:
    return HEALTHY.read_bytes().decode("utf-8").split("\n")


# ----------------------------------------------------------------------------- NCCL watchdog
WRAPPED = (
    "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=4, OpTy\n"
    "pe=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.\n"
    "[rank3]:[E424 01:11:21.160815008 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, Numel\n"
    "Out=112, Timeout(ms)=1800000) ran for 1800011 milliseconds before timing out.\n"
)


def test_watchdog_joins_hard_wrapped_lines_and_reads_numbers():
    f = by_id(run(WRAPPED), "GD301")
    assert f.ranks == (2, 3)
    assert "BROADCAST" in f.message and "SeqNum=4" in f.message
    assert "30 min" in f.message and "never got past setup" in f.message
    assert "Rank(s) 0, 1 did not report" in f.message
    assert any("--ddp_timeout 3600" in x for x in f.fix)


def test_watchdog_late_seqnum_is_not_setup_and_world_size_names_missing_ranks():
    text = "".join(
        f"[rank{r}]:[E1105 ProcessGroupNCCL.cpp:616] [PG 0 (default_pg) Rank {r}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum=5213, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        f"600092 milliseconds before timing out.\n" for r in (0, 1, 2, 4, 5, 6))
    f = by_id(run(text, command="NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo"), "GD301")
    assert "never got past setup" not in f.message and "SeqNum 5213" in f.message
    assert "Rank(s) 3, 7 did not report" in f.message and "10 min" in f.message


def test_rank_error_is_root_and_timeouts_are_consequences():
    text = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/x/site-packages/swift/rl_core/advantage.py", line 64, in compute_advantages\n'
        "[rank1]:     grouped = rewards.view(-1, K)\n"
        "[rank1]: RuntimeError: shape '[-1, 4]' is invalid for input of size 2\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL("
        "SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800052 milliseconds "
        "before timing out.\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    )
    found = run(text)
    # ms-swift 4.6 rl_core/advantage.py groups rewards by K = num_generations: the structural rule GD996 names it
    assert found[0].rule_id == "GD996" and found[0].role == Role.root
    nccl = by_id(found, "GD301")
    assert nccl.role == Role.consequence
    assert "rank 1 raised `RuntimeError" in nccl.message
    assert "GD998" not in ids(found)  # the watchdog's c10::DistBackendError abort is not a native crash


# ----------------------------------------------------------------------------- ChildFailedError / host OOM
BLOCK = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
/x/swift/cli/rlhf.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-21_14:06:29
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 6917)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 6917
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-21_14:06:29
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : {code} (pid: 6916)
  error_file: <N/A>
  traceback : {tb}
============================================================
"""


def test_elastic_block_parser():
    b = ElasticBlock()
    text = BLOCK.replace("{code}", "-9").replace("{tb}", "Signal 9 (SIGKILL) received by PID 6916")
    for line in lines_of(text, "t"):
        b.feed(line)
    assert b.root.rank == 0 and b.root.exitcode == -9 and b.root.signal == "SIGKILL"
    assert [(f.rank, f.exitcode) for f in b.others()] == [(1, -15)]


def test_child_failed_exit_1_is_a_consequence_and_names_the_rank():
    text = BLOCK.replace("{code}", "1").replace("{tb}", "To enable traceback see: https://pytorch.org/docs")
    f = by_id(run(text), "GD307")
    assert f.category == "other" and "rank 0 as the first failure" in f.message and "exit code 1" in f.message
    assert "torchrun stopping the remaining ranks" in f.message


def test_exitcode_minus_9_without_traceback_is_host_oom_root():
    text = ("Train:   3%|3         | 12/400 [09:41<5:13:02, 48.41s/it]\n"
            + BLOCK.replace("{code}", "-9").replace("{tb}", "Signal 9 (SIGKILL) received by PID 6916"))
    found = run(text, command="NPROC_PER_NODE=2 swift rlhf --rlhf_type grpo --dataloader_num_workers 8 "
                              "--offload_optimizer true")
    assert found[0].rule_id == "GD310" and found[0].role == Role.root and found[0].ranks == (0,)
    assert by_id(found, "GD307").role == Role.consequence
    fix = " ".join(found[0].fix)
    assert "--dataloader_num_workers 8 x 2 ranks = 16" in fix and "--offload_optimizer true" in fix
    assert "after step 12" in fix
    assert not {"GD320", "GD321"} & set(ids(found))


def test_exitcode_minus_9_after_a_python_error_is_not_host_oom():
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/x/train.py", line 3, in <module>\n'
            "[rank0]: ValueError: boom\n"
            + BLOCK.replace("{code}", "-9").replace("{tb}", "Signal 9 (SIGKILL) received by PID 6916"))
    assert "GD310" not in ids(run(text))


def test_bash_killed_line_and_dataloader_kill():
    f = run("bash: line 1:  6707 Killed                  python3 train.py\n")[0]
    assert f.rule_id == "GD310" and f.category == "host-oom-killed"
    f = run("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.\n")[0]
    assert f.rule_id == "GD310" and "DataLoader worker" in f.message
    assert "GD310" not in ids(run("[INFO:swift] Killed the idle engine process\n"))


# ----------------------------------------------------------------------------- hangs
@pytest.mark.parametrize("cut,rid,phase", [
    (701, "GD320", "GRPO trainer init"),
    (705, "GD320", "first training step"),
    (709, "GD321", "after training step 3 of 6"),
    (711, "GD321", "stuck either in that save or in the next step"),
])
def test_truncated_healthy_log_is_a_hang_in_the_right_phase(cut, rid, phase):
    lines = healthy_lines()
    found = run("\n".join(lines[:cut]) + "\n")
    assert ids(found)[0] == rid, ids(found)
    f = found[0]
    assert f.severity == Severity.warning
    assert phase in f.message and "If the process is still running" in f.message


def test_hang_rules_share_one_progress_fed_once():
    s = Session(load_catalog())
    start, mid = (next(r for r in s.rules if r.meta.id == rid) for rid in ("GD320", "GD321"))
    assert start.p is mid.p
    # exactly one of them is fed the log's progress; both take the live watchdog's HangReport (watch)
    from doctor.signals import HangReport, LogLine
    assert sorted(LogLine in r.kinds for r in (start, mid)) == [False, True]
    assert all(HangReport in r.kinds for r in (start, mid))
    fed = []
    real = start.p.feed
    start.p.feed = lambda signal: (fed.append(type(signal).__name__), real(signal))
    feed_text(s, "[INFO:swift] run sh: `swift rlhf`\n", "t.log")
    assert fed == ["LogLine"]  # one parse for both rules


@pytest.mark.parametrize("cut,rid", [(705, "GD320"), (709, "GD321")])
def test_hang_rule_alone_keeps_its_own_progress(cut, rid):
    # a session with only one of the two rules (--select) feeds it and finds the same hang
    text = "\n".join(healthy_lines()[:cut]) + "\n"
    alone = Session([find_rule(rid)])
    feed_text(alone, text, "t.log")
    assert [f.rule_id for f in alone.finish()] == [rid]
    assert [f for f in run(text) if f.rule_id == rid] == [f for f in alone.finish() if f.rule_id == rid]


def test_complete_healthy_log_is_not_a_hang():
    found = run("\n".join(healthy_lines()))
    assert not {"GD320", "GD321"} & set(ids(found))


def test_log_ending_in_a_traceback_is_not_a_hang():
    lines = healthy_lines()[:709]
    lines += ["Traceback (most recent call last):", '  File "/x/plugin.py", line 9, in __call__',
              "ZeroDivisionError: division by zero"]
    assert not {"GD320", "GD321"} & set(ids(run("\n".join(lines) + "\n")))


def test_excerpts_that_are_not_training_logs_do_not_hang():
    assert ids(run("ValueError: something went wrong\n")) != ["GD320"]
    metrics = "".join("{'loss': '0.01', 'grad_norm': '0.2', 'reward': '0.5', 'global_step/max_steps': '%d/100'}\n" % k
                      for k in range(1, 6))
    assert not {"GD320", "GD321"} & set(ids(run(metrics)))
    # swift lines and metric dicts but no trainer start (a pasted excerpt): no hang
    assert not {"GD320", "GD321"} & set(ids(run("[INFO:swift] swift.__version__: 4.6.0\n" + metrics)))


def test_server_connect_socket_timeout_is_an_error_hang_at_start():
    text = ("[INFO:swift] Setting args.remove_unused_columns: False\n"
            "[INFO:swift] Start connecting to vLLM server\n"
            "[E526 03:50:39.898939042 socket.cpp:1028] [c10d] The client socket has timed out after 300000ms while "
            "trying to connect to (127.0.0.1, 51216).\n")
    found = run(text)
    assert found[0].rule_id == "GD320" and found[0].severity == Severity.error and found[0].role == Role.root
    assert "51216" in found[0].message and "300 s" in found[0].message
    assert by_id(found, "GD305").role == Role.consequence


def test_seed04_vl72b_zero3_offload_tp8_hang_in_vllm_init_names_the_flags():
    """seeds/04: Qwen2.5-VL-72B, LoRA, ZeRO-3 offload, tensor_parallel_size 8, hangs at start."""
    cmd = ("NPROC_PER_NODE=8 MAX_PIXELS=1003520 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-VL-72B-Instruct "
           "--train_type lora --use_vllm true --vllm_mode colocate --tensor_parallel_size 8 "
           "--vllm_gpu_memory_utilization 0.7 --deepspeed zero3_offload --per_device_train_batch_size 1")
    text = ("[INFO:swift] rank: 0, local_rank: 0, world_size: 8, local_world_size: 8\n"
            "[INFO:swift] model_parameter_info: PeftModelForCausalLM: 73000.0000M Params (100.0000M Trainable "
            "[0.1370%]), 0.0000M Buffers.\n"
            "INFO 05-20 12:00:00 [llm_engine.py:232] Initializing a V1 LLM engine (v0.7.3) with config: model=x\n")
    f = run(text, command=cmd)[0]
    assert f.rule_id == "GD320" and "vLLM engine init" in f.message
    fix = " ".join(f.fix)
    assert "vllm_gpu_memory_utilization is 0.7" in fix
    assert "--tensor_parallel_size 8" in fix
    assert "--deepspeed zero3_offload" in fix and "--move_model_batches" in fix
    assert "MAX_PIXELS=1003520" in fix


def test_pyspy_collective_wait_is_hang_mid_training():
    text = ('Thread 0x7F3A (active): "MainThread"\n'
            "    wait (torch/distributed/distributed_c10d.py:2501)\n"
            "    all_reduce (torch/distributed/distributed_c10d.py:2498)\n"
            "    training_step (swift/rlhf_trainers/grpo_trainer.py:1832)\n"
            'Thread 61130 (idle): "QueueFeederThread"\n'
            "    wait (threading.py:327)\n")
    f = run(text)[0]
    assert f.rule_id == "GD321" and "MainThread" in f.message and "collective" in f.message
    assert any("--ddp_timeout 1800" in x for x in f.fix)


def test_keyboard_interrupt_after_a_step_reports_where_it_waited():
    lines = ["[INFO:swift] The logging file will be saved in: /o/logging.jsonl",
             "Train:   5%|5         | 5/100 [05:00<1:35:00, 60.00s/it]",
             "Traceback (most recent call last):",
             '  File "/x/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce',
             "    work.wait()",
             "KeyboardInterrupt"]
    f = run("\n".join(lines) + "\n")[0]
    assert f.rule_id == "GD321" and "interrupted by hand" in f.message and "collective" in f.message


def test_classify_frames():
    assert classify_frames([("get", "queue.py", 1)]) == "queue-wait"
    assert classify_frames([("__call__", "/plugin/my_orm.py", 3), ("x", "queue.py", 1)]) == "reward"
    assert classify_frames([("generate", "vllm/entrypoints/llm.py", 3)]) == "vllm-generate"
    assert duration(1800) == "30 min" and duration(18000000) == "208.3 days" and duration(7200) == "2 h"
    assert duration(119) == "119 s" and duration(216) == "3.6 min" and duration(19440) == "5.4 h"


def test_error_mentioning_vllm_after_trainer_init_is_not_a_hang():
    text = ("[INFO:swift] model_parameter_info: PeftModelForCausalLM: 7635.8016M Params (20.1851M Trainable "
            "[0.2643%]), 0.0000M Buffers.\n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/x/site-packages/swift/rlhf_trainers/rollout_mixin.py", line 433, in prepare_rollout\n'
            "[rank0]:     raise ValueError(\n"
            "[rank0]: ValueError: vllm_tensor_parallel_size (4) must divide world size (6) evenly.\n")
    assert not {"GD320", "GD321"} & set(ids(run(text)))


def test_log_stopping_after_connected_points_at_the_group_port():
    text = ("[INFO:swift] Setting args.remove_unused_columns: False\n"
            "[INFO:swift] Start connecting to vLLM server\n"
            "[INFO:swift] Connected to vLLM server\n")
    f = run(text, command="swift rlhf --rlhf_type grpo --use_vllm true --vllm_mode server "
                          "--vllm_server_host 10.0.0.5 --vllm_server_group_port 51300")[0]
    assert f.rule_id == "GD320" and f.severity == Severity.warning
    assert "weight-sync NCCL group" in f.message and any("port 51300+i" in x for x in f.fix)


def test_a_hang_inside_the_reward_function_is_not_restarted():
    """A real H200 run whose reward plugin stops answering after step 2 (fixtures/logs/real-gpu-reward-plugin-hang):
    the py-spy stack puts the main thread in JudgeThatStopsAnswering.__call__; a restart would stop at the same
    call, so the verdict is stop, with no command (before: restart with the run's own command)."""
    from pathlib import Path

    from doctor.analyze import analyze
    case = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real-gpu-reward-plugin-hang"
    f = analyze([str(case)]).findings[0]
    assert f.rule_id == "GD321" and "plugin_hang.py:17 in JudgeThatStopsAnswering.__call__" in f.message
    assert f.action == "stop" and not f.command
    assert "fix the reward function first" in f.message


def test_a_log_whose_end_is_only_a_servers_idle_polling_stops_at_the_runs_last_own_line():
    from conftest import lines_of

    from doctor.checks.hang.endings import ending_of
    text = ("(MegatronTrainRayActor pid=19450) [2026-03-24 06:36:50] timer.py:24 - Timer actor_train start\n"
            + "".join(f'(SGLangEngine pid=17467) [2026-03-24 06:37:{s:02d}] INFO:     172.17.0.11:41646 - "GET /metrics '
                      f'HTTP/1.1" 200 OK\n' for s in (7, 22, 37)))
    e = ending_of(list(lines_of(text)), 0)
    assert e is not None and e.kind == "heartbeat" and "Timer actor_train start" in e.detail
    assert "then only 3 line(s) of a server's idle polling or stats" in e.numbers
    assert "for 47 s by their timestamps" in e.numbers
    # one poll is not a tail of polling
    assert ending_of(list(lines_of(text.split("\n", 2)[0] + "\n" + text.split("\n")[1] + "\n")), 0) is None


def _phase_after(text: str) -> str | None:
    """The phase the live watchdog reads (doctor/live/hangs.py) once ``text`` was fed."""
    s = Session(load_catalog())
    feed_text(s, text)
    return next(r for r in s.rules if r.meta.id == "GD320")._last_phase()[0]


def test_trl_log_in_the_trainers_bare_bar_is_in_its_first_step():
    # transformers' ProgressCallback draws the training bar with no description; after the model's weights have
    # loaded (its own `Loading weights` bar) a bare 0/N bar is that bar: watch then applies the first-step limit
    text = ("Loading weights:   0%|          | 0/26 [00:00<?, ?it/s]Loading weights: 100%|##########| 26/26 "
            "[00:00<00:00, 8399.59it/s]\n"
            "  0%|          | 0/4 [00:00<?, ?it/s][transformers] Passing `generation_config` together with "
            "generation-related arguments=({'disable_compile'}) is deprecated.\n")
    assert _phase_after(text) == "first-step"
    # before any weights loaded, a bare bar is anyone's progress (a download, a preprocessing script)
    assert _phase_after("  0%|          | 0/4 [00:00<?, ?it/s]\n") != "first-step"


def test_store_master_waiting_for_clients_names_the_nodes_that_never_joined():
    # torchrun's static rendezvous: node 0 hosts the TCPStore and waits for every node's agent
    # (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py); only 1 of 2 came
    f = by_id(run("torch.distributed.DistStoreError: Timed out after 16 seconds waiting for clients. 1/2 clients "
                  "joined.\n", command="NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 swift rlhf --rlhf_type grpo"),
              "GD305")
    assert "1 of 2" in f.message and "was not listening" not in f.message, f.message


# a CUDA fault inside a vLLM engine process: vLLM's own lines around the crash place it (vllm-engine-error), a bare
# crash line stays the native crash it is (other). Lines in the formats of vLLM 0.7 (logger tag "file.py:N]",
# worker/model_runner_base.py's input dump) and 0.8+ (the "(EngineCore_0 pid=N)" process prefix)
_ENGINE_CRASH = (
    "INFO 02-19 12:14:40 model_runner_base.py:120] Writing input of failed execution to /tmp/err_execute_model_input.pkl...\n"
    "[rank0]:[E219 12:14:43.351647859 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] Process group watchdog "
    "thread terminated with exception: CUDA error: an illegal memory access was encountered\n")


@pytest.mark.parametrize("text,category", [
    (_ENGINE_CRASH, "vllm-engine-error"),
    ("(EngineCore_0 pid=713790) terminate called after throwing an instance of 'c10::Error'\n"
     "(EngineCore_0 pid=713790)   what():  CUDA error: an illegal memory access was encountered\n", "vllm-engine-error"),
    ("terminate called after throwing an instance of 'c10::Error'\n"
     "  what():  CUDA error: an illegal memory access was encountered\n", "other"),
])
def test_a_native_crash_is_placed_by_the_process_around_it(text, category):
    [f] = [f for f in run_text(text) if f.rule_id == "GD998"]
    assert f.category == category
    assert ("It happened in the vLLM engine" in f.message) == (category == "vllm-engine-error")


def test_a_store_never_reached_before_any_step_is_a_hang_at_start_and_a_broken_one_mid_run_is_not():
    """GD305 files a connection that was never made, with no training step logged, under hang-at-start (the processes
    never met; the store's timeout only ends the wait); a connection reset after steps stays a distributed failure."""
    never = run("[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to "
                "(10.0.0.1, 29400).\n")
    assert by_id(never, "GD305").category == "hang-at-start"
    rows = "".join("{'loss': 0.1, 'grad_norm': 0.5, 'reward': 0.3, 'global_step/max_steps': '%d/100'}\n" % i
                   for i in range(1, 4))
    broken = run(rows + "[E socket.cpp:957] [c10d] The client socket has timed out after 60s while trying to "
                        "connect to (10.0.0.1, 29400).\n")
    assert by_id(broken, "GD305").category == "nccl-timeout"
    reset = run("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did "
                "the remote server shutdown or crash?\n")
    assert by_id(reset, "GD305").category == "nccl-timeout"


def test_a_rollout_server_never_reached_before_any_step_is_a_hang_at_start():
    line = ("ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after 120.0 seconds. Make sure the server "
            "is running by running `trl vllm-serve`.\n")
    assert by_id(run(line), "GD235").category == "hang-at-start"
    rows = "".join("{'loss': 0.1, 'grad_norm': 0.5, 'reward': 0.3, 'global_step/max_steps': '%d/100'}\n" % i
                   for i in range(1, 4))
    assert by_id(run(rows + line), "GD235").category == "vllm-engine-error"  # the server went away mid-run
_SIGNAL = ("WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers\n"
           "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2920926 closing signal SIGHUP\n"
           "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2920830 got signal: 1\n")
_CMD = "torchrun --nproc_per_node=1 train.py --bf16 True --output_dir out --per_device_train_batch_size 1"


def test_a_sighup_after_words_that_say_steps_ran_is_a_stop_from_outside_not_a_start_up_hang():
    # fixtures/devlogs58 6130 (an RRHF issue): "training ran normally at first, but after several steps" above the
    # launcher's SIGHUP lines, no step row pasted
    said = "单卡A100训练\n训练刚开始可以正常进行，但是若干个step之后会出现\n" + _SIGNAL
    f = run_text(said, command=_CMD)[0]
    assert (f.rule_id, f.category, f.title) == ("GD320", "other", "Stopped by SIGHUP from outside")
    assert "The paste's words at line 2 (`若干个step之后`) place the stop after training had begun" in f.message
    assert f.fix[0].startswith("Run the job detached from the terminal (nohup, tmux or screen")
    assert f.verify.startswith("the next run is not stopped by SIGHUP")
    # the same lines with nothing that says steps ran: a stop before the first step, as the log shows it
    f = run_text("单卡A100训练\n开始训练\n" + _SIGNAL, command=_CMD)[0]
    assert (f.rule_id, f.category) == ("GD320", "hang-at-start")
