"""verl's console metric line as a metrics row in the trainer's own key names.

verl's console logger (verl/utils/tracking.py, LocalLogger via ``concat_dict_to_str``) prints one line per step:
``step:4 - actor/pg_loss:0.000 - critic/score/mean:0.000 - ...`` (each number with three decimals). Its keys
(verl/trainer/ppo/metric_utils.py ``compute_data_metrics``, ``compute_timing_metrics``) are renamed to the ones the
rules read; a value the row cannot give is left out, never assumed.
"""
from __future__ import annotations

from typing import Any

from .metrics import is_verl_row, to_number

_NAMES = {
    "critic/score/mean": "reward",              # the task score (reward function output) before any KL penalty
    "actor/grad_norm": "grad_norm",
    "actor/pg_loss": "loss",
    "actor/kl_loss": "kl",
    "actor/lr": "learning_rate",
    "response_length/mean": "completions/mean_length",
    "response_length/max": "completions/max_length",
    "response_length/clip_ratio": "completions/clipped_ratio",
    "timing_s/step": "step_time",
}


def read_verl(text: str) -> tuple[dict[str, Any] | None, bool]:
    """(values, finite) of a verl step line, or (None, True) when the line is not one."""
    start = text.find("step:")
    if start < 0 or not is_verl_row(text):
        return None, True
    values: dict[str, Any] = {}
    finite = True
    for part in text[start:].split(" - "):
        key, sep, raw = part.strip().partition(":")
        if not sep or not key or " " in key:
            continue
        x = to_number(raw.strip())
        if not isinstance(x, (int, float)):
            continue
        if isinstance(x, float) and x - x != 0:
            finite = False
        values[verl_name(key)] = x
    # a row cut before its critic keys is still the step's row: each rule reads what is there (no score: no reward)
    if "step" not in values or not ("reward" in values or "loss" in values or "grad_norm" in values):
        return None, True
    return with_spread(values), finite


def verl_name(key: str) -> str:
    """The rules' name of one of verl's metric keys (unchanged for any other key)."""
    return _NAMES.get(key, key)


def with_spread(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with a reward_std of 0 where verl's score minimum equals its maximum: every completion of the batch
    scored the same, so no group has a spread."""
    lo, hi = values.get("critic/score/min"), values.get("critic/score/max")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo == hi and "reward_std" not in values:
        values["reward_std"] = 0.0
    return values


__all__ = ["read_verl", "verl_name", "with_spread"]
