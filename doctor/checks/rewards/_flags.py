"""Reward flags of a run, shared by the rewards rules: --reward_funcs names, the built-in rewards and the
class names they log under (rewards/<Name>/mean), list-valued flags."""
from __future__ import annotations

import re
from typing import Any

from ...sources.swiftconfig import RunConfig

BUILTIN_ORMS = ("toolbench", "math", "accuracy", "format", "react_format", "cosine", "repetition", "soft_overlong")
# class name printed in rewards/<Name>/mean -> the --reward_funcs name
CLASS_TO_FLAG = {
    "MathAccuracy": "accuracy", "Format": "format", "ReActFormat": "react_format", "ReactORM": "toolbench",
    "MathORM": "math", "CosineReward": "cosine", "RepetitionPenalty": "repetition", "SoftOverlong": "soft_overlong",
}


def as_list(v: Any) -> list[str]:
    """A flag value that may be one string, a list, or a whitespace/comma separated string."""
    if v is None or v is False or v is True:
        return []
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v if x is not None and str(x) != ""]
    s = str(v).strip().strip("[]")
    if not s:
        return []
    return [p.strip().strip("'\"") for p in re.split(r"[,\s]+", s) if p.strip().strip("'\"")]


def reward_names(run: RunConfig) -> list[str]:
    return as_list(run.args.get("reward_funcs"))


def plugin_files(run: RunConfig) -> list[str]:
    return as_list(run.args.get("external_plugins"))


def flag_name(reward_name: str) -> str:
    return CLASS_TO_FLAG.get(reward_name, reward_name)


def int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None
