"""--format html goes to a file: on a terminal grpo-doctor-report.html (never a page of HTML on the screen), with -o
the named file; the path and the report's one line are said on stderr; --open opens it (real processes, a real
pseudo-terminal, a real browser command through $BROWSER)."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from conftest import drain_pty

LOG = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real-dataset-missing-solution-column" / "log.txt"
ENV = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))


def _run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], cwd=cwd, capture_output=True, timeout=120,
                          env=env or ENV)


def test_output_file_is_said_with_the_one_line(tmp_path):
    p = _run(["analyze", str(LOG), "--format", "html", "-o", "r.html"], tmp_path)
    assert p.returncode == 1 and p.stdout == b""
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert p.stderr.decode().strip() == ("grpo-doctor: report written to r.html · 1 error(s), 0 warning(s), 0 info; "
                                         "first: GD606 A reward function raised an exception while scoring "
                                         "completions")


def test_on_a_terminal_the_page_goes_to_the_default_file(tmp_path):
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(LOG), "--format", "html"],
                           cwd=tmp_path, stdout=slave, stderr=subprocess.PIPE, timeout=120, env=ENV)
        os.close(slave)
        shown = drain_pty(master)
    finally:
        os.close(master)
    assert p.returncode == 1
    assert b"<!DOCTYPE" not in shown   # no page of HTML on the screen
    assert (tmp_path / "grpo-doctor-report.html").read_text().startswith("<!DOCTYPE html>")
    assert b"report written to grpo-doctor-report.html" in p.stderr


def test_a_link_at_the_output_path_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "r.html").symlink_to(victim)
    p = _run(["analyze", str(LOG), "--format", "html", "-o", "r.html"], tmp_path)
    assert p.returncode == 1
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "r.html").is_symlink() and (tmp_path / "r.html").read_text().startswith("<!DOCTYPE")


def test_open_hands_the_file_to_the_browser(tmp_path):
    got = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {got}\n")
    browser.chmod(0o755)
    p = _run(["analyze", str(LOG), "--format", "html", "-o", "r.html", "--open"], tmp_path,
             env=dict(ENV, BROWSER=str(browser)))
    assert p.returncode == 1
    assert got.read_text().strip() == (tmp_path / "r.html").resolve().as_uri()
