"""Issue 30 points 1, 2, 9, 10: hostile files and folders around every reader and writer (watch's reports, links out
of a checkpoint or a watched run folder, deep folders and overflowing numbers, unreadable logs). Points 3 and 12
(configuration, --gpu-mem): tests/test_hostile_config.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

BATCH = b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"


def cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real command, run from ``cwd`` (the worktree's package first on the path, wherever cwd is)."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=cwd or ROOT,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": path, **(env or {})}, timeout=timeout,
                          check=False)


def one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> str:
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2 and "Traceback" not in err and "internal error" not in err, (p.returncode, err)
    assert len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


# -------------------------------------------------------------------------------------------------- point 9

def _deep(root: Path, depth: int) -> Path:
    """``depth`` nested folders under root (made relative to each other: the full path stays short to create)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
    finally:
        os.close(fd)
    return root


def _undeep(root: Path, depth: int) -> None:
    """Remove what _deep made, deepest first and without recursion: pytest's own clean-up of old temporary folders
    recurses once per level, and a 990-level tree left behind would end a later session in RecursionError."""
    fds = [os.open(root, os.O_RDONLY)]
    try:
        for _ in range(depth):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        for parent in reversed(fds[:-1]):
            os.rmdir("d", dir_fd=parent)
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("cmd", ["analyze", "check-ckpt"])
def test_deep_folders_are_no_internal_error(tmp_path, cmd):
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(BATCH)
    ck = run / "checkpoint-1"
    ck.mkdir()
    (ck / "trainer_state.json").write_text('{"global_step": 1}')
    _deep(run, 990)
    try:
        p = cli(cmd, str(run))  # before: "internal error ...: RecursionError" (Python 3.11's os.walk recurses)
    finally:
        _undeep(run, 990)
    err = p.stderr.decode()
    assert p.returncode in (0, 1) and "internal error" not in err and "Traceback" not in err, err


def _safetensors(path: Path, header: str, data: bytes = b"\0" * 4) -> None:
    import struct
    raw = header.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize("header", [
    '{"w": {"dtype": "F4", "shape": [%d], "data_offsets": [0, 4]}}' % 10 ** 400,
    '{"w": {"dtype": "F16", "shape": [%d], "data_offsets": [0, 4]}}' % 10 ** 400,
    '{"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 1e999]}}',
    '{"w": {"dtype": "F16", "shape": [2], "data_offsets": [-4, 0]}}',
    '{"w": {"dtype": "F16", "shape": [-2, 2], "data_offsets": [0, 4]}}',
], ids=["f4-shape-10e400", "f16-shape-10e400", "offset-1e999", "negative-offset", "negative-shape"])
def test_overflowing_header_numbers_are_a_finding(tmp_path, header):
    ck = tmp_path / "checkpoint-1"
    ck.mkdir()
    _safetensors(ck / "model.safetensors", header)
    p = cli("check-ckpt", str(ck), "--format", "json")  # before: internal error (OverflowError) for two of them
    assert p.returncode == 1, p.stderr
    found = json.loads(p.stdout)["findings"]
    assert found[0]["rule_id"] == "GD802" and "model.safetensors" in found[0]["message"], found


SHARD = "model-00001-of-00001.safetensors"


@pytest.mark.parametrize("index", [
    '{"weight_map": ["a", "b"]}',
    '{"weight_map": {"w": ["x"], "v": 1}}',
    '{"metadata": {"total_size": 1e999}, "weight_map": {"w": "%s"}}' % SHARD,
    '{"metadata": {"total_size": %d}, "weight_map": {"w": "%s"}}' % (10 ** 400, SHARD),
], ids=["list", "non-string-shards", "total-size-inf", "total-size-10e400"])
def test_odd_weight_map_is_a_finding_or_nothing(tmp_path, index):
    ck = tmp_path / "checkpoint-1"
    ck.mkdir()
    _safetensors(ck / SHARD, '{"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}')
    (ck / "model.safetensors.index.json").write_text(index)
    p = cli("check-ckpt", str(ck), "--format", "json")  # before: internal error (TypeError: unhashable type)
    assert p.returncode in (0, 1) and b"internal error" not in p.stderr, p.stderr
    json.loads(p.stdout)


def test_unreadable_global_step_folder_is_no_internal_error(tmp_path, monkeypatch):
    """Root reads every folder, so the refusal is the kernel's answer made by hand for that one folder."""
    from typer.testing import CliRunner

    from doctor.cli import app
    ck = tmp_path / "checkpoint-1"
    (ck / "global_step1").mkdir(parents=True)
    (ck / "global_step1" / "mp_rank_00_model_states.pt").write_bytes(b"PK\x03\x04" + b"\0" * 64)
    (ck / "trainer_state.json").write_text('{"global_step": 1}')
    real = os.listdir

    def listdir(p="."):
        if str(p).endswith("global_step1"):
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)
    monkeypatch.setattr(os, "listdir", listdir)
    r = CliRunner().invoke(app, ["check-ckpt", str(ck)])  # before: internal error (PermissionError)
    assert r.exit_code in (0, 1, 2) and "internal error" not in r.output, r.output
    assert "global_step1" in r.output, r.output


# -------------------------------------------------------------------------------------------------- point 2

SECRET = "SECRET-TOKEN-abc123"


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "trainer_state.json", "adapter_config.json"])
def test_check_ckpt_does_not_follow_a_link_out_of_the_checkpoint(tmp_path, name):
    outside = tmp_path / "home" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text(SECRET + " password=hunter2 {\"a\": 1}\n")
    ck = tmp_path / "run" / "checkpoint-1"
    ck.mkdir(parents=True)
    if name != "trainer_state.json":
        (ck / "trainer_state.json").write_text('{"global_step": 1}')
    (ck / name).symlink_to(outside)
    for fmt in ("text", "json"):
        p = cli("check-ckpt", str(ck), "--format", fmt)
        # before: model.safetensors' first 8 bytes became "the header length field says 6,065,596,929,847,543,123"
        assert p.returncode in (0, 1), p.stderr
        out = p.stdout.decode()
        assert SECRET not in out and "6,065,596" not in out and "hunter2" not in out, out
    skipped = [i for i in json.loads(p.stdout)["inputs"] if i["kind"] == "skipped"]
    assert [Path(i["path"]).name for i in skipped] == [name] and "out of the checkpoint" in skipped[0]["note"], skipped


def test_check_ckpt_still_reads_a_link_inside_the_checkpoint(tmp_path):
    ck = tmp_path / "checkpoint-1"
    ck.mkdir()
    _safetensors(ck / "weights.bin.real", '{"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 8]}}')
    (ck / "model.safetensors").symlink_to(ck / "weights.bin.real")
    p = cli("check-ckpt", str(ck), "--format", "json")
    doc = json.loads(p.stdout)
    assert not [i for i in doc["inputs"] if i["kind"] == "skipped"]
    assert doc["findings"] and doc["findings"][0]["rule_id"] == "GD802"  # read: 8 bytes declared, 4 there


def test_watch_does_not_follow_links_out_of_the_run_folder(tmp_path):
    from watchutil import run_watch
    outside = tmp_path / "elsewhere"
    run = tmp_path / "run"
    # the child (a training script under watch) leaves links in its output folder to files elsewhere, made now
    child = (f"import os, json; os.makedirs({str(outside)!r}, exist_ok=True); os.makedirs({str(run)!r}, exist_ok=True)\n"
             f"open({str(outside / 'rows')!r}, 'w').write(json.dumps({{'loss': 1.0, 'tag': {SECRET!r}, "
             "'global_step/max_steps': '1/10'}) + '\\n')\n"
             f"open({str(outside / 'args')!r}, 'w').write(json.dumps({{'model': {SECRET!r}, 'num_generations': 8}}))\n"
             f"os.symlink({str(outside / 'rows')!r}, {str(run / 'logging.jsonl')!r})\n"
             f"os.symlink({str(outside / 'args')!r}, {str(run / 'args.json')!r})\n")
    script = tmp_path / "train.py"  # a file, so that the secret is not in the argv the report shows
    script.write_text(child)
    res = run_watch(tmp_path / "w", [], argv=[sys.executable, str(script)], run_dir=str(run))
    assert res.code == 0, res.doc
    text = json.dumps(res.report)
    assert SECRET not in text, text  # before: args.json's model and the row were read through the links
    skipped = {Path(i["path"]).name: i["note"] for i in res.report["inputs"] if i["kind"] == "skipped"}
    assert set(skipped) == {"logging.jsonl", "args.json"} and all("out of the run" in n for n in skipped.values())
    assert b"logging.jsonl" in res.doc and b"not followed" in res.doc


# -------------------------------------------------------------------------------------------------- point 1

def _watch_cli(run: Path, code: int = 3) -> subprocess.CompletedProcess:
    return cli("watch", "--no-preflight", "--gpu-interval", "0", "--drain", "0", "--run-dir", str(run), "--",
               sys.executable, "-c", f"import sys; print('step'); sys.exit({code})")


def test_watch_html_report_replaces_a_planted_link_and_never_writes_through_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    run = tmp_path / "run"
    run.mkdir()
    for name in ("grpo-doctor-report.html", "grpo-doctor-report.json", "grpo-doctor-console.log"):
        (run / name).symlink_to(victim)  # a copied or shared output folder with links in it
    p = _watch_cli(run)
    assert p.returncode == 3, p.stderr
    assert victim.read_text() == "the user's own file\n"  # before: overwritten with the HTML page
    page = run / "grpo-doctor-report.html"
    assert not page.is_symlink() and page.read_text().lstrip().lower().startswith("<!doctype html")
    assert not [n for n in os.listdir(run) if ".tmp" in n], os.listdir(run)


def test_watch_html_report_is_archived_at_each_relaunch(tmp_path):
    run = tmp_path / "run"
    for code in (3, 4):
        assert _watch_cli(run, code).returncode == code
    names = set(os.listdir(run))
    # before: the console log and the JSON report kept .1 copies, the HTML page was overwritten
    assert {"grpo-doctor-console.log.1", "grpo-doctor-report.json.1", "grpo-doctor-report.html.1"} <= names, names
    first = json.loads((run / "grpo-doctor-report.json.1").read_text())["run"]["watch"]["exit_code"]
    assert first == 3 and "html" in (run / "grpo-doctor-report.html.1").read_text().lower()


# ------------------------------------------------------------------------------------------------- point 10

def _run_with_checkpoint(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "checkpoint-1").mkdir()
    (run / "checkpoint-1" / "trainer_state.json").write_text('{"global_step": 1}')
    return run


def test_nothing_readable_left_is_exit_2(tmp_path):
    run = _run_with_checkpoint(tmp_path)
    (run / "logs" / "train.log").symlink_to("gone.log")  # the log's target was removed (stat fails, as unreadable)
    p = cli("analyze", str(run))  # before: "train.log (skipped: cannot read it ...)", "No problem found.", exit 0
    one_line_exit_2(p, "train.log", "cannot read it")
    assert b"No problem found" not in p.stdout


def test_permission_denied_log_with_nothing_else_is_exit_2(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from doctor.cli import app
    run = _run_with_checkpoint(tmp_path)
    (run / "logs" / "train.log").write_bytes(BATCH)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **k: False if str(p).endswith("train.log") else real(p, m, **k))
    r = CliRunner().invoke(app, ["analyze", str(run)])
    assert r.exit_code == 2 and "No problem found" not in r.output and "train.log" in r.output, r.output
    assert "permission denied" in r.output


def test_a_readable_log_beside_an_unreadable_one_is_still_analysed(tmp_path):
    run = _run_with_checkpoint(tmp_path)
    (run / "logs" / "train.log").symlink_to("gone.log")
    (run / "logs" / "node1.log").write_bytes(BATCH)
    p = cli("analyze", str(run))
    assert p.returncode == 1 and b"train.log (skipped: cannot read it" in p.stdout, p.stdout
