"""Issue 17 point 20: analyze refuses nvidia-smi dmon/pmon/topo outputs (and nvidia-smi's own errors) as
preflight --gpu-snapshot does, instead of reading them as a log and saying 'No problem found'; inside a run
directory they are listed as skipped. `analyze -` on a terminal says that it reads standard input."""
from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.sources.inputs import InputError

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "fixtures" / "gpu"
OTHER = sorted(p.name for p in GPU.glob("*.txt") if p.name.startswith(("dmon-", "pmon-", "topo-")))
SNAPSHOTS = ["table-01-a100x8-mixed-idle-busy-595.txt", "query-01-h100-single-load-590.txt",
             "csvgpu-01-h100-allfields-load-590.txt"]


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, check=False, timeout=120,
                          cwd=ROOT, **kw)


def test_fixtures_cover_dmon_pmon_topo():
    assert {n.split("-")[0] for n in OTHER} == {"dmon", "pmon", "topo"} and len(OTHER) >= 9


@pytest.mark.parametrize("name", OTHER + ["csvgpu-11-invalid-field-error-595.txt"])
def test_analyze_refuses_like_preflight(name):
    rel = f"fixtures/gpu/{name}"
    a = _cli("analyze", rel)
    p = _cli("preflight", "--gpu-snapshot", rel, "--", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "x")
    assert a.returncode == 2 and p.returncode == 2
    assert b"No problem found" not in a.stdout and a.stdout == b""
    err = a.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err == p.stderr.decode().strip().splitlines()[-1]  # the same one line as preflight's
    assert err.startswith(f"grpo-doctor: {rel}: ") and "nvidia-smi" in err


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_real_snapshots_are_still_read(name):
    rep = analyze([str(GPU / name)])
    assert [i.kind for i in rep.inputs] == ["gpu"]


def test_in_a_run_directory_they_are_skipped_not_read(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GPU / "dmon-01-h100-load-590.txt", run / "dmon.txt")
    shutil.copy(GPU / "topo-01-a100x8-nv12-4nics.txt", run / "topo.log")
    (run / "train.log").write_text("ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    rep = analyze([str(run)])
    kinds = {Path(i.path).name: (i.kind, i.note) for i in rep.inputs}
    assert kinds["train.log"] == ("log", "")
    assert kinds["dmon.txt"][0] == "skipped" and "nvidia-smi dmon" in kinds["dmon.txt"][1]
    assert kinds["topo.log"][0] == "skipped" and "nvidia-smi topo" in kinds["topo.log"][1]
    assert rep.findings and rep.findings[0].rule_id == "GD101"


def test_a_log_that_starts_like_a_comment_is_still_a_log(tmp_path):
    f = tmp_path / "x.log"
    f.write_text("# gpu run notes\nValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    assert analyze([str(f)]).findings[0].rule_id == "GD101"
    with pytest.raises(InputError):
        analyze([str(GPU / OTHER[0])])


def test_stdin_on_a_terminal_says_it_is_reading():
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([sys.executable, "-m", "doctor.cli", "analyze", "-", "-f", "json"], stdin=slave,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        os.close(slave)
        os.write(master, b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n\x04")
        out, err = p.communicate(timeout=120)
    finally:
        os.close(master)
    assert err.decode().splitlines()[0] == "grpo-doctor: reading standard input (Ctrl-D to end)"
    assert p.returncode == 1 and b"GD101" in out


def test_piped_stdin_says_nothing():
    p = _cli("analyze", "-", "-f", "json",
             input=b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    assert p.returncode == 1 and b"reading standard input" not in p.stderr


def test_a_table_under_an_issues_words_is_a_paste_read_as_a_log(tmp_path):
    # fixtures/devlogs49/5207: an issue's title and template answers above a pasted nvidia-smi table
    table = (GPU / "table-06-rtxpro6000x4-gpu1-lost-unknown-error-610.txt").read_text()
    assert [i.kind for i in analyze([str(GPU / "table-06-rtxpro6000x4-gpu1-lost-unknown-error-610.txt")]).inputs] \
        == ["gpu"]   # nvidia-smi's own "Unable to determine the device handle" line above its table
    paste = tmp_path / "issue.txt"
    paste.write_text("[Bug] Merged model produces garbage output after `save_pretrained_merged`\n## Description\n"
                     "3. Number GPUs used, use `nvidia-smi`\n" + table)
    rep = analyze([str(paste)])
    assert [i.kind for i in rep.inputs] == ["log"]
    assert rep.findings and rep.findings[0].category == "output-degenerate"
