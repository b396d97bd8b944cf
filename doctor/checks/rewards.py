"""Reward functions: names that do not resolve, weights that do not line up, and exceptions raised
inside a reward function while the trainer scores completions.

ms-swift looks ``--reward_funcs`` names up in the ``orms`` registry (built-ins in ``swift/rewards/orm.py``,
``swift/plugin/orm.py`` in 3.x; user rewards are added to it by the ``--external_plugins`` file). The
module named in the error text tells the version: ``swift.llm.plugin`` (3.1.1-3.6), ``swift.plugin``
(3.7-3.12), ``swift.rewards`` (4.x) (swift-notes §1.4). Every dataset column besides ``messages``
reaches the reward function as a keyword argument (FAQ Q25), which is why a missing column shows up
as ``KeyError: 'solution'`` or ``__call__() missing 1 required positional argument: 'solution'``.
"""
from __future__ import annotations

import re
from typing import Any

from ..model import EXCEPTION, Evidence, ExceptionInfo, Finding, Frame
from ..rules import FinishContext, Hit, Rule
from ..sources.swiftconfig import RunConfig

BUILTIN_ORMS = ("toolbench", "math", "accuracy", "format", "react_format", "cosine", "repetition", "soft_overlong")
# class name printed in rewards/<Name>/mean -> the --reward_funcs name
CLASS_TO_FLAG = {
    "MathAccuracy": "accuracy", "Format": "format", "ReActFormat": "react_format", "ReactORM": "toolbench",
    "MathORM": "math", "CosineReward": "cosine", "RepetitionPenalty": "repetition", "SoftOverlong": "soft_overlong",
}
_MODULE_VERSION = {
    "swift.llm.plugin": "ms-swift 3.1-3.6",
    "swift.plugin": "ms-swift 3.7-3.12",
    "swift.rewards": "ms-swift 4.x",
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


def not_registered_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
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
    return {"message": msg, "fix": fix}


def weights_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    n_w, n_f = _int(g.get("nw")), _int(g.get("nf"))
    funcs = reward_names(run)
    models = as_list(run.args.get("reward_model"))
    weights = as_list(run.args.get("reward_weights"))
    msg = (f"--reward_weights has {n_w if n_w is not None else '?'} value(s) but the trainer has "
           f"{n_f if n_f is not None else '?'} reward function(s): one weight per reward function, in order.")
    fix: list[str] = []
    parts = []
    if funcs:
        parts.append(f"--reward_funcs {' '.join(funcs)}")
    if models:
        parts.append(f"--reward_model {' '.join(models)}")
    if parts:
        fix.append(f"This run has {' and '.join(parts)}: the weights follow that order (reward functions first, then "
                   f"each reward model; gym_reward counts too).")
    if n_f:
        base = [w for w in weights][:n_f]
        while len(base) < n_f:
            base.append("1.0")
        fix.append(f"Pass exactly {n_f} weights, e.g. --reward_weights {' '.join(base)}, or drop --reward_weights "
                   f"(all 1.0).")
    return {"message": msg, "fix": fix}


def missing_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    mm = ctx.run.swift_major_minor
    fix = ["Add --reward_funcs with one or more built-ins (" + ", ".join(BUILTIN_ORMS) + "), e.g. --reward_funcs "
           "accuracy format, or --reward_model <dir>, or a custom name registered in orms by an --external_plugins "
           "file."]
    if mm is None or mm < (4, 4):
        fix.append("ms-swift >= 4.4 no longer raises here: without rewards it trains with reward 0 and no learning "
                   "signal, so set rewards explicitly either way.")
    return {"fix": fix}


def rm_plugin_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    run = ctx.run
    models = as_list(run.args.get("reward_model"))
    plugins = as_list(run.args.get("reward_model_plugin"))
    if g.get("np") is not None:
        n_p, n_m = _int(g.get("np")), _int(g.get("nm"))
        msg = (f"{n_p} --reward_model_plugin value(s) for {n_m} --reward_model(s): each reward model needs its own "
               f"plugin entry, in the same order.")
        fix = [f"Pass {n_m} values to --reward_model_plugin (use the built-in 'default' for a plain reward model), or "
               f"drop --reward_model_plugin."]
        if models:
            fix.append(f"Reward models in this run: {' '.join(models)}.")
        return {"message": msg, "fix": fix}
    name = g.get("name") or "?"
    msg = (f"--reward_model_plugin '{name}' is not registered in the rm_plugins registry.")
    fix = [f"Register it in your --external_plugins file: `rm_plugins['{name}'] = MyRMPlugin` (ms-swift "
           f"docs: Reward Model plugin), or use a built-in plugin name ('default', 'genrm')."]
    if plugins:
        fix.append(f"This run asked for --reward_model_plugin {' '.join(plugins)}.")
    return {"message": msg, "fix": fix}


def soft_overlong_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    L = run.int_arg("max_completion_length") or 512
    cache = max(1, L // 4)
    return {"fix": [f"Add --soft_cache_length {cache} (the last tokens before max_completion_length {L} over which the "
                    f"soft_overlong penalty ramps up; soft_max_length defaults to max_completion_length), or drop "
                    f"soft_overlong from --reward_funcs."]}


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------- exceptions in reward code
# the frames that call reward functions: ms-swift 3.x/4.x trainer, rl_core (4.5+), trl, open-r1 style
_CALL_FUNCS = {"_compute_rewards_per_func", "compute_rewards_per_func", "_calculate_rewards", "_score_completions",
               "score_completions"}
_CALL_CODE = ("reward_func(", "reward_model_plugin(", "reward_funcs[idx](", "reward_funcs[i](")
_REWARD_PATHS = ("swift/rewards/", "swift/plugin/orm.py", "swift/plugin/prm.py", "swift/plugin/rm_plugin.py",
                 "swift/llm/plugin/orm.py", "open_r1/rewards.py", "/rewards.py", "/reward_func", "/reward_fn",
                 "plugin/plugin.py", "/orm.py")
_NOT_OURS = ("OutOfMemoryError", "OOM", "DistBackendError", "ChildFailedError", "KeyboardInterrupt",
             "ModuleNotFoundError", "ImportError")
_COMM = re.compile(r"NCCL|[Tt]imeout|timed out|gloo|ProcessGroup|Connection")
_SIZE = re.compile(r"expanded size of the tensor|must match the (?:existing )?size|shape mismatch|could not broadcast")
_MISSING_ARG = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (?P<names>.+)$")
_KEYERR = re.compile(r"""^['"](?P<col>[^'"]{1,80})['"]$""")


def _user_plugin_match(path: str, plugins: list[str]) -> bool:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    for p in plugins:
        pb = p.replace("\\", "/").rsplit("/", 1)[-1]
        if pb and pb == base:
            return True
    return False


def reward_frames(exc: ExceptionInfo, plugins: list[str]) -> tuple[int | None, list[Frame]]:
    """(index of the frame that calls the reward function, the frames inside reward code)."""
    call_idx = None
    for i, fr in enumerate(exc.frames):
        if fr.func in _CALL_FUNCS or any(c in fr.code for c in _CALL_CODE):
            call_idx = i
    inside: list[Frame] = []
    start = call_idx + 1 if call_idx is not None else 0
    for fr in exc.frames[start:]:
        p = fr.path.replace("\\", "/")
        if call_idx is not None or any(m in p for m in _REWARD_PATHS) or _user_plugin_match(p, plugins):
            inside.append(fr)
    return call_idx, inside


def _short(path: str) -> str:
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    return p


class RewardFunctionRaised(Rule):
    """An exception raised while a reward function scored completions (GD606)."""

    kinds = frozenset({EXCEPTION})

    def __init__(self, meta):
        super().__init__(meta)
        self.hits: list[ExceptionInfo] = []

    def feed(self, kind: str, payload: Any) -> None:
        if kind != EXCEPTION or len(self.hits) > 50:
            return
        exc: ExceptionInfo = payload
        if any(n in exc.type for n in _NOT_OURS) or "out of memory" in exc.message.lower():
            return
        if "math_verify" in exc.message:
            return  # a missing dependency, not a reward bug
        self.hits.append(exc)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        plugins = plugin_files(ctx.run)
        chosen = None
        for exc in sorted(self.hits, key=lambda e: e.seq):
            call_idx, inside = reward_frames(exc, plugins)
            direct = call_idx is not None and call_idx == len(exc.frames) - 1 and not _COMM.search(exc.message)
            if inside or direct:
                chosen = (exc, call_idx, inside)
                break
        if chosen is None:
            return []
        exc, call_idx, inside = chosen
        same = [e for e in self.hits if e.type == exc.type and e.message == exc.message]
        ranks = tuple(sorted({e.rank for e in same if e.rank is not None}))
        where = inside[-1] if inside else exc.frames[-1]
        own = [f for f in inside if "site-packages" not in f.path and "dist-packages" not in f.path]
        top = own[0] if own else (inside[0] if inside else where)
        fn = top.func if top.func not in ("<module>",) else "?"
        text = f"{exc.type}: {exc.message}" if exc.message else exc.type
        msg = (f"A reward function raised `{text}` while scoring completions, in {_short(top.path)}:{top.lineno} "
               f"({fn})")
        msg += f"; raised at {_short(where.path)}:{where.lineno} in {where.func}." if where is not top else "."
        fix: list[str] = []
        col = None
        if exc.short_type == "KeyError":
            m = _KEYERR.match(exc.message.strip())
            col = m.group("col") if m else None
        m2 = _MISSING_ARG.search(exc.message)
        if m2:
            cols = re.findall(r"'([^']+)'", m2.group("names"))
            col = ", ".join(cols) if cols else None
        if col:
            msg += (f" The reward reads the dataset column '{col}', which the rows that reached it do not have: "
                    f"ms-swift passes every extra dataset column to reward functions as keyword arguments.")
            ds = as_list(ctx.run.args.get("dataset"))
            target = f"every row of {', '.join(ds)}" if ds else "every row of --dataset"
            fix.append(f"Add a '{col}' field to {target} (e.g. {{\"messages\": [...], \"{col}\": "
                       f"\"...\"}}), or map an existing column onto it with --columns '{{\"answer\": \"{col}\"}}'.")
            in_orm = any("orm.py" in f.path for f in inside)
            if col == "solution" and (in_orm or "accuracy" in reward_names(ctx.run)):
                fix.append("The built-in accuracy reward (MathAccuracy) compares each completion with the 'solution' "
                           "column (FAQ: math accuracy needs a solution field).")
            fix.append(f"In a custom reward read it defensively: `kwargs.get('{col}')` and return None for rows "
                       f"without it (None rewards are ignored).")
        elif not inside and _SIZE.search(exc.message):
            msg += (" It was raised where the trainer stores the reward outputs: a reward function returned a list "
                    "whose length differs from the number of completions it was given.")
            fix.append("Return exactly one float (or None) per completion, in order: len(output) == len(completions).")
        else:
            fix.append(f"Fix the reward code at {_short(where.path)}:{where.lineno}: call it offline on a few "
                       f"completions and the dataset columns (kwargs) to reproduce the error before restarting.")
            fix.append("A reward must return one float (or None) per completion: `def __call__(self, completions, "
                       "**kwargs) -> List[float]`; every extra dataset column arrives in kwargs.")
        if plugins:
            fix.append(f"Reward plugin file of this run: {', '.join(plugins)}.")
        if ranks:
            fix.append(f"Raised on rank(s) {', '.join(map(str, ranks))}: every rank scores its own completions, so "
                       f"the same bad rows fail everywhere.")
        return [self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                          count=len(same), ranks=ranks, seq=exc.seq)]
