"""`grpo-doctor watch`'s short path (doctor/live/command.py): the same options, defaults and values as the typer
command, and typer for everything the short path does not take."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import ROOT

from doctor.live import command


def _typer_params() -> dict[str, tuple[str, object, bool, bool]]:
    """option -> (parameter name, default, is_flag, multiple) of the typer command."""
    from doctor.cli import app
    cmd = typer.main.get_command(app).commands["watch"]   # type: ignore[attr-defined]
    out = {}
    for p in cmd.params:
        if p.param_type_name != "option":
            continue
        default = p.default.value if hasattr(p.default, "value") else p.default
        for opt in p.opts:
            out[opt] = (p.name, default, bool(getattr(p, "is_flag", False)), bool(p.multiple))
    return out


def test_the_short_path_knows_every_option_of_the_typer_command_with_its_default():
    typer_opts = _typer_params()
    assert set(command.OPTIONS) == set(typer_opts)
    for opt, (name, kind, default) in command.OPTIONS.items():
        t_name, t_default, t_flag, t_multiple = typer_opts[opt]
        assert name == t_name, opt
        assert (kind == "flag") == t_flag, opt
        assert (kind == "list") == t_multiple, opt
        assert default == t_default, opt


@pytest.mark.parametrize("args", [
    ["--on-hang", "stop", "--grace", "2", "--phase-timeout", "first-step=20", "--phase-timeout", "eval=30",
     "--run-dir", "out", "--no-preflight", "--", "swift", "rlhf", "--output_dir", "x"],
    ["--drain=0", "--gpu-interval=0", "--hang-timeout=30.5", "--keep-launches", "2", "--", "bash", "train.sh"],
    ["--", "python", "-c", "print(1)", "--", "--grace", "x"],
    ["--notify-cmd", "echo", "--debug", "--force", "--on-failure", "resume", "--max-restarts", "5", "--", "true"],
])
def test_the_short_path_reads_what_typer_reads(args, monkeypatch):
    got = command.parse(args)
    assert got is not None
    seen = {}
    monkeypatch.setattr(command, "run", lambda cmd, **kw: seen.update(kw, command=cmd) or 0)
    from typer.testing import CliRunner

    from doctor.cli import app
    res = CliRunner().invoke(app, ["watch", *args])
    assert res.exit_code == 0, res.output
    seen = {k: (str(v) if isinstance(v, Path) else v) for k, v in seen.items()}
    assert seen == got


@pytest.mark.parametrize("args", [
    [], ["--", ], ["--help"], ["-h", "--", "true"], ["--bogus", "--", "true"], ["--grace", "soon", "--", "true"],
    ["--on-hang", "never", "--", "true"], ["--force=yes", "--", "true"], ["--grace", "--", "true"],
    ["swift", "rlhf"], ["--run-dir=", "--", "true"], ["--keep-launches", "1.5", "--", "true"],
])
def test_anything_else_goes_to_typer(args):
    assert command.parse(args) is None


def test_the_short_path_does_not_import_typer_and_says_a_usage_error_as_typer_does(tmp_path):
    code = ("import sys, atexit; atexit.register(lambda: print('typer imported:', 'typer' in sys.modules, "
            "file=sys.stderr)); sys.argv[0] = 'grpo-doctor'; from doctor.cli import main; main()")
    p = subprocess.run([sys.executable, "-c", code, "watch", "--no-preflight", "--gpu-interval", "0", "--drain", "0",
                        "--run-dir", str(tmp_path / "run"), "--", "true"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "typer imported: False" in p.stderr
    for via in ("short", "typer"):
        extra = ["--force=1"] if via == "typer" else []   # an option the short path leaves to typer
        bad = subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--grace", "-1", *extra, "--", "true"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        if via == "short":
            assert bad.returncode == 2 and bad.stderr.strip() == "grpo-doctor: --grace must be >= 0", bad.stderr
        else:
            assert bad.returncode == 2 and "--force" in bad.stderr, bad.stderr
