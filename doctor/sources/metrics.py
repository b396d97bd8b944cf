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

from .. import lazyre

_PAIR = lazyre.compile(
    r"""['"]([^'"]{1,120})['"]\s*:\s*(?:'([^']*)'|"([^"]*)"|([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|NaN|inf|Infinity|-inf)))"""
)
# Keys that only a trainer log dict has: a line needs two of them to count as a metrics line.
TRAINER_KEYS = frozenset({
    "loss", "grad_norm", "learning_rate", "epoch", "reward", "reward_std", "kl",
    "train_runtime", "train_loss", "global_step/max_steps", "completion_length",
    "completions/mean_length", "frac_reward_zero_std", "eval_loss", "eval_reward",
})
# the same keys under other loggers' names: transformers' WandbCallback prefixes "train/" (integration_utils.py
# rewrite_logs); the DPO reference trainer (eric-mitchell/direct-preference-optimization trainers.py) prints
# "train stats after N examples: {'loss/train': ..., 'grad_norm': ...}"
_ALIASES = {"train/loss": "loss", "loss/train": "loss", "train/grad_norm": "grad_norm", "train/reward": "reward",
            "train/reward_std": "reward_std", "train/kl": "kl", "train/learning_rate": "learning_rate",
            "train/epoch": "epoch", "train/global_step": "step"}
LITERALS = ("'loss'", '"loss"', "'reward'", '"reward"', "'train_runtime'", '"train_runtime"', "'grad_norm'",
            '"grad_norm"', "'eval_reward'", '"eval_reward"', "'eval_loss'", "critic/rewards/mean:",
            # a verl row cut before its critic keys (VERL_ACTOR_MARK)
            " - actor/pg_loss:",
            # Megatron's iteration line (sources/megatron_rows.py)
            "elapsed time per iteration (ms):")
# every verl PPO/GRPO console row holds it (sources/verl_rows.py); such a row passes the gate by its
# "critic/rewards/mean:" literal above
VERL_MARK = "critic/score/mean:"
# the actor's loss, which verl logs before the critic's keys: a row a paste or the line cap cut before its score
VERL_ACTOR_MARK = " - actor/pg_loss:"


def is_verl_row(text: str) -> bool:
    return VERL_MARK in text or (VERL_ACTOR_MARK in text and "step:" in text)
# each literal holds one of these (a test checks it); has_literal spells them out: one C-level test each
_LITERAL_WORDS = ("loss", "reward", "grad_norm", "train_runtime", "iteration")


def has_literal(text: str) -> bool:
    """Whether the line holds one of LITERALS (most lines hold none of the five words: one test each)."""
    return ("loss" in text or "reward" in text or "grad_norm" in text or "train_runtime" in text or "iteration" in text) \
        and any(lit in text for lit in LITERALS)


def to_number(value: Any) -> Any:
    """'0.5' -> 0.5, 'nan' -> nan; anything else unchanged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # a 400-digit integer: beyond float, as float("1e400") is
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        v = value.strip()
        if "/" in v or v[-1:] == "s":   # float() refuses these ('1/500', '7s': a step counter and times, new
            return value                  # in every row), and so does every test below
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


def as_float(value: Any) -> float | None:
    """A metric value as a float (to_number's reading: a 400-digit integer is inf, not an OverflowError); None for
    anything to_number leaves as it is (a bool, a step counter, a text)."""
    v = to_number(value)
    return v if isinstance(v, float) else None


def parse_console(text: str) -> dict[str, Any] | None:
    """Metrics from one printed dict (possibly cut or without braces), or None."""
    return read_console(text)[0]


def read_console(text: str) -> tuple[dict[str, Any] | None, bool]:
    """(parse_console(text), finite): finite True means no value is NaN/inf; False that one may be (a
    repeated key can hide the NaN it had). A by-product of the conversion, so a rule looking for NaN/inf
    need not scan the values of every row again."""
    if ":" not in text:
        return None, True
    if is_verl_row(text):  # verl's console row (sources/verl_rows.py)
        from .verl_rows import read_verl
        return read_verl(text)
    if "elapsed time per iteration" in text:  # Megatron's iteration line (sources/megatron_rows.py)
        from .megatron_rows import read_megatron
        return read_megatron(text)
    s = text.strip()
    for keys, pattern in _LAYOUTS:   # learned layouts hold two trainer keys or more
        m = pattern.fullmatch(s)
        if m is not None:
            return _convert(keys, m.groups())
    split = _quoted_pairs(s)
    if split is not None:
        keys, raws = split
    else:
        # findall gives "" for a group that did not take part; a quoted empty value is "" too
        found = _PAIR.findall(text)
        keys = tuple(key for key, _, _, _ in found)
        raws = tuple(q1 or q2 or bare for _, q1, q2, bare in found)
    if len(TRAINER_KEYS.intersection(keys)) < 2:
        named = tuple(_ALIASES.get(k, k) for k in keys)
        if named == keys or len(TRAINER_KEYS.intersection(named)) < 2:
            return None, True
        keys = named
    return _convert(keys, raws)


def _convert(keys: tuple[str, ...], raws: tuple[str, ...]) -> tuple[dict[str, Any], bool]:
    """The dict of keys to to_number(raw), and whether no value is NaN/inf."""
    conv = _CONVERTED
    conv.nonfinite = False
    # the few values not cached (a row's step counter, times) read by _Converted.__missing__, the rest in C
    values = dict(zip(keys, map(conv.__getitem__, raws)))
    return values, not conv.nonfinite   # nan or +-inf: never cached, so only a miss gives one


class _Converted(dict):  # type: ignore[type-arg]
    """The type of _CONVERTED: a dict (its readers' ``get`` is dict.get) whose ``[text]`` of a text not in it gives
    what a run of step lines reads that value as (sources/step_runs.py, mapped over a run's values in C, so only the
    misses cost a Python call): the text itself for a step counter or a time (to_number gives back a text holding a
    "/" or ending in "s"; new on every row, so not kept), else ``remember(text)``; a NaN/inf sets ``nonfinite``."""

    __slots__ = ("nonfinite",)

    def __init__(self) -> None:
        super().__init__()
        self.nonfinite = False

    def __missing__(self, text: str) -> Any:
        if "/" in text or text[-1:] == "s":
            return text
        x = remember(text)
        if type(x) is float and x - x != 0:   # never kept: seen here every time
            self.nonfinite = True
        return x


_CONVERTED: _Converted = _Converted()   # to_number of the value texts seen lately ('0', '1', '0.25', '4s' ...)
_CONVERTED_MAX = 4096


def remember(text: str) -> Any:
    """to_number(text) for a text not in _CONVERTED, which keeps it unless it is NaN/inf (those are never cached, so
    a reader that looks a text up in _CONVERTED first sees every NaN/inf here). The readers look up
    ``_CONVERTED.get(text)`` themselves: a hit costs no call on their per-value paths."""
    x = to_number(text)
    if not (type(x) is float and x - x != 0):
        if len(_CONVERTED) >= _CONVERTED_MAX:
            _CONVERTED.clear()
        _CONVERTED[text] = x
    return x
_KEY_VALUE, _NEXT = "': '", "', '"
_QUOTED_DICT = lazyre.compile(r"""\{'[^'"]{1,120}': '[^'"]*'(?:, '[^'"]{1,120}': '[^'"]*')*\}""")


def _quoted_pairs(s: str) -> tuple[tuple[str, ...], list[str]] | None:
    """(keys, values) of a (stripped) line that is a whole printed dict whose keys and values are all
    single-quoted and quote-free (transformers 5: ``{'loss': '0', 'grad_norm': '0.12'}``), without _PAIR;
    None for anything else. On such a line _PAIR.findall finds exactly these pairs.

    The line is checked whole and split at its separators: these are its only quotes, so scanning left to
    right finds exactly them, except where a key after the first is ': ' (the ', ' before it and its ': '
    would read as a second key/value separator): such lines take _PAIR. The rows of a run print the same
    keys in the same order: once a key sequence has been seen twice, _LAYOUTS holds a pattern with its
    keys written out that reads the values of such a line in one match (the same pairs, as its values are
    quote-free too)."""
    if not _QUOTED_DICT.fullmatch(s):
        return None
    inner = s[2:-2]
    if "', ': '" in inner:
        return None
    parts = inner.replace(_KEY_VALUE, _NEXT).split(_NEXT)
    keys, values = tuple(parts[0::2]), parts[1::2]
    _learn_layout(keys)
    return keys, values


_LAYOUTS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = ()   # newest first; rebound, never mutated
_LAYOUT_SEEN: dict[tuple[str, ...], int] = {}
_MAX_LAYOUTS = 4


def _learn_layout(keys: tuple[str, ...]) -> None:
    global _LAYOUTS
    seen = _LAYOUT_SEEN.get(keys, 0) + 1
    if len(_LAYOUT_SEEN) >= 1024:
        _LAYOUT_SEEN.clear()
    _LAYOUT_SEEN[keys] = seen
    if seen != 2 or len(TRAINER_KEYS.intersection(keys)) < 2:
        return
    value = "'([^'\"]*)'"
    pattern = re.compile("\\{" + ", ".join(f"'{re.escape(k)}': {value}" for k in keys) + "\\}")
    _LAYOUTS = ((keys, pattern),) + _LAYOUTS[:_MAX_LAYOUTS - 1]


def parse_jsonl(text: str, fast_ok: bool = True) -> dict[str, Any] | None:
    """One logging.jsonl record (JSON with NaN/Infinity allowed), numbers as floats.

    With orjson (optional, the `full` extra) a record is decoded ~4x faster; a record orjson refuses (NaN,
    Infinity, a number beyond float, a lone surrogate) or one holding a list or an object (orjson reads a
    huge integer inside them as a float, json as an int) is decoded again by json: the values are json's.
    ``fast_ok`` False: json alone (the same values), for a reader of a few rows that would pay more to import the
    faster decoder than it saves."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    obj = None
    fast = None if not fast_ok else _fast_loads if _fast_loads is not _UNSET else _fast_decoder()
    if fast is not None:
        try:
            obj = fast(text)
        except (ValueError, RecursionError):  # msgspec: RecursionError thousands deep (orjson: a ValueError)
            obj = None
        else:
            if not isinstance(obj, dict):
                return None
            out: dict[str, Any] = {}
            conv = _CONVERTED
            for k, v in obj.items():
                t = type(v)
                if t is float:
                    out[k] = v
                elif t is int:
                    try:
                        out[k] = float(v)
                    except OverflowError:  # msgspec reads a 400-digit integer as an int (orjson refuses it)
                        out[k] = to_number(v)
                elif t is str:
                    x = conv.get(v)
                    out[k] = x if x is not None else remember(v)
                elif t is dict or t is list:
                    break
                else:
                    out[k] = to_number(v)
            else:
                return out
    try:
        obj = json.loads(text)
    except RecursionError:
        return None  # nested thousands deep: not a metrics record
    except ValueError:
        return parse_console(text)  # a cut last line: take what is there
    if not isinstance(obj, dict):
        return None
    plain: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for k, v in obj.items():
        t = type(v)
        if t is float:   # what to_number gives a float, without its checks (most values of a row)
            plain[k] = v
        elif t is dict or t is list:
            nested[k] = v
        else:
            plain[k] = to_number(v)
    return plain | nested if nested else plain


def jsonl_finite(values: dict[str, Any]) -> bool | None:
    """``Metrics.finite`` of a parse_jsonl record: True when no value is NaN/inf (its texts that read as numbers
    are floats already, and the others read as no number), else None (not known: a rule looks itself)."""
    for x in values.values():
        if type(x) is float and x - x != 0:
            return None
    return True


def _fast_decoder() -> Any:
    """The faster JSON decoder, imported on the first logging.jsonl record (never for a console log: msgspec
    alone costs ~9 ms of import): orjson (the `full` extra), else msgspec (ms-swift's GRPO trainer imports it,
    so a swift environment has it; as fast, same refusals), else None (json)."""
    global _fast_loads
    try:  # optional: wheels for Linux and macOS, x86_64 and arm64
        from orjson import loads
    except ImportError:  # pragma: no cover - depends on the environment
        try:
            from msgspec.json import decode as loads  # type: ignore[assignment]
        except ImportError:
            loads = None  # type: ignore[assignment]
    _fast_loads = loads
    return loads


_UNSET: Any = object()
_fast_loads: Any = _UNSET   # the decoder once looked up (None: json only)


def is_summary(values: dict[str, Any]) -> bool:
    """The final object ms-swift appends to logging.jsonl when main() exits."""
    return "last_model_checkpoint" in values or "model_parameter_info" in values or "log_history" in values


def is_step(values: dict[str, Any]) -> bool:
    return ("loss" in values or "reward" in values or "grad_norm" in values) and not is_summary(values) \
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
