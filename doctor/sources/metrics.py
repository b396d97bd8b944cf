"""Per-step metrics from ``logging.jsonl`` and from the dicts printed on the console.

transformers 4 prints numbers (``{'loss': 0.0, ...}``), transformers 5 prints strings with 4
significant digits (``{'loss': '0', ...}``); ``nan``/``NaN``/``inf`` appear; pasted lines may lack
the opening brace or be cut in the middle. We read key/value pairs with a tolerant pattern instead
of evaluating anything.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

_PAIR = re.compile(
    r"""['"]([^'"]{1,120})['"]\s*:\s*(?:'([^']*)'|"([^"]*)"|([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|NaN|inf|Infinity|-inf)))"""
)
# Keys that only a trainer log dict has: a line needs two of them to count as a metrics line.
TRAINER_KEYS = frozenset({
    "loss", "grad_norm", "learning_rate", "epoch", "reward", "reward_std", "kl",
    "train_runtime", "train_loss", "global_step/max_steps", "completion_length",
    "completions/mean_length", "frac_reward_zero_std", "eval_loss", "eval_reward",
})
LITERALS = ("'loss'", '"loss"', "'reward'", '"reward"', "'train_runtime'", '"train_runtime"', "'grad_norm'",
            '"grad_norm"', "'eval_reward'", '"eval_reward"', "'eval_loss'")


def to_number(value: Any) -> Any:
    """'0.5' -> 0.5, 'nan' -> nan; anything else unchanged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        v = value.strip()
        try:
            return float(v)
        except ValueError:
            low = v.lower()
            if low in ("nan", "-nan"):
                return math.nan
            if low in ("inf", "infinity", "+inf"):
                return math.inf
            if low in ("-inf", "-infinity"):
                return -math.inf
    return value


def parse_console(text: str) -> dict[str, Any] | None:
    """Metrics from one printed dict (possibly cut or without braces), or None."""
    if ":" not in text:
        return None
    out: dict[str, Any] = {}
    for key, q1, q2, bare in _PAIR.findall(text):
        # findall gives "" for a group that did not take part; a quoted empty value is "" too
        out[key] = to_number(q1 or q2 or bare)
    if len(TRAINER_KEYS.intersection(out)) < 2:
        return None
    return out


def parse_jsonl(text: str) -> dict[str, Any] | None:
    """One logging.jsonl record (JSON with NaN/Infinity allowed), numbers as floats."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return parse_console(text)  # a cut last line: take what is there
    if not isinstance(obj, dict):
        return None
    return {k: to_number(v) for k, v in obj.items() if not isinstance(v, (dict, list))} | {
        k: v for k, v in obj.items() if isinstance(v, (dict, list))
    }


def is_summary(values: dict[str, Any]) -> bool:
    """The final object ms-swift appends to logging.jsonl when main() exits."""
    return "last_model_checkpoint" in values or "model_parameter_info" in values or "log_history" in values


def is_step(values: dict[str, Any]) -> bool:
    return any(k in values for k in ("loss", "reward", "grad_norm")) and not is_summary(values) \
        and "train_runtime" not in values


def step_number(values: dict[str, Any]) -> int | None:
    gs = values.get("global_step/max_steps")
    if isinstance(gs, str) and "/" in gs:
        try:
            return int(gs.split("/", 1)[0])
        except ValueError:
            return None
    return None


def max_steps(values: dict[str, Any]) -> int | None:
    gs = values.get("global_step/max_steps")
    if isinstance(gs, str) and "/" in gs:
        try:
            return int(gs.split("/", 1)[1])
        except ValueError:
            return None
    return None
