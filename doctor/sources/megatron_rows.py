"""Megatron's console metric line as a metrics row in the trainer's own key names.

Megatron-LM's ``training_log`` (megatron/training/training.py) prints one line per logged iteration:
`` [2025-11-25 07:19:22] iteration        7/    2174 | consumed samples:          448 | elapsed time per iteration
(ms): 215613.0 | learning rate: 4.999872E-05 | global batch size:    64 | lm loss: 2.3E+00 | loss scale: 1.0 | grad
norm: 0.016 | number of skipped iterations:   0 | number of nan iterations:   0 |``; ms-swift's Megatron trainers
(``swift/megatron``, GRPO included) print the same line with their own keys (``loss:``, ``reward:``,
``rewards/<name>/mean:``, ``completions/mean_length:``). Keys with spaces are renamed to the ones the rules read; a
value the line cannot give is left out, never assumed.
"""
from __future__ import annotations

from typing import Any

from .. import lazyre
from .metrics import to_number

MEGATRON_MARK = "elapsed time per iteration (ms):"
_ITERATION = lazyre.compile(r"\biteration\s+(?P<step>\d+)\s*/\s*(?P<total>\d+)")
_NAMES = {
    "lm loss": "loss",
    "grad norm": "grad_norm",
    "learning rate": "learning_rate",
    "number of nan iterations": "nan_iterations",
    "number of skipped iterations": "skipped_iterations",
    "loss scale": "loss_scale",
}
_SKIP = {"consumed samples", "global batch size", "elapsed time", "remaining time", "memory(GiB)"}


def read_megatron(text: str) -> tuple[dict[str, Any] | None, bool]:
    """(values, finite) of a Megatron iteration line, or (None, True) when the line is not one."""
    m = _ITERATION.search(text)
    if m is None or MEGATRON_MARK not in text:
        return None, True
    values: dict[str, Any] = {"step": float(m.group("step")), "max_steps": float(m.group("total"))}
    finite = True
    for part in text[m.end():].split("|"):
        key, sep, raw = part.strip().rpartition(":")
        key = key.strip()
        if not sep or not key or key in _SKIP:
            continue
        x = to_number(raw.strip())
        if not isinstance(x, float):
            continue
        if key == MEGATRON_MARK[:-1]:
            values["step_time"] = x / 1000.0  # milliseconds per iteration
            continue
        if x - x != 0:
            finite = False
        values[_NAMES.get(key, key)] = x
    # training_log prints a loss only when its average is above 0 (`if avg > 0.0`): a NaN loss is left out of the
    # line, whose grad norm still shows it
    if "loss" not in values and "grad_norm" not in values:
        return None, True
    return values, finite


__all__ = ["MEGATRON_MARK", "read_megatron"]
