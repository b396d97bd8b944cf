"""A launcher script or command line read into what it says, apart from the run it is read into.

``read_command(text)`` gives the env assignments, the launches (``split_launches``), a pasted YAML config's settings, and
either ms-swift's subcommand with its torchrun options and flags, another framework's training launch
(sources/launchers.py), or a bare argument list's flags. ``RunConfig.add_command`` (sources/swiftconfig.py) merges that
into the run's configuration, which depends on what the run already holds; this reading depends on the text only.

So the reading of a text seen again is kept (a few texts, a short one each): a log may print ms-swift's ``run sh:``
launcher line once per appended run, and the benchmark's shuffled SHORT mix repeats it ~35,000 times (~150 us of CPU
to feed one when each was read again, ~32 us now).
Every call returns a deep copy of the kept reading (``_own``: new containers and dataclasses, ~17 us for that line,
half of ``copy.deepcopy``'s time): what a caller stores (a flag's list value in ``RunConfig.args``, a ``Launch``) is its
own, so no later change to it can reach the kept reading, nor another run's.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, fields, is_dataclass
from functools import lru_cache
from typing import Any

from .. import lazyre
from . import launchers
from .argv import ENV_NAMES, parse_argv, parse_value, split_shell

_ENV = lazyre.compile(r"(?:^|[\s;])(?:export\s+)?(" + "|".join(ENV_NAMES) + r")=(\"[^\"]*\"|'[^']*'|[^\s\\;]+)")
_SWIFT_CMD = lazyre.compile(r"(?:^|\s)(?:swift\s+(rlhf|sft|pt|rollout|export|infer|deploy)|\S*swift/cli/(rlhf|sft|pt|rollout|export|infer|deploy)\.py)\b")
_LAUNCH = lazyre.compile(r"(?:^|(?<=[\s;]))(?:swift\s+(rlhf|sft|pt|rollout|deploy|infer)\b|trl\s+(vllm-serve)\b|"
                         r"vllm\s+(serve)\b|\S*swift/cli/(rlhf|sft|pt|rollout|deploy|infer)\.py\b|(accelerate)\s+launch\b)")
_ENV_LINE = lazyre.compile(r"\s*(?:(?:export\s+)?[A-Z][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|[^\s\\;]+)[\s;]*)+\\?\s*")
_ENV_ANY = lazyre.compile(r"(?:^|[\s;])(?:export\s+)?([A-Z][A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s\\;]+)")
_YAML_KV = lazyre.compile(r"^([a-z][a-z0-9_]*)\s*:\s+(\S.*?)\s*$")
_TORCHRUN_KEYS = ("nproc_per_node", "nnodes", "node_rank", "master_port")
_BARE_MARKS = ("rlhf_type", "model", "num_generations", "reward_funcs", "external_plugins")
KEPT_MAX = 16            # readings kept
KEPT_TEXT_MAX = 64 << 10  # characters of a text whose reading is kept (a longer one is read every time)


# the program each Launch.command is, as a person types it, and the model servers among them
PROGRAMS = {"rlhf": "swift rlhf", "sft": "swift sft", "pt": "swift pt", "rollout": "swift rollout",
            "infer": "swift infer", "deploy": "swift deploy", "export": "swift export", "vllm-serve": "trl vllm-serve",
            "serve": "vllm serve", "accelerate": "accelerate launch"}
SERVER_COMMANDS = frozenset({"rollout", "vllm-serve", "serve", "deploy"})


@dataclass
class Launch:
    """One program started by a launcher script: ``swift rlhf``, ``swift rollout``, ``trl vllm-serve``..."""

    command: str
    env: dict[str, str] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)


@dataclass
class CommandRead:
    """What a command text says (see the module). ``flags`` None: nothing past the launches and the YAML (no swift
    subcommand, no training launch, no bare argument list with a GRPO flag)."""

    env: list[tuple[str, str]]                # each assignment of an ENV_NAMES variable, in order
    launches: list[Launch]
    yaml: dict[str, Any]                      # a pasted YAML config's top-level settings
    command: str | None = None                # ms-swift's subcommand
    torchrun: dict[str, Any] = field(default_factory=dict)   # the torchrun options before it
    launch: launchers.LaunchRead | None = None   # another framework's training launch (then no flags)
    flags: dict[str, Any] | None = None


def read_command(text: str) -> CommandRead:
    """The reading of ``text``, the caller's own copy (see the module)."""
    if len(text) > KEPT_TEXT_MAX:
        return _read(text)
    return _own(_kept(text))


_ATOMS = frozenset({str, int, float, bool, type(None), bytes, complex})


def _own(v: Any) -> Any:
    """A deep copy of a reading: its lists, dicts, tuples, sets and dataclasses new (parse_value's values are texts,
    numbers, None and what ``ast.literal_eval`` builds of them); anything else through ``copy.deepcopy``."""
    t = type(v)
    if t in _ATOMS:
        return v
    if t is list:
        return [_own(x) for x in v]
    if t is dict:
        return {k: _own(x) for k, x in v.items()}
    if t is tuple:
        return tuple([_own(x) for x in v])
    if t is set:
        return set(v)   # of hashable, so immutable, values
    if is_dataclass(v):
        out = copy.copy(v)
        for f in fields(v):
            object.__setattr__(out, f.name, _own(getattr(v, f.name)))
        return out
    return copy.deepcopy(v)


@lru_cache(maxsize=KEPT_MAX)
def _kept(text: str) -> CommandRead:
    return _read(text)


# a shell variable set on a line of its own (`nproc_per_node=8`, `export MODEL=/m`), and a use of one
_SHELL_SET = lazyre.compile(r"(?m)^[ \t]*(?:export[ \t]+)?([A-Za-z_]\w*)=(\"[^\"\n]*\"|'[^'\n]*'|[^\s\\;'\"$`]+)[ \t]*$")
_SHELL_USE = lazyre.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")


def expand_variables(text: str) -> str:
    """``text`` with ``$name`` and ``${name}`` replaced by the value a line of the same text sets them to
    (``nproc_per_node=8`` then ``NPROC_PER_NODE=$nproc_per_node``); a variable set elsewhere (the caller's shell)
    stays as written, a value the reader then takes as unknown."""
    if "$" not in text or "=" not in text:
        return text
    values = {m.group(1): m.group(2).strip("'\"") for m in _SHELL_SET.finditer(text)}
    if not values:
        return text
    return _SHELL_USE.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


def _read(text: str) -> CommandRead:
    text = expand_variables(text)
    env = [(m.group(1), m.group(2).strip("'\"")) for m in _ENV.finditer(text)]
    read = CommandRead(env, split_launches(text), yaml_args(text))
    m = _SWIFT_CMD.search(text)
    if not m:
        launch = launchers.read_launch(text)
        if launch is not None and launchers.is_training(launch):
            read.launch = launch
            return read
        # a bare argument list ("--rlhf_type grpo --model ...") as some people paste it
        if "--" not in text:
            return read
        flags = parse_argv(split_shell(text))
        if any(k in flags for k in _BARE_MARKS):
            read.flags = flags
        return read
    read.command = m.group(1) or m.group(2)
    before = split_shell(text[:m.start()])
    tr = parse_argv([t for t in before if t.startswith("--") or not t.startswith("-")])
    read.torchrun = {k: tr[k] for k in _TORCHRUN_KEYS if k in tr}
    read.flags = parse_argv(split_shell(text[m.end():]))
    return read


def split_launches(text: str) -> list[Launch]:
    """Each launch in a script with its own env block (the lines of ``VAR=value`` right above it, or inline)
    and its own flags (up to the next launch's env block)."""
    if len(text) > 1_000_000:
        return []
    found = list(_LAUNCH.finditer(text))
    starts = []
    for m in found:
        line_start = text.rfind("\n", 0, m.start()) + 1
        start = line_start
        while start > 0:
            prev_start = text.rfind("\n", 0, start - 1) + 1
            if not _ENV_LINE.fullmatch(text[prev_start:start - 1]):
                break
            start = prev_start
        starts.append(start)
    out = []
    for i, m in enumerate(found):
        end = starts[i + 1] if i + 1 < len(found) else len(text)
        env = {e.group(1): e.group(2).strip("'\"") for e in _ENV_ANY.finditer(text[starts[i]:m.start()])}
        words = split_shell(text[m.end():max(end, m.end())])
        flags = parse_argv(words)
        if m.group(3) and words and not words[0].startswith("-") and "model" not in flags:
            # `vllm serve <model_tag>`: vLLM's CLI (entrypoints/cli/serve.py) takes the model as its positional
            # argument and sets args.model from it
            flags["model"] = words[0]
        out.append(Launch(next(g for g in m.groups() if g), env, flags))
    return out


def yaml_args(text: str) -> dict[str, Any]:
    """Top-level ``key: value`` lines of a pasted YAML config (two or more), comments dropped; an indented line is a
    nested mapping's (``gradient_checkpointing_kwargs:`` / ``  use_reentrant: false``), not a setting of the run."""
    out: dict[str, Any] = {}
    for line in text.splitlines()[:2000]:
        if line[:1].isspace():
            continue
        m = _YAML_KV.match(line.strip())
        if not m:
            continue
        val = re.sub(r"\s+#.*$", "", m.group(2)).strip()
        if not val or val.startswith(("//", "|", ">", "&", "*")):
            continue
        out[m.group(1)] = parse_value(val.strip("'\"") if val[:1] in "'\"" else val)
    return out if len(out) >= 2 else {}


__all__ = ["CommandRead", "Launch", "read_command", "split_launches", "yaml_args"]
