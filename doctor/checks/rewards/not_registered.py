"""GD601: a --reward_funcs name that is neither a built-in nor registered in the ``orms`` registry.

ms-swift looks ``--reward_funcs`` names up in the ``orms`` registry (built-ins in ``swift/rewards/orm.py``,
``swift/plugin/orm.py`` in 3.x; user rewards are added to it by the ``--external_plugins`` file). The
module named in the error text tells the version: ``swift.llm.plugin`` (3.1.1-3.6), ``swift.plugin``
(3.7-3.12), ``swift.rewards`` (4.x) (swift-notes §1.4).
"""
from __future__ import annotations

import re

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...sources.swiftconfig import RunConfig
from ._flags import BUILTIN_ORMS, plugin_files, reward_names

_MODULE_VERSION = {
    "swift.llm.plugin": "ms-swift 3.1-3.6",
    "swift.plugin": "ms-swift 3.7-3.12",
    "swift.rewards": "ms-swift 4.x",
}


def _version_of_module(module: str | None, run: RunConfig) -> tuple[int, int] | None:
    mm = run.swift_major_minor
    if mm is not None:
        return mm
    if module == "swift.rewards":
        return (4, 0)
    if module == "swift.plugin":
        return (3, 7)
    if module == "swift.llm.plugin":
        return (3, 6)
    if run.major == 4:
        return (4, 0)
    if run.major == 3:
        return (3, 7)
    return None


def _orm_import(mm: tuple[int, int] | None) -> str:
    if mm is None or mm >= (4, 0):
        return "from swift.rewards import ORM, orms"
    return "from swift.plugin import ORM, orms"  # 3.x: the error text says swift.llm.plugin up to 3.6


def not_registered_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    names = []
    for h in hits:
        n = (h.groups.get("name") or "").strip()
        if n and n not in names:
            names.append(n)
    module = hits[0].groups.get("module")
    mm = _version_of_module(module, run)
    plugins = plugin_files(run)
    asked = reward_names(run)
    shown = ", ".join(f"'{n}'" for n in names) or "a name"
    where = f" ({_MODULE_VERSION[module]} wording)" if module in _MODULE_VERSION else ""
    msg = (f"--reward_funcs names {shown}, which is neither a built-in reward nor registered in the `orms` "
           f"registry{where}. ms-swift raises this in the trainer, after the model has loaded.")
    fix: list[str] = []
    for n in names:
        close = [b for b in BUILTIN_ORMS if b in n or n in b or n.replace("_reward", "") == b]
        if close and n not in BUILTIN_ORMS:
            fix.append(f"If you meant the built-in reward, use --reward_funcs {close[0]} (built-ins: "
                       f"{', '.join(BUILTIN_ORMS)}).")
    cls = "MyReward"
    if names:
        cls = "".join(p.capitalize() for p in re.split(r"[^A-Za-z0-9]+", names[0]) if p) or cls
    reg = f"orms['{names[0] if names else 'my_reward'}'] = {cls}"
    if plugins:
        fix.append(f"In {plugins[0]} (your --external_plugins file) define the class and register it under exactly "
                   f"the name you pass: `{_orm_import(mm)}` ... `class {cls}(ORM): def __call__(self, completions, "
                   f"**kwargs) -> List[float]` ... `{reg}`. Check that the file ms-swift loads is the one you edited "
                   f"(an absolute path avoids loading a stale copy).")
    elif not run.args:
        fix.append(f"Define the reward in your --external_plugins file and register it under exactly this name: "
                   f"`{_orm_import(mm)}` ... `class {cls}(ORM): def __call__(self, completions, **kwargs) -> "
                   f"List[float]` ... `{reg}`; pass the file with --external_plugins /abs/path/plugin.py and check "
                   f"that the file loaded is the one you edited.")
    else:
        fix.append(f"No --external_plugins file was given, so only built-ins can resolve. Write a plugin file with "
                   f"`{_orm_import(mm)}`, a class `{cls}(ORM)` whose `__call__(self, completions, **kwargs)` returns "
                   f"one float per completion, and `{reg}`; then pass --external_plugins /abs/path/plugin.py.")
    if asked and any(a not in BUILTIN_ORMS for a in asked):
        custom = [a for a in asked if a not in BUILTIN_ORMS]
        fix.append(f"Names in this run's --reward_funcs that must come from the plugin: {', '.join(custom)}; built-ins "
                   f"are {', '.join(BUILTIN_ORMS)}.")
    if mm is not None and mm < (4, 0) and module == "swift.llm.plugin":
        fix.append("In ms-swift 3.x the registry is swift.plugin.orms (swift/plugin/orm.py; the error text of "
                   "3.1-3.6 calls it swift.llm.plugin); the repository's example is "
                   "examples/train/grpo/plugin/plugin.py.")
    return Diagnosis(message=msg, fix=tuple(fix))
