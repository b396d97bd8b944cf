"""Printed metric dicts in every shape real logs show."""
from __future__ import annotations

import math

from doctor.sources.metrics import is_step, is_summary, parse_console, parse_jsonl, step_number


def test_transformers4_numbers():
    v = parse_console("{'loss': 0.0, 'grad_norm': 0.95, 'reward': 0.89, 'kl': 8.5e-05, 'epoch': 0.0}")
    assert v == {"loss": 0.0, "grad_norm": 0.95, "reward": 0.89, "kl": 8.5e-05, "epoch": 0.0}


def test_transformers5_strings_and_nan():
    v = parse_console("{'loss': 'nan', 'grad_norm': '0.0001555', 'global_step/max_steps': '5/6'}")
    assert math.isnan(v["loss"]) and v["grad_norm"] == 0.0001555 and step_number(v) == 5


def test_missing_brace_and_cut_line():
    v = parse_console("'loss': -0.0, 'grad_norm': 0.0, 'learning_rate': 2.6e-07, 'reward': 0.34375, 'clip_ratio/low_me")
    assert v["loss"] == 0.0 and v["reward"] == 0.34375 and "clip_ratio/low_me" not in v


def test_not_metrics():
    assert parse_console("{'device_map': 'cpu', 'dtype': torch.float32}") is None
    assert parse_console("[INFO:swift] loss is fine") is None


def test_jsonl_nan_and_summary():
    v = parse_jsonl('{"loss": NaN, "grad_norm": Infinity, "reward": 0.5}')
    assert math.isnan(v["loss"]) and v["grad_norm"] == math.inf and is_step(v)
    s = parse_jsonl('{"last_model_checkpoint": "/x/checkpoint-6", "global_step": 6, "log_history": []}')
    assert is_summary(s) and not is_step(s)
