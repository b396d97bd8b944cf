"""Honest numbers (issue 15 point 6, issue 17 point 17): a value in a message or fix is read from the log,
computed from read values (marked ``(computed)``) or assumed (marked ``(assumed)``); fixes that rest on an
assumption say so, and the fix that needs none (divisors of a batch read from the log) comes first.
"""
from __future__ import annotations

import json

from typer.testing import CliRunner

from doctor.checks._numbers import ASSUMED, COMPUTED, READ, Num, assumptions, computed, first
from doctor.cli import app
from doctor.swift.planner import spec_from_name


def _first_finding(tmp_path, text: str) -> dict:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    res = CliRunner().invoke(app, ["analyze", str(log), "--format", "json"])
    return json.loads(res.stdout)["findings"][0]


def test_pasted_exception_line_alone_marks_what_it_assumes(tmp_path):
    # ms-swift 3.5+/trl's GRPOConfig wording (rules/batch/GD101): only 6 and 4 are in the text
    f = _first_finding(tmp_path, "ValueError: generation_batch_size (6) must be divisible by num_generations (4).\n")
    assert f["rule_id"] == "GD101"
    assert "world size 1 (assumed)" in f["message"]
    assert "per_device_train_batch_size 1 (assumed)" in f["message"]
    assert "gradient_accumulation_steps 6 (assumed)" in f["message"]
    fixes = f["fix"]
    # the divisors of the read batch 6 need no assumption and come first, unmarked (2, 3 and 6 divide 6)
    # the framework is not told (the wording is trl's GRPOConfig check, which ms-swift runs too): neutral names
    assert fixes[1].startswith("num_generations 2 or 3 or 6 ") and "assumes" not in fixes[1]
    later = [x for x in fixes[2:] if x.startswith(("gradient_accumulation_steps", "per_device_train_batch_size"))]
    assert later and all("(assumes " in x for x in later)


def test_full_run_values_are_not_marked_assumed(tmp_path):
    # every factor is in the message: 8 x 1 x 2 = 16 completions, read (the effective-batch wording of trl >= 0.17)
    f = _first_finding(tmp_path, "ValueError: The effective train batch size (8 x 1 x 2) must be evenly divisible by "
                                 "the number of generations per prompt (3). Given the current effective train batch "
                                 "size, the valid values for the number of generations are: [2, 4, 8, 16].\n")
    assert "(assumed)" not in f["message"] and not any("(assumes" in x for x in f["fix"])


def test_provenance_algebra():
    assert first((None, READ), (4, READ)) == Num(4, READ)
    assert first((None, READ)) == Num(1, ASSUMED)
    assert computed(6, Num(2), Num(3)).how == COMPUTED
    assert computed(6, Num(2), Num(3, ASSUMED)).how == ASSUMED
    assert str(Num(6, ASSUMED)) == "6 (assumed)" and str(Num(6)) == "6"
    assert assumptions(("world size", Num(8))) == ""


def test_model_size_is_not_read_from_digits_glued_in_a_name():
    # "gemma-3_27b" is Gemma 3 27B, not 3.27B (the ModelScope 1_5B -> 1.5B rewrite must not apply)
    spec = spec_from_name("google/gemma-3_27b-it")
    assert spec is None or abs(spec.params - 27e9) / 27e9 < 0.2
    # the ModelScope spelling of a decimal size still reads: Qwen2.5-1.5B as Qwen2___5-1___5B
    assert abs(spec_from_name("Qwen/Qwen2___5-1___5B-Instruct").params - 1.54e9) < 0.3e9
