"""Grader 27's false sentences (dev-logs 9 and 10), one test per mechanism: the fact that contradicts the sentence is
fed, and the sentence must go (the rule cases in rules/*/cases.toml hold the ones a log can show)."""
from __future__ import annotations

from doctor.swift.terms import say


def test_llamafactory_precision_is_its_yaml_switch_not_a_torch_dtype():
    # devlogs10 1116: a LLaMA-Factory YAML run was told to "load the model with torch_dtype=bfloat16"
    line = say("Train in bfloat16 (--torch_dtype bfloat16) on Ampere or newer GPUs.", "llamafactory")
    assert line is not None and "`bf16: true` in the training YAML" in line
    assert "torch_dtype" not in line
    assert "cutoff_len 2048" in (say("Raise --max_length 2048.", "llamafactory") or "")
