"""preflight prints one command with every fix, and preflight accepts that command when it is fed back (a real
subprocess each way). Before, the misspelt flag's finding gave no command and the batch finding's command was
computed from the original one alone."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys

BASE = ["swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B-Instruct", "--reward_funcs", "accuracy"]


def _preflight(argv: list[str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", "preflight", "--swift-version", "4.6", *extra, "--",
                           *argv], capture_output=True, text=True, timeout=120)


def _one(argv: list[str]) -> dict:
    p = _preflight(argv, "--format", "json")
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)["run"]["preflight"]["relaunch"]


def test_misspelt_flag_and_batch_end_in_one_accepted_command():
    fixed = _one(BASE + ["--num_generation", "8", "--per_device_train_batch_size", "3",
                         "--gradient_accumulation_steps", "1"])
    assert fixed["accepted"] and fixed["remaining"] == []
    argv = shlex.split(fixed["command"])
    assert "--num_generations" in argv and "--num_generation" not in argv
    # 1 x 3 x 8 = 24 completions, a multiple of num_generations 8 (checked by hand)
    assert argv[argv.index("--gradient_accumulation_steps") + 1] == "8"
    back = _preflight(argv)
    assert back.returncode == 0, back.stdout
    assert "One command with every fix" not in back.stdout


def test_a_misspelt_flag_alone_is_respelled():
    fixed = _one(BASE + ["--num_generation", "8", "--per_device_train_batch_size", "8"])
    assert fixed["accepted"]
    assert fixed["command"].split().count("--num_generations") == 1
    assert _preflight(shlex.split(fixed["command"])).returncode == 0


def test_text_report_ends_with_the_command():
    p = _preflight(BASE + ["--num_generation", "8", "--per_device_train_batch_size", "3"])
    assert "One command with every fix (preflight accepts it):" in p.stdout


def test_analyze_joins_the_fixes_of_a_failed_run_into_one_command():
    """A real ms-swift run that failed on its batch (fixtures/logs/real-batch-div-grad-accum: per_device 2 x
    accumulation 3 = 6 completions for num_generations 4): analyze's report ends with the one command, and preflight
    accepts it fed back (2 x 2 = 4 whole groups, checked by hand)."""
    from pathlib import Path

    from doctor.analyze import analyze
    case = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real-batch-div-grad-accum"
    fixed = analyze([str(case)]).run["relaunch"]
    assert fixed["accepted"]
    argv = shlex.split(fixed["command"])
    assert argv[argv.index("--gradient_accumulation_steps") + 1] == "2"
    assert _preflight(argv).returncode == 0
