"""The conventions users know from ruff, pre-commit and friends: -h, -V, -q, --color auto|always|never
(FORCE_COLOR when piped, NO_COLOR only when non-empty), shell completion, usage lines that read PATHS... and
-- COMMAND..., examples in every command's help, INFO counted in the summary, wrapping with a hanging indent."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT
from test_cli import BATCH_LOG, run

import doctor
from doctor.console import color_wanted

INFO_LOG = ROOT / "fixtures" / "logs" / "dev-018-loss-zero-is-expected"
COMMANDS = ("analyze", "preflight", "check-ckpt", "watch", "explain", "rules", "mcp")


def env_run(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], check=False, capture_output=True, cwd=ROOT,
                          env={**base, **env}, timeout=120)


@pytest.mark.parametrize("cmd", [(), *((c,) for c in COMMANDS)])
def test_dash_h(cmd):
    p = run(*cmd, "-h")
    assert p.returncode == 0 and p.stdout.decode().startswith("Usage: grpo-doctor"), p.stderr


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag):
    p = run(flag)
    assert p.returncode == 0 and p.stdout.decode().strip() == f"grpo-doctor {doctor.__version__}"


def test_usage_lines_and_examples():
    want = {"analyze": "analyze [OPTIONS] PATHS...", "check-ckpt": "check-ckpt [OPTIONS] PATHS...",
            "watch": "watch [OPTIONS] -- COMMAND...", "preflight": "preflight [OPTIONS] -- COMMAND..."}
    for cmd in COMMANDS:
        out = run(cmd, "--help").stdout.decode()
        usage = out.splitlines()[0]
        assert "{" not in usage, usage
        if cmd in want:
            assert want[cmd] in usage, usage
        assert "Examples:" in out and f"grpo-doctor {cmd} " in out.split("Examples:", 1)[1], cmd


def test_shell_completion_is_offered():
    out = run("--help").stdout.decode()
    assert "--install-completion" in out and "--show-completion" in out


def test_quiet():
    p = run("analyze", "-q", str(BATCH_LOG))
    lines = p.stdout.decode().splitlines()
    assert p.returncode == 1 and len(lines) == 1 and "GD101" in lines[0] and "error" in lines[0].lower()
    ok = ROOT / "fixtures" / "logs" / "real-grpo-lora-healthy" / "log.txt"
    p = run("analyze", "--quiet", str(ok), "--fail-on", "error")
    assert p.returncode == 0 and "No problem" not in p.stdout.decode() and "grpo-doctor " not in p.stdout.decode()


def test_color_modes_when_piped():
    assert b"\x1b[" in env_run("analyze", str(BATCH_LOG), "--color", "always").stdout
    assert b"\x1b[" not in env_run("analyze", str(BATCH_LOG), "--color", "never", FORCE_COLOR="1").stdout
    assert b"\x1b[" not in env_run("analyze", str(BATCH_LOG)).stdout
    assert b"\x1b[" in env_run("analyze", str(BATCH_LOG), FORCE_COLOR="1").stdout
    assert b"\x1b[" not in env_run("analyze", str(BATCH_LOG), "--format", "json", FORCE_COLOR="1").stdout


def test_no_color_only_when_non_empty():
    assert color_wanted("auto", tty=True, env={"NO_COLOR": ""}) is True
    assert color_wanted("auto", tty=True, env={"NO_COLOR": "1"}) is False
    assert color_wanted("auto", tty=False, env={"FORCE_COLOR": "1"}) is True
    assert color_wanted("auto", tty=False, env={"FORCE_COLOR": ""}) is False
    assert color_wanted("always", tty=False, env={"NO_COLOR": "1"}) is True
    assert color_wanted("never", tty=True, env={"FORCE_COLOR": "1"}) is False


def test_summary_counts_info():
    out = run("analyze", str(INFO_LOG)).stdout.decode()
    assert re.search(r"0 error\(s\), 0 warning\(s\), 1 info", out), out


def test_wraps_with_a_hanging_indent_at_the_terminal_width():
    out = env_run("analyze", str(BATCH_LOG), COLUMNS="70").stdout.decode()
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 70, max(lines, key=len)
    start = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    body = [line for line in lines[start + 1:] if line.strip()]
    end = next(i for i, line in enumerate(body) if not line.startswith(" "))  # the summary line
    assert end > 3 and all(line.startswith("   ") for line in body[:end])
    bullets = [i for i, line in enumerate(body[:end]) if line.lstrip().startswith("•")]
    assert bullets and body[bullets[0] + 1].startswith("       ")  # a fix step's second line under its text
