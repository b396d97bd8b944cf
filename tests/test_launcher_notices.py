"""Launchers' one-line reports of a failed child: what they tell (how it ended) and that the cause is elsewhere."""
from __future__ import annotations

from conftest import run_text

_DS = "[2024-06-14 01:51:54,038] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', 'fix.py', " \
      "'--local_rank=3'] exits with return code = {code}"


def _first(text: str):
    found = run_text(text)
    assert found, text
    return found[0]


def test_deepspeed_launcher_exit_status_names_how_the_rank_ended():
    f = _first(_DS.format(code=1))
    assert f.rule_id == "GD312"
    assert "exited with status 1" in f.message and "DeepSpeed's launcher" in f.message


def test_deepspeed_launcher_negative_code_is_the_signal():
    f = _first(_DS.format(code=-11))
    assert f.rule_id == "GD312"
    assert "SIGSEGV" in f.message and "was ended by a crash in native code" in f.message


def test_deepspeed_launcher_sigkill_stays_the_host_oom_rule():
    f = _first(_DS.format(code=-9))
    assert f.rule_id == "GD310"
    # no setting of this run to lower and no framework told: the confirmation, then a remedy in no framework's flag
    # names (never ms-swift's by default)
    assert f.fix[0].startswith("Confirm it: `dmesg -T")
    assert f.fix[1].startswith("Then give the job more host RAM") and "--" not in "".join(f.fix)
    # an ms-swift run's own levers replace it
    swift = _first("[INFO:swift] Loading the model using model_dir: /m\n" + _DS.format(code=-9))
    assert any(x.startswith("Host-RAM levers in ms-swift") for x in swift.fix)
    assert not any(x.startswith("Then give the job") for x in swift.fix)


def test_deepspeed_launcher_steps_aside_for_the_rank_own_exception():
    text = "Traceback (most recent call last):\n  File \"fix.py\", line 3, in <module>\n    1/0\n" \
           "ZeroDivisionError: division by zero\n" + _DS.format(code=1)
    assert all(f.rule_id != "GD312" for f in run_text(text))


def test_an_old_trl_cli_without_vllm_serve_says_which_release_has_it():
    f = _first("usage: trl [-h] {chat,dpo,env,grpo,kto,sft} ...\nTRL CLI: error: argument command: invalid choice: "
               "'vllm-serve' (choose from 'chat', 'dpo', 'env', 'grpo', 'kto', 'sft')")
    assert f.rule_id == "GD402" and "trl 0.16" in f.message
    assert f.fix[0].startswith("pip install -U 'trl[vllm]>=0.16'")


def test_argparse_unrecognized_and_missing_arguments_are_argument_errors():
    f = _first("vllm_serve.py: error: unrecognized arguments: --vllm_gpu_memory_utilization 0.8")
    assert f.rule_id == "GD402" and "`--vllm_gpu_memory_utilization 0.8`" in f.message
    f = _first("torchrun: error: the following arguments are required: training_script, training_script_args")
    assert f.rule_id == "GD402" and "training_script, training_script_args" in f.message


def test_remaining_argv_glued_to_its_raise_line_is_the_unknown_flag_and_names_ms_swift(tmp_path):
    from doctor.analyze import analyze
    log = tmp_path / "paste.txt"
    log.write_text("`raise ValueError(f'remaining_argv: {remaining_argv}'). ValueError: remaining_argv: "
                   "['--disable_custom_all_reduce', 'true']`\n")
    rep = analyze([str(log)])
    assert rep.findings[0].rule_id == "GD401"
    assert rep.run["framework"] == "ms-swift"
    assert any("--vllm_disable_custom_all_reduce" in x for x in rep.findings[0].fix)


def test_torch_multiprocessing_spawn_reports_a_childs_end_and_its_own_exception_comes_first():
    f = _first("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL")
    assert f.rule_id == "GD312" and "child process 1 was killed with SIGKILL" in f.message
    f = _first("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1")
    assert f.rule_id == "GD312" and "exited with status 1" in f.message
    wrapped = ("Traceback (most recent call last):\n"
               '  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 158, in join\n'
               "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
               "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
               "-- Process 0 terminated with the following error:\n"
               "Traceback (most recent call last):\n"
               '  File "/work/train.py", line 20, in main\n'
               '    x = batch["solution"]\n'
               "KeyError: 'solution'\n")
    found = run_text(wrapped)
    assert all(x.rule_id != "GD312" for x in found)
    assert "KeyError: 'solution'" in found[0].message
