"""A ``swift rlhf`` command line as ms-swift itself reads it (swift/cli/main.py, swift/utils/utils.py parse_args):

- leading ``NAME=value`` assignments (``NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 swift rlhf ...``) and the
  process environment (only the variables ms-swift reads);
- ``swift rlhf``, ``python -m swift.cli.rlhf``, ``python .../swift/cli/rlhf.py`` or ``torchrun ... swift/cli/rlhf.py``;
- a YAML/JSON config as the first argument (``swift rlhf cfg.yaml --flag v``): its keys become flags placed
  before the rest, so the command line wins (argparse keeps the last value); its ``ENV:`` block is exported
  unless the variable is already set;
- ``--flag value``, ``--flag=value``, multi-value flags (``--reward_funcs a b``), bare boolean flags.
Reads only JSON/YAML text (never executes anything). Sources never judge: unknown flags are returned, not reported.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import lazyre
from .argv import ENV_NAMES as _ENV_NAMES
from .argv import flag_dict, group_flags, parse_value
from .safeio import open_regular

MAX_JSON = 4 * 1024 * 1024
_ASSIGN = lazyre.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SUBCMDS = ("rlhf", "sft", "pt", "rollout", "infer", "export", "deploy")


class CommandError(ValueError):
    """One line for the user (exit 2)."""


@dataclass
class SwiftCommand:
    subcommand: str | None
    flags: list[tuple[str, list[str]]]          # in order, as typed (config-file flags first)
    inline_env: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)   # what ms-swift sees: process env, then inline, then ENV:
    torchrun: dict[str, Any] = field(default_factory=dict)
    config_file: str | None = None
    config_flags: set[str] = field(default_factory=set)
    stray: list[str] = field(default_factory=list)      # values without a flag
    text: str = ""


def read_json(path: Path) -> Any:
    with open_regular(path) as f:
        data = f.read(MAX_JSON + 1)
    if len(data) > MAX_JSON:
        raise CommandError(f"{path}: larger than {MAX_JSON // 1024 // 1024} MiB; not a configuration file")
    from .jsoncost import too_costly
    costly = too_costly(data)  # 4 MiB of `{"a":[]},` takes ~120 MiB to decode
    if costly is not None:
        raise CommandError(f"{path}: {costly}; not a configuration file")
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as e:
        raise CommandError(f"{path}: not valid JSON ({e}); fix the file") from None


def read_yaml_flat(text: str) -> dict[str, Any]:
    """The YAML ms-swift config files use: top-level ``key: value``, ``key:`` + ``- item`` lists, and one level of
    nesting (``ENV:``). Enough for swift's examples; anything fancier is kept as text."""
    out: dict[str, Any] = {}
    cur: str | None = None
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if indent == 0:
            key, _, val = s.partition(":")
            key, val = key.strip(), val.strip()
            if not val:
                out[key] = None
                cur = key
            else:
                out[key] = _yaml_scalar(val)
                cur = None
        elif cur is not None:
            if s.startswith("- "):
                if not isinstance(out.get(cur), list):
                    out[cur] = []
                out[cur].append(_yaml_scalar(s[2:].strip()))
            elif ":" in s:
                if not isinstance(out.get(cur), dict):
                    out[cur] = {}
                k, _, v = s.partition(":")
                out[cur][k.strip()] = _yaml_scalar(v.strip())
    return out


def _yaml_scalar(v: str) -> Any:
    if v[:1] in "'\"" and v[-1:] == v[:1]:
        return v[1:-1]
    if v.startswith("[") and v.endswith("]"):
        return [_yaml_scalar(x.strip()) for x in v[1:-1].split(",") if x.strip()]
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", "none"):
        return None
    return parse_value(v)


def read_config(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """(flags, ENV) of a swift YAML/JSON config file."""
    try:
        if path.suffix.lower() == ".json":
            obj = read_json(path)
        else:
            with open_regular(path) as f:
                obj = read_yaml_flat(f.read(MAX_JSON).decode("utf-8", errors="replace"))
    except OSError as e:
        raise CommandError(f"{path}: cannot read the config file ({e.strerror}); check the path") from None
    if not isinstance(obj, dict):
        raise CommandError(f"{path}: a swift config file must hold key: value pairs")
    env = obj.pop("ENV", None)
    return obj, {str(k): str(v) for k, v in (env or {}).items()} if isinstance(env, dict) else {}


def _config_tokens(cfg: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in cfg.items():
        out.append(f"--{k}")
        if isinstance(v, list):
            out += [str(x) for x in v]
        elif isinstance(v, dict):
            out.append(json.dumps(v, ensure_ascii=False))
        elif isinstance(v, bool):
            out.append(str(v))
        elif v is not None:
            out.append(str(v))
    return out


def parse_command(argv: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> SwiftCommand:
    env = dict(os.environ if env is None else env)
    toks = list(argv)
    if toks and toks[0] == "--":
        toks = toks[1:]
    if len(toks) == 1 and " " in toks[0]:
        import shlex
        toks = shlex.split(toks[0])
    inline: dict[str, str] = {}
    i = 0
    while i < len(toks):
        if toks[i] == "env":
            i += 1
            continue
        m = _ASSIGN.match(toks[i])
        if not m:
            break
        inline[m.group(1)] = m.group(2)
        i += 1
    rest = toks[i:]
    sub = None
    torchrun: dict[str, Any] = {}
    j = None
    for k, t in enumerate(rest):
        if t == "swift" and k + 1 < len(rest) and rest[k + 1] in _SUBCMDS:
            sub, j = rest[k + 1], k + 2
            break
        m = re.search(r"swift[/.]cli[/.](\w+)(?:\.py)?$", t)
        if m and m.group(1) in _SUBCMDS:
            sub, j = m.group(1), k + 1
            pre = rest[:k]
            for a, b in zip(pre, pre[1:] + [""]):
                if a.startswith("--nproc_per_node") or a.startswith("--nproc-per-node"):
                    torchrun["nproc_per_node"] = a.partition("=")[2] or b
                elif a.startswith("--nnodes"):
                    torchrun["nnodes"] = a.partition("=")[2] or b
            break
    if j is None:
        if rest and rest[0].startswith("--"):
            j = 0  # a bare argument list
        else:
            shown = " ".join(rest[:3]) or "(nothing)"
            raise CommandError(f"preflight: no `swift rlhf` command found in `{shown}`; use: grpo-doctor preflight -- "
                               "swift rlhf --rlhf_type grpo ...")
    args = rest[j:]
    merged_env = {k: v for k, v in env.items() if k in _ENV_NAMES}
    merged_env.update(inline)
    cfg_file = None
    cfg_flags: set[str] = set()
    pre_tokens: list[str] = []
    if args and not args[0].startswith("-") and args[0].lower().endswith((".yaml", ".yml", ".json")):
        cfg_file = args[0]
        args = args[1:]
    cfg_opt = None
    flags0, _ = group_flags(args, normalize=True)
    for name, vals in flags0:
        if name == "config" and vals:
            cfg_opt = vals[0]
    for path_s in [p for p in (cfg_file, cfg_opt) if p]:
        path = Path(path_s)
        if cwd is not None and not path.is_absolute():
            path = cwd / path
        if not path.exists():
            raise CommandError(f"{path_s}: config file not found; pass the path of the YAML/JSON the command uses")
        cfg, cfg_env = read_config(path)
        cfg_flags |= set(cfg)
        pre_tokens += _config_tokens(cfg)
        for k, v in cfg_env.items():
            merged_env.setdefault(k, v)
    flags, stray = group_flags(pre_tokens + args, normalize=True)
    if cfg_opt:
        cfg_file = cfg_file or cfg_opt
    return SwiftCommand(sub, flags, inline, merged_env, torchrun, cfg_file, cfg_flags, stray,
                        " ".join(toks))


def flag_values(cmd: SwiftCommand) -> dict[str, Any]:
    """Flags -> values the way parse_argv gives them (last one wins, like argparse)."""
    return flag_dict(cmd.flags)


def read_model_dir(path: str | None) -> tuple[dict | None, dict | None, str | None]:
    """(config.json, args.json, the args.json path) of a local model/adapter directory; JSON only, never code."""
    if not path or not isinstance(path, str):
        return None, None, None
    d = Path(path)
    if not d.is_dir():
        return None, None, None
    cfg = args = None
    args_path = None
    try:
        if (d / "config.json").is_file():
            v = read_json(d / "config.json")
            cfg = v if isinstance(v, dict) else None
    except (CommandError, OSError):
        cfg = None
    try:
        if (d / "args.json").is_file():
            v = read_json(d / "args.json")
            args = v if isinstance(v, dict) else None
            args_path = str(d / "args.json")
    except (CommandError, OSError):
        args = None
    return cfg, args, args_path
