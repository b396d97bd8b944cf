"""Hyperscan is a default dependency where a wheel exists (else the pure-Python matcher, silently); a long
analysis shows progress on stderr when stderr is a terminal, never when it is piped and never for json/sarif;
`--help` does not import rich (start-up)."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from conftest import ROOT, drain_pty
from packaging.markers import Marker
from packaging.requirements import Requirement
from test_packaging import PROJECT

LOG = ROOT / "fixtures" / "logs" / "real-batch-div-grad-accum" / "log.txt"


def _hyperscan() -> Requirement:
    return next(Requirement(d) for d in PROJECT["dependencies"] if d.startswith("hyperscan"))


@pytest.mark.parametrize("system,machine,py,want", [
    ("linux", "x86_64", "3.12", True), ("linux", "aarch64", "3.12", True), ("linux", "aarch64", "3.14", False),
    ("darwin", "arm64", "3.13", True), ("darwin", "x86_64", "3.11", True), ("darwin", "x86_64", "3.13", False),
    ("linux", "ppc64le", "3.11", False), ("win32", "AMD64", "3.11", False),
])
def test_hyperscan_is_a_default_dependency_where_a_wheel_exists(system, machine, py, want):
    marker: Marker = _hyperscan().marker
    env = {"sys_platform": system, "platform_machine": machine, "python_version": py,
           "platform_python_implementation": "CPython"}
    assert marker.evaluate(env) is want


def _run_on_pty(*args: str) -> tuple[int, bytes, bytes]:
    """stderr on a pseudo-terminal, stdout piped; progress shown after 0 s instead of ~1 s."""
    master, slave = pty.openpty()
    env = {**os.environ, "GRPO_DOCTOR_PROGRESS_AFTER": "0", "TERM": "xterm"}
    p = subprocess.Popen([sys.executable, "-m", "doctor.cli", *args], stdout=subprocess.PIPE, stderr=slave,
                         cwd=ROOT, env=env)
    os.close(slave)
    err = drain_pty(master)
    out = p.stdout.read()
    p.wait(timeout=120)
    os.close(master)
    return p.returncode, out, err


def test_progress_on_a_terminal_only():
    code, out, err = _run_on_pty("analyze", str(LOG))
    assert code == 1 and b"GD101" in out
    assert b"analysing" in err, err
    assert b"analysing" not in out and b"\x1b" not in out
    code, out, err = _run_on_pty("analyze", str(LOG), "--format", "json")
    assert code == 1 and err == b"", err
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(LOG)], check=False, capture_output=True,
                       cwd=ROOT, env={**os.environ, "GRPO_DOCTOR_PROGRESS_AFTER": "0"})
    assert p.returncode == 1 and p.stderr == b""


def test_help_does_not_import_rich_progress():
    code = ("import sys, runpy; sys.argv = ['grpo-doctor', '--help']\n"
            "try:\n    runpy.run_module('doctor.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('rich')))")
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT)
    assert p.stdout.strip().splitlines()[-1] == "[]", p.stdout


def test_a_long_input_gets_a_bar_with_bytes_and_an_eta(tmp_path):
    """The inputs' size is known: the terminal shows bytes done / total and an ETA (rich's bar), never on stdout.
    The log is a real healthy run repeated to ~25 MB (runs appended: each one read as its own)."""
    import re
    body = (ROOT / "fixtures" / "logs" / "real-grpo-lora-healthy" / "log.txt").read_bytes()
    big = tmp_path / "train.log"
    with open(big, "wb") as f:
        for _ in range(25 * 2**20 // len(body) + 1):
            f.write(body)
    size_mb = big.stat().st_size / 1e6
    code, out, err = _run_on_pty("analyze", str(big))
    assert code in (0, 1) and b"\x1b" not in out
    shown = re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]", b"", err).decode(errors="replace")
    bars = re.findall(r"([\d.]+)/([\d.]+) MB eta", shown)
    assert bars, shown[-500:]
    assert {float(total) for _, total in bars} == {round(size_mb, 1)}
    assert max(float(done) for done, _ in bars) == round(size_mb, 1)
