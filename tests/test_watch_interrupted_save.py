"""A run killed by a signal from outside while it writes a checkpoint, under `watch`, with a real child process.

A scheduler's time limit, a preemption or `docker stop` sends SIGTERM to every process of the job; Python's default
action ends each at once, so the checkpoint being written keeps what reached the disk: here optimizer.pt cut in half
and no trainer_state.json (transformers' Trainer._save_checkpoint writes it last). An earlier checkpoint is complete.
watch checks each checkpoint in a session of its own as it is saved; those findings must take part in the run's
verdict (resume from the complete one) and in what the fallbacks see (GD995 is for an exit that no rule explains),
and the checkpoint rule says which signal cut the folder. The scoreboard's `sigterm-mid-save` cases inject the same
fault into real ms-swift and TRL runs (bench/scoreboard_plugins/midsave.py)."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT
from watchutil import run_watch

from doctor.ckpt import check_checkpoint_dirs
from doctor.engine import Session
from doctor.model import Severity
from doctor.registry import load_catalog
from doctor.signals import RunExit

RUN = ROOT / "fixtures" / "ckpt" / "real-lora-healthy" / "v0-20261122-204953"
LOG = FIXTURES / "real-grpo-lora-healthy" / "log.txt"


def _cut_copy(src: Path, dest: Path, keep: tuple[str, ...] = ("adapter_model.safetensors", "adapter_config.json",
                                                                "additional_config.json", "args.json", "README.md",
                                                                "training_args.bin")) -> None:
    """``dest`` as a save stopped in optimizer.pt leaves it: the files before it, optimizer.pt's first half."""
    dest.mkdir(parents=True)
    for name in keep:
        shutil.copy2(src / name, dest / name)
    data = (src / "optimizer.pt").read_bytes()
    (dest / "optimizer.pt").write_bytes(data[: len(data) // 2])


def test_a_save_cut_by_a_signal_is_named_with_its_signal(tmp_path: Path) -> None:
    ck = tmp_path / "checkpoint-4"
    _cut_copy(RUN / "checkpoint-6", ck)
    f = next(x for x in check_checkpoint_dirs([ck], facts={"ended_by_signal": ("SIGTERM", 21.0)}) if x.rule_id == "GD802")
    assert "killed by SIGTERM 21 s after its launch while this checkpoint was being saved" in f.message
    assert "scheduler's time limit" in f.message
    assert "highest-numbered folder, checkpoint-4" in f.fix[0]
    plain = next(x for x in check_checkpoint_dirs([ck]) if x.rule_id == "GD802")
    assert "killed by" not in plain.message and "highest-numbered" not in " ".join(plain.fix)


def test_a_save_stopped_between_two_files_is_incomplete_only_when_a_signal_ended_the_run(tmp_path: Path) -> None:
    """No file is cut (the signal came between two files), but trainer_state.json, written last, is not there."""
    ck = tmp_path / "checkpoint-4"
    ck.mkdir()
    for name in ("adapter_model.safetensors", "adapter_config.json", "optimizer.pt"):
        shutil.copy2(RUN / "checkpoint-6" / name, ck / name)
    got = [x for x in check_checkpoint_dirs([ck], facts={"ended_by_signal": ("SIGKILL", 5.0)}) if x.rule_id == "GD802"]
    assert got and "trainer_state.json: is missing" in got[0].evidence[-1].text
    assert "SIGKILL" in got[0].message and "OOM killer" in got[0].message
    assert not [x for x in check_checkpoint_dirs([ck]) if x.rule_id == "GD802"]


def test_findings_from_outside_take_part_in_the_verdict_and_silence_gd995(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN / "checkpoint-2", run / "checkpoint-2")
    _cut_copy(RUN / "checkpoint-6", run / "checkpoint-4")
    outside = check_checkpoint_dirs([run / "checkpoint-4"], facts={"ended_by_signal": ("SIGTERM", 21.0)})
    s = Session(load_catalog())
    s.run.add_command("swift rlhf --rlhf_type grpo --model m --tuner_type lora --output_dir " + str(run), "command")
    s.emit(RunExit(21.0, -15, "SIGTERM"))
    alone = s.finish()
    assert [f.rule_id for f in alone if f.severity >= Severity.error] == ["GD995"]
    s2 = Session(load_catalog())
    s2.run.add_command("swift rlhf --rlhf_type grpo --model m --tuner_type lora --output_dir " + str(run), "command")
    s2.emit(RunExit(21.0, -15, "SIGTERM"))
    got = s2.finish(outside=outside, checkpoints=[(str(run / "checkpoint-2"), 2), (str(run / "checkpoint-4"), 4)])
    errors = [f for f in got if f.severity >= Severity.error]
    assert [f.rule_id for f in errors] == ["GD802"]
    assert errors[0].action == "resume"
    assert "--resume_from_checkpoint " + str(run / "checkpoint-2") in errors[0].command


# the child: the real console lines of a swift LoRA run up to its step-4 metrics; checkpoint-2 saved whole on the
# way; then checkpoint-4 saved up to half of optimizer.pt, and SIGTERM to its own process group (what a scheduler's
# time limit sends to every process of the job)
CHILD = r'''
import os, shutil, signal, sys, time
log, out, src = sys.argv[1], sys.argv[2], sys.argv[3]
for raw in open(log, "rb"):
    sys.stdout.buffer.write(raw)
    if b"'global_step/max_steps': '2/" in raw:
        sys.stdout.flush()
        ck2 = os.path.join(out, "checkpoint-2")
        os.makedirs(ck2)   # new files, as a save writes them (copytree would keep the fixture's old times)
        for name in sorted(os.listdir(os.path.join(src, "checkpoint-2")), key=lambda n: n == "trainer_state.json"):
            shutil.copyfile(os.path.join(src, "checkpoint-2", name), os.path.join(ck2, name))
    if b"'global_step/max_steps': '4/" in raw:
        break
sys.stdout.flush()
time.sleep(1.5)
ck = os.path.join(out, "checkpoint-4")
os.makedirs(ck)
for name in ("adapter_model.safetensors", "adapter_config.json"):
    shutil.copy2(os.path.join(src, "checkpoint-6", name), os.path.join(ck, name))
data = open(os.path.join(src, "checkpoint-6", "optimizer.pt"), "rb").read()
with open(os.path.join(ck, "optimizer.pt"), "wb") as f:
    f.write(data[: len(data) // 2])
    f.flush()
    os.killpg(os.getpgrp(), signal.SIGTERM)
    time.sleep(30)
'''


def test_watch_names_the_signal_and_resumes_from_the_complete_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    r = run_watch(tmp_path, [], argv=[sys.executable, "-c", CHILD, str(LOG), str(out), str(RUN)], run_dir=str(out),
                  drain=0.0, grace=2.0)
    assert r.code == 128 + 15, r.doc.decode(errors="replace")[-3000:]
    errors = [f for f in r.report["findings"] if f["severity"] == "error"]
    assert [f["rule_id"] for f in errors] == ["GD802"], r.report["findings"]
    top = errors[0]
    assert "killed by SIGTERM" in top["message"] and "checkpoint-4" in top["message"]
    assert top["action"] == "resume"
    assert str(out / "checkpoint-2") in top["command"]
