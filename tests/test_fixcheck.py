"""Fixes that change the outcome (issue 29 point 2): doctor/swift/fixcheck.py, applied once in Session.finish.

Unit checks of the checker, then the property over everything the repository can run: every rule case of
rules/*/cases.toml that fires and every golden of fixtures/*/ proposes no value the run already has, and every
relaunch command of a golden passes the preflight of the version that ran.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import ROOT
from test_rule_cases import CASES, run_case

from doctor.engine import Session
from doctor.model import Finding, Severity
from doctor.preflight import preflight_command
from doctor.registry import find_rule
from doctor.rules import Rule
from doctor.sources.swiftconfig import RunConfig
from doctor.swift.fixcheck import (
    batch_ok,
    check_finding,
    check_flags,
    check_text,
    correct_launch,
    current,
    known_flag,
    same,
)
from doctor.swift.flags import ADDED, REMOVED_IN
from doctor.verdict import refine


def _run(version: str | None = None, env: dict | None = None, **args) -> RunConfig:
    run = RunConfig()
    for k, v in args.items():
        run.set_arg(k, v, "command")
        run.cli[k] = v
    run.env.update(env or {})
    if version:
        run.versions["ms-swift"] = version
    return run


# ------------------------------------------------------------------------------------------------ values

def test_same_reads_values_as_settings():
    assert same(8, "8") and same(True, "true") and same(0.9, "0.90") and same(["a", "b"], "a b")
    assert not same(None, "None") and not same(8, "4") and not same(1.0, "1.0 1.0")


# ------------------------------------------------------------------------------------------ computed flags

def test_a_flag_with_the_runs_own_value_is_rejected():
    run = _run(num_generations=8, per_device_train_batch_size=2)
    kept, rejected = check_flags((("--num_generations", "8"), ("--per_device_train_batch_size", "4")), run)
    assert kept == (("--per_device_train_batch_size", "4"),)
    assert rejected[0][:2] == ("--num_generations", "8") and "already has num_generations 8" in rejected[0][2]


def test_a_flag_the_version_lacks_is_rejected_and_the_tuner_respelled():
    run = _run("3.4.0", per_device_train_batch_size=2)
    kept, rejected = check_flags((("--steps_per_generation", "4"), ("--tuner_type", "full")), run)
    assert kept == (("--train_type", "full"),)
    assert rejected == [("--steps_per_generation", "4", "--steps_per_generation exists from ms-swift 3.5")]


def test_a_batch_fix_must_give_whole_groups():
    # world 2 x batch 3 x GA 1 = 6, num_generations 4: GA 3 (18) still breaks, GA 2 (12) works
    run = _run("4.6.0", {"NPROC_PER_NODE": "2"}, per_device_train_batch_size=3, gradient_accumulation_steps=1,
               num_generations=4)
    assert batch_ok(run, {}) is False
    assert check_flags((("--gradient_accumulation_steps", "2"),), run)[0] == (("--gradient_accumulation_steps", "2"),)
    kept, rejected = check_flags((("--gradient_accumulation_steps", "3"),), run)
    assert kept == () and "whole groups" in rejected[0][2]
    # generation_batch_size set: gradient accumulation no longer decides the batch, so changing it changes nothing
    run.set_arg("generation_batch_size", 6, "command")
    assert check_flags((("--gradient_accumulation_steps", "2"),), run)[0] == ()


def test_no_batch_claim_when_the_runs_values_are_not_all_known():
    run = _run(per_device_train_batch_size=3, num_generations=4)  # no world size: the error's n is not ours
    assert batch_ok(run, {}) is None
    assert check_flags((("--gradient_accumulation_steps", "3"),), run)[0] == (("--gradient_accumulation_steps", "3"),)


# ------------------------------------------------------------------------------------------------ fix text

@pytest.mark.parametrize(("sentence", "expected"), [
    ("Use --num_generations 8.", None),
    ("--num_generations 8 or 4 (divisors of 16).", "--num_generations 4 (divisors of 16)."),
    ("--num_generations 4/8/16.", "--num_generations 4/16."),
    ("--deepspeed zero3 instead of --deepspeed zero2: ...", "same"),
    ("Raise --max_completion_length (now 2048) or lower --num_generations 8 -> 4.", "same"),
    ("This run has --num_generations 8: groups of 8.", "same"),
    ("Keep --num_generations 8 and set --per_device_train_batch_size 4.", "same"),
    ("--vllm_max_model_len 1024 leaves no room for a prompt.", "same"),
    ("Add --load_args false (or delete `--load_args true` from the script).", "same"),
    ("--model <base model> --adapters a/b --num_generations 8", "same"),  # a combination that changes something
    ("Pass exactly 2 weights, e.g. --reward_weights 1.0 1.0.", "same"),   # a list of two, the run has one
    ("e.g. --reward_weights 1.0.", None),
])
def test_fix_text_drops_proposals_of_the_current_value(sentence, expected):
    run = _run(num_generations=8, max_completion_length=2048, deepspeed="zero2", vllm_max_model_len=1024,
               load_args=True, reward_weights=1.0)
    out = check_text([sentence], run)
    if expected is None:
        assert out == ()
    else:
        assert out == ((sentence if expected == "same" else expected),)


def test_a_rejected_computed_flag_takes_its_sentence_with_it():
    run = _run("4.6.0", {"NPROC_PER_NODE": "2"}, per_device_train_batch_size=3, gradient_accumulation_steps=1,
               num_generations=4)
    f = Finding("GD101", "x", "batch-divisibility", Severity.error, "t", "m",
                fix=("--gradient_accumulation_steps 3 (gives 18).", "--per_device_train_batch_size 2."),
                flags=(("--gradient_accumulation_steps", "3"),))
    out = check_finding(f, run)
    assert out.flags == () and out.fix == ("--per_device_train_batch_size 2.",)


# ----------------------------------------------------------------------------------------- relaunch command

def test_the_launch_is_corrected_flag_by_flag():
    run = _run("4.6.0")
    flags, notes = correct_launch({"rlhf_type": "grpo", "per_device_train_batchsize": 2, "vllm_device": "auto",
                                   "train_type": "lora", "zzz_not_a_flag": 1}, run)
    assert flags == {"rlhf_type": "grpo", "per_device_train_batch_size": 2, "tuner_type": "lora"}
    text = " ".join(notes)
    assert "writes --per_device_train_batchsize as --per_device_train_batch_size" in text
    assert "drops --vllm_device" in text and "drops --zzz_not_a_flag" in text and "--train_type as --tuner_type" in text


def test_an_unknown_version_keeps_the_flags_it_ran_with():
    # --vllm_device with --vllm_mode server ran on 3.5 (vllm_mode from 3.5, vllm_device gone in 3.6): no version in
    # the log, so the run itself says its ms-swift took them
    run = _run()
    assert known_flag(run, "vllm_device") == ("vllm_device", "")
    assert known_flag(run, "train_type") == ("train_type", "")
    assert known_flag(_run("3.8.0"), "some_3x_only_arg") == ("some_3x_only_arg", "")


def test_refine_writes_the_corrected_command_with_a_note():
    run = _run("4.6.0")
    run.add_command("swift rlhf --rlhf_type grpo --model m --num_generation 4 --per_device_train_batch_size 3")
    f = Finding("GD101", "x", "batch-divisibility", Severity.error, "t", "m", fix=("a.",), action="relaunch",
                flags=(("--per_device_train_batch_size", "4"),))
    (out,) = refine([f], run)
    assert "--num_generations 4" in out.command and "--num_generation " not in out.command
    assert "--per_device_train_batch_size 4" in out.command
    assert any("writes --num_generation as --num_generations" in s for s in out.fix)


def test_preflight_accepts_the_corrected_command_of_a_misspelt_launch():
    """Preflight of a command with a typo and a batch error: GD101's command fixes both, and preflight passes it."""
    argv = shlex.split("swift rlhf --rlhf_type grpo --model m --num_generations 4 --per_device_train_batch_size 3 "
                       "--gradient_accumulation_steps 1 --max_completion_lenght 64 --reward_funcs accuracy")
    rep = preflight_command(argv, {}, swift_version="4.6.0", live_gpu=False)
    gd101 = next(f for f in rep.findings if f.rule_id == "GD101")
    assert gd101.command and "--max_completion_length 64" in gd101.command
    assert any("--max_completion_lenght as --max_completion_length" in s for s in gd101.fix)
    again = preflight_command(shlex.split(gd101.command), {}, swift_version="4.6.0", live_gpu=False)
    assert [f.rule_id for f in again.findings if f.severity == Severity.error] == []


# --------------------------------------------------------------------------------------------- one place

class _Says(Rule):
    def finish(self, ctx):
        return [self.make(fix=["Use --num_generations 8.", "Check the reward."],
                          flags=(("--num_generations", "8"),))]


def test_session_finish_checks_every_rules_fix():
    s = Session([find_rule("GD101")], run=_run(num_generations=8))
    s.rules = [_Says(find_rule("GD101"))]
    (f,) = s.finish()
    assert f.flags == () and f.fix == ("Check the reward.",)


# ----------------------------------------------------------------------------------------------- property

def _run_of_case(case: dict, tmp: Path, monkeypatch, checked: bool) -> tuple[list[Finding], RunConfig]:
    import doctor.engine.session as session_mod

    seen: list[RunConfig] = []
    orig = Session.finish

    def finish(self):
        seen.append(self.state.run)
        return orig(self)

    monkeypatch.setattr(Session, "finish", finish)
    if not checked:
        monkeypatch.setattr(session_mod, "check_finding", lambda f, run: f)
    return run_case(case, tmp), seen[-1]


FIRING = [(cid, c) for cid, c in CASES if c.get("fires", True)]


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "rules-alone"])
@pytest.mark.parametrize("case", [c for _, c in FIRING], ids=[i for i, _ in FIRING])
def test_no_rule_case_proposes_the_current_value(case, checked, tmp_path, monkeypatch):
    """What the report says, and what the rules say before the checker (the checker is a net, not a cover: a rule
    that proposes the run's own value is fixed in the rule, as GD801 was)."""
    found, run = _run_of_case(case, tmp_path, monkeypatch, checked)
    for f in found:
        for flag, value in f.flags:
            assert not same(current(run, flag), value), f"{f.rule_id}: computed {flag} {value} is the run's value"
        assert check_text(f.fix, run) == f.fix, f"{f.rule_id}: a fix sentence proposes the run's value: {f.fix}"


def _goldens() -> list[Path]:
    return sorted(ROOT.glob("fixtures/*/*.expected.json"))


def _golden_run(report: dict) -> RunConfig:
    run = RunConfig()
    run.args.update(report.get("run", {}).get("args") or {})
    run.env.update(report.get("run", {}).get("env") or {})
    return run


@pytest.mark.parametrize("path", _goldens(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_golden_fix_proposes_the_current_value(path):
    report = json.loads(path.read_text(encoding="utf-8"))
    run = _golden_run(report)
    for f in report["findings"]:
        assert list(check_text(f["fix"], run)) == f["fix"], f"{f['rule_id']}: {f['fix']}"


def _version_ran(report: dict, command: str) -> str | None:
    """The ms-swift the run used: the report's, or, when the log printed none, the newest release that still takes
    every version-dependent flag of the command (REMOVED_IN / ADDED: --vllm_device with --vllm_mode is 3.5)."""
    run = report["run"]
    known = run.get("framework_version") or run.get("preflight", {}).get("swift_version_checked")
    if known:
        return known
    names = {t[2:].split("=", 1)[0].replace("-", "_") for t in shlex.split(command) if t.startswith("--")}
    gone = [REMOVED_IN[n] for n in names if n in REMOVED_IN]
    if not gone:
        return None
    hi = min(gone)
    newest = (hi[0], hi[1] - 1) if hi[1] else (hi[0] - 1, 12)
    assert all(ADDED[n][0] <= newest for n in names if n in ADDED), f"no version takes all of {sorted(names)}"
    return f"{newest[0]}.{newest[1]}.0"


COMMANDS = [(p, f) for p in _goldens() for f in json.loads(p.read_text(encoding="utf-8"))["findings"]
            if f.get("command")]


@pytest.mark.parametrize(("path", "finding"), COMMANDS,
                         ids=[f"{p.parent.name}/{p.name}/{f['rule_id']}" for p, f in COMMANDS])
def test_preflight_accepts_every_golden_command(path, finding):
    report = json.loads(path.read_text(encoding="utf-8"))
    version = _version_ran(report, finding["command"])
    rep = preflight_command(shlex.split(finding["command"]), {}, swift_version=version, live_gpu=False)
    errors = [(f.rule_id, f.message) for f in rep.findings if f.severity == Severity.error]
    if finding.get("action") == "restart":
        # the run's own command again (a transient fault, no computed flag): its flags must parse in that version;
        # what else preflight assumes of a partial paste (dev-041: no eval setting, 3.5's default eval split) is the
        # user's run as it was, not a fix of ours
        errors = [e for e in errors if e[0] == "GD401"]
    assert errors == [], f"{finding['rule_id']} command (ms-swift {version}): {errors}"
