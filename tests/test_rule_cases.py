"""The one collector of small rule cases: every ``rules/<family>/cases.toml``.

Each ``[[case]]`` names a ``rule`` and feeds it, alone (plus the rules listed in ``with``), through the real
engine (as ``preflight`` judges a command before a run when ``preflight = true``, with the ``facts`` its driver
gathers, e.g. ``{gpu_gib = 24.0, gpu_source = "--gpu-mem 24"}``), in this order:

- ``command``: a launch command (as command.txt or a pasted shell line holds it);
- ``log``: log text, read line by line by the real reader (tracebacks and console metric rows included);
- ``metrics``: rows as logging.jsonl holds them, one table per logged step;
- ``completions``: tables as completions.jsonl holds them (one per step: ``step``, ``prompt``, ``completion``...);
- ``gpu``: an nvidia-smi snapshot (any format doctor/sources/gpu.py reads);
- ``gpu_ticks``: live NVML samples of ``watch``: ``[{t = s, gpus = [[util %, used GiB, total GiB], ...]}]`` (GPU i
  is the i-th triple; ``alive = false`` when the child had ended);
- ``host_ticks``: live host memory samples: ``[{t = s, available_gib = x, total_gib = y}]``;
- ``disk_ticks``: live disk samples: ``[{t = s, path = "...", free_gib = x, need_gib = y, basis = "..."}]``;
- ``hang``: the live hang watchdog's HangReport, its fields as a table (lists for the tuples; ``where`` and
  ``outlier`` left out are None);
- ``exit``: how the watched command ended (RunExit: ``t``, ``code``, optional ``signal_name``, ``kernel_lines``...);
- ``checkpoint``: a tiny checkpoint directory built in tmp with tests/ckpt_util.py and read by the real reader:
  ``kind`` ("full" or "lora"), optional ``name`` (default checkpoint-2), ``dtype``, ``optimizer_factor``,
  ``args`` (its args.json), ``trainer_state``, ``files`` (name = text, written over the built ones),
  ``truncate`` (name = size in bytes), ``siblings`` (steps of other full checkpoints in the same run dir),
  ``expect`` ("full" / "lora", as check-ckpt --expect) and ``fs_free_x`` (free space on its disk, in sizes of
  this checkpoint).

``fires`` says whether the rule must find something; ``severity``, ``confidence`` and ``message_has`` / ``message_lacks`` / ``fix_has`` / ``fix_lacks`` (substrings)
what it must say. Every expected value is read from the case's input by a person, never copied from the tool's
output. Pattern rules keep their one-line ``examples`` in their own TOML (test_catalog.py); this file holds what a
line cannot show: commands, tracebacks, metric series, completions, GPU and machine samples, checkpoints.
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, feed_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from doctor.engine import Session
from doctor.registry import find_rule
from doctor.signals import (
    CheckpointInput,
    Completions,
    DiskTick,
    Gpu,
    GpuSnapshot,
    GpuTick,
    HangReport,
    HostTick,
    Metrics,
    RunExit,
    Where,
)
from doctor.sources import metrics as msrc
from doctor.sources.checkpoint import read_checkpoint
from doctor.sources.gpu import parse_text

CASE_KEYS = {"rule", "name", "with", "preflight", "facts", "command", "log", "metrics", "completions", "gpu", "gpu_ticks",
             "host_ticks", "disk_ticks", "hang", "exit", "checkpoint", "fires", "severity", "message_has", "fix_has",
             "fix_lacks", "message_lacks", "confidence", "category"}
CHECKPOINT_KEYS = {"kind", "name", "dtype", "optimizer_factor", "args", "trainer_state", "files", "truncate",
                   "siblings", "expect", "fs_free_x"}
GIB = 1024 ** 3


def _cases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "rules").glob("*/cases.toml")):
        for i, case in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("case", []), 1):
            out.append((f"{path.parent.name}/{case.get('rule', '?')}/{i}-{case.get('name', '')}", case))
    return out


CASES = _cases()


def _tuples(table: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}


def build_checkpoint(spec: dict, root: Path) -> CheckpointInput:
    """The ``checkpoint`` key: a tiny checkpoint written by tests/ckpt_util.py, read by the real reader."""
    import numpy as np
    from ckpt_util import full_checkpoint, lora_checkpoint

    unknown = set(spec) - CHECKPOINT_KEYS
    assert not unknown, f"unknown checkpoint keys {sorted(unknown)} (known: {sorted(CHECKPOINT_KEYS)})"
    run = root / "run"
    full = {"dtype": getattr(np, spec.get("dtype", "float16")), "optimizer_factor": spec.get("optimizer_factor", 2.0)}
    for step in spec.get("siblings", []):
        full_checkpoint(run / f"checkpoint-{step}", **full)
    d = run / spec.get("name", "checkpoint-2")
    if spec.get("kind", "full") == "lora":
        lora_checkpoint(d, args=spec.get("args"))
    else:
        full_checkpoint(d, args=spec.get("args"), trainer_state=spec.get("trainer_state"), **full)
    for name, text in spec.get("files", {}).items():
        (d / name).write_text(text, encoding="utf-8")
    for name, size in spec.get("truncate", {}).items():
        os.truncate(d / name, size)
    facts = read_checkpoint(d)
    if "fs_free_x" in spec:
        facts = replace(facts, fs_free=int(spec["fs_free_x"] * facts.total_bytes()), fs_mount="/data")
    return CheckpointInput(facts, spec.get("expect"))


def run_case(case: dict, tmp: Path | None = None):
    unknown = set(case) - CASE_KEYS
    assert not unknown, f"unknown keys {sorted(unknown)} (known: {sorted(CASE_KEYS)})"
    metas = [find_rule(r) for r in [case["rule"], *case.get("with", [])]]
    assert all(metas), f"unknown rule in {case['rule']} / {case.get('with')}"
    s = Session(metas, preflight=bool(case.get("preflight")), facts=case.get("facts"))
    if "command" in case:
        s.run.add_command(case["command"])
    if "log" in case:
        feed_text(s, case["log"], "log.txt")
    for i, row in enumerate(case.get("metrics", []), 1):
        s.emit(Metrics({k: msrc.to_number(v) for k, v in row.items()}, Where("logging.jsonl", i), i, "jsonl"))
    for i, table in enumerate(case.get("completions", []), 1):
        s.emit(Completions(table, Where("completions.jsonl", i)))
    if "gpu" in case:
        s.emit(GpuSnapshot("nvidia-smi.txt", parse_text(case["gpu"], "nvidia-smi.txt")))
    for tick in case.get("gpu_ticks", []):
        gpus = tuple(Gpu(i, util, int(used * GIB), int(total * GIB)) for i, (util, used, total) in
                     enumerate(tick["gpus"]))
        s.emit(GpuTick(tick["t"], gpus, tick.get("alive", True)))
    for tick in case.get("host_ticks", []):
        s.emit(HostTick(tick["t"], int(tick["available_gib"] * GIB), int(tick["total_gib"] * GIB)))
    for tick in case.get("disk_ticks", []):
        s.emit(DiskTick(tick["t"], tick["path"], int(tick["free_gib"] * GIB), int(tick["need_gib"] * GIB),
                        tick["basis"]))
    if "hang" in case:  # TOML has no None: a field left out that may be None is None
        s.emit(HangReport(**{"where": None, "outlier": None, **_tuples(case["hang"])}))
    if "exit" in case:
        s.emit(RunExit(**{"signal_name": None, **_tuples(case["exit"])}))
    if "checkpoint" in case:
        assert tmp is not None, "a checkpoint case needs a directory"
        s.emit(build_checkpoint(case["checkpoint"], tmp))
    return [f for f in s.finish() if f.rule_id == case["rule"]]


# Check rules (TOML ``check = ...``) that no case here can express, each with why. Empty: every check rule of the
# catalog is fed by the keys above. A rule added to this list needs its reason, and the test that covers it instead.
NO_CASE: dict[str, str] = {}


def test_every_check_rule_has_a_case_that_fires():
    """Each rule whose TOML names Python (``check``) has at least one positive case here, except NO_CASE."""
    from doctor.registry import load_catalog

    checks = {m.id for m in load_catalog() if m.check}
    fired = {c["rule"] for _, c in CASES if c.get("fires", True)}
    missing = sorted(checks - fired - set(NO_CASE))
    assert not missing, f"check rules without a positive case in rules/*/cases.toml: {missing}"
    assert not set(NO_CASE) - checks, "NO_CASE names a rule that is not a check rule (any more)"
    assert not set(NO_CASE) & fired, "a rule in NO_CASE has a case now: take it off the list"


def test_cases_name_real_rules_in_their_own_family():
    """A case sits in the cases.toml of its rule's family (rules/<family>/), so a reader finds it beside the TOML."""
    for cid, case in CASES:
        family = cid.split("/", 1)[0]
        assert list((ROOT / "rules" / family).glob(f"{case['rule']}-*.toml")), f"{cid}: no rules/{family}/{case['rule']}-*.toml"


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_case(case, tmp_path):
    found = run_case(case, tmp_path)
    if not case.get("fires", True):
        assert found == [], [f.message for f in found]
        return
    assert found, f"{case['rule']} did not fire"
    f = found[0]
    if "severity" in case:
        assert f.severity.name == case["severity"], f.severity.name
    if "confidence" in case:
        assert f.confidence == case["confidence"], f.confidence
    if "category" in case:  # a fixer that reads the run into another category than its rule's
        assert f.category == case["category"], f.category
    for text in case.get("message_has", []):
        assert text in f.message, f.message
    for text in case.get("message_lacks", []):
        assert text not in f.message, f.message
    fixes = " ".join(f.fix)
    for text in case.get("fix_has", []):
        assert text in fixes, fixes
    for text in case.get("fix_lacks", []):
        assert text not in fixes, fixes


def test_a_wrong_expectation_fails():
    """The collector can fail: a case that expects the wrong thing is caught."""
    case = next(c for _, c in CASES if c.get("fires", True) and c.get("message_has"))
    with pytest.raises(AssertionError):
        test_case({**case, "message_has": ["no such words in any message"]}, None)
    with pytest.raises(AssertionError):
        test_case({**case, "fires": False}, None)
    with pytest.raises(AssertionError):
        run_case({**case, "typo_key": 1})
