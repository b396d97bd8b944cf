"""Shell text and argv as ms-swift's launcher reads them: comments, quoting, ``--flag value`` groups,
``--flag=value``, list flags, and values turned into Python types (ints, floats, bools, None, JSON)."""
from __future__ import annotations

import ast
import shlex
from typing import Any

# environment variables that change what a launch does (world size, devices, memory, vLLM engine)
ENV_NAMES = ("NPROC_PER_NODE", "NNODES", "NODE_RANK", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
              "MASTER_PORT", "MASTER_ADDR", "MAX_PIXELS", "VIDEO_MAX_PIXELS", "FPS_MAX_FRAMES",
              "PYTORCH_CUDA_ALLOC_CONF", "WORLD_SIZE", "SWIFT_SINGLE_DEVICE_MODE", "VLLM_USE_V1",
              # NCCL's transport switches and debug level, CUDA's synchronous launches: fixes name them, so the
              # run's own values are facts (doctor/claim_env.py)
              "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG",
              "CUDA_LAUNCH_BLOCKING")


def parse_value(text: str) -> Any:
    """'8' -> 8, 'True' -> True, "['a', 'b']" -> ['a', 'b'], 'None' -> None; else the string."""
    t = text.strip()
    if t in ("None", "null", ""):
        return None
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t[:1] in "[{(\"'" and len(t) < 4096:
        try:
            return ast.literal_eval(t)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return t
    return t


def parse_argv(argv: list[str]) -> dict[str, Any]:
    """``--key v1 v2 --flag`` -> {key: v1 or [v1, v2], flag: True}; dashes in names become underscores."""
    return flag_dict(group_flags(argv, normalize=True)[0])


def group_flags(tokens: list[str], *, normalize: bool = False,
                short: bool = False) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(flag, its values) in order, and the values before any flag. ``--name=value`` and ``--name v1 v2``;
    ``normalize``: dashes in names become underscores (argparse's dest); ``short``: ``-h``-style tokens are
    flags of their own (kept with their dash) rather than values."""
    flags: list[tuple[str, list[str]]] = []
    stray: list[str] = []
    for tok in tokens:
        if tok.startswith("--") and len(tok) > 2:
            name, eq, val = tok[2:].partition("=")
            flags.append((name.replace("-", "_") if normalize else name, [val] if eq else []))
        elif short and tok.startswith("-") and len(tok) == 2 and tok[1].isalpha():
            flags.append((tok, []))
        elif flags:
            flags[-1][1].append(tok)
        else:
            stray.append(tok)
    return flags, stray


def flag_dict(flags: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """Grouped flags -> {name: True | value | [values]} (parse_value on each; the last of a name wins, like
    argparse)."""
    out: dict[str, Any] = {}
    for name, vals in flags:
        if not vals:
            out[name] = True
        elif len(vals) == 1:
            out[name] = parse_value(vals[0])
        else:
            out[name] = [parse_value(v) for v in vals]
    return out


def strip_comments(text: str) -> str:
    """Drop shell comments the way bash does: '#' outside quotes at the start of a word, to the end of the line."""
    if "#" not in text:
        return text
    out = []
    quote = ""
    prev = "\n"
    skip = False
    for ch in text:
        if skip:
            if ch != "\n":
                continue
            skip = False
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev in " \t\n":
            skip = True
            continue
        out.append(ch)
        prev = ch
    return "".join(out)


def split_shell(text: str) -> list[str]:
    """The shell words of a command (a fresh list). A log repeats its launcher line (one per rank, one per
    restart): the words of the short texts seen lately are cached (shlex costs ~0.1 ms per command)."""
    if len(text) <= _SPLIT_CACHE_TEXT:
        words = _SPLIT_CACHE.get(text)
        if words is None:
            if len(_SPLIT_CACHE) >= 64:
                _SPLIT_CACHE.clear()
            words = _SPLIT_CACHE[text] = tuple(_split_shell(text))
        return list(words)
    return _split_shell(text)


_SPLIT_CACHE: dict[str, tuple[str, ...]] = {}
_SPLIT_CACHE_TEXT = 16 * 1024


def _split_shell(text: str) -> list[str]:
    # shlex's comments=True would also cut `--dataset AI-MO/NuminaMath-TIR#5000` at the '#'
    text = strip_comments(text).replace("\\\n", " ")
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()

