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
    assert _first(_DS.format(code=-9)).rule_id == "GD310"


def test_deepspeed_launcher_steps_aside_for_the_rank_own_exception():
    text = "Traceback (most recent call last):\n  File \"fix.py\", line 3, in <module>\n    1/0\n" \
           "ZeroDivisionError: division by zero\n" + _DS.format(code=1)
    assert all(f.rule_id != "GD312" for f in run_text(text))
