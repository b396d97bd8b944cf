"""GD452: an installed package is older (or newer) than the version ms-swift requires."""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import at_least, version_label
from ...values import version_key
from ._versions import README_RANGES


def _trl_range(run) -> str:
    if at_least(run, 4, 2):
        return "'trl>=0.26,<1.0' (README recommends 0.29.1)"
    if at_least(run, 4, 0):
        return "'trl>=0.20,<0.29'"
    mm = run.swift_major_minor
    if mm is not None and mm >= (3, 12):
        return "'trl>=0.20' (ms-swift 3.12.5+ requires it)"
    if mm is not None and mm >= (3, 4):
        return "'trl>=0.17,<0.21' (ms-swift 3.8 README recommends 0.20.0)"
    return "the trl range of your ms-swift release's README (HEAD: >=0.15,<1.0, recommended 0.29.1)"


_CLAUSE = lazyre.compile(r"(<=|>=|==|!=|~=|<|>)\s*([\d][\w.]*)")
_SKIP = lazyre.compile(r"set `?(\w*VERSION_CHECK\w*=1)`? to skip")


def _outside(found: str, spec: str) -> str | None:
    """'older than' or 'newer than' when ``found`` misses a lower or an upper bound of ``spec`` (">=0.4.3,<=0.7.3")."""
    if not found or not found[:1].isdigit():
        return None
    have = version_key(found)
    for op, ver in _CLAUSE.findall(spec):
        bound = version_key(ver)
        if op in (">=", ">", "~=") and (have < bound or op == ">" and have == bound):
            return "older than"
        if op in ("<=", "<") and (have > bound or op == "<" and have == bound):
            return "newer than"
    return None


def _skip_hint(ctx: RunState) -> str | None:
    """The environment variable the check's own message offers to skip it, from the lines after it."""
    for tail in ctx.tails.values():
        for line in tail:
            if "VERSION_CHECK" in line.text:
                m = _SKIP.search(line.text)
                if m:
                    return m.group(1)
    return None


def require_version_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    if g.get("trl_old"):
        return Diagnosis(
            message=f"{version_label(run)} requires a newer trl than the one installed (the minimum is 0.17 "
                    f"in ms-swift 3.4-3.12.4 and 0.20 from 3.12.5).",
            fix=(f"pip install -U {_trl_range(run)}",
                 "Check the pair afterwards: pip show ms-swift trl transformers."))
    if g.get("trl018"):
        return Diagnosis(
            message="--generation_batch_size / --steps_per_generation need trl >= 0.18.",
            fix=("pip install 'trl>=0.18' (within your ms-swift's supported range), or drop those flags and "
                 "use --gradient_accumulation_steps.",))
    if g.get("liger"):
        return Diagnosis(
            message="--use_liger_kernel with GRPO needs liger-kernel >= 0.7.0.",
            fix=("pip install -U 'liger-kernel>=0.7.0', or drop --use_liger_kernel.",))
    req = (g.get("req") or "").strip()
    found = (g.get("found") or "").strip()
    pkg = re.split(r"[<>=!~ ]", req, maxsplit=1)[0] or found.split("==")[0]
    msg = f"{found or pkg + ' (another version)'} is installed, but {req} is required."
    side = _outside(found.split("==", 1)[1] if "==" in found else "", req[len(pkg):])
    if side:
        msg += f" The installed release is {side} the range allows."
    framework = ctx.framework()[0]
    if pkg == "trl" and run.major and framework in ("ms-swift", None):
        msg += f" ({version_label(run)} checks this while parsing arguments.)"
    hint = _skip_hint(ctx)
    if hint:
        msg += (f" The check's own hint names {hint} to skip it (LLaMA-Factory's check_version, extras/misc.py, "
                f"reads it): the code may then fail later on the unsupported release.")
    spec = req
    if pkg == "trl" and "<" not in req:
        m = re.search(r">=\s*([\d.]+)", req)
        low = tuple(int(x) for x in m.group(1).split(".")[:2]) if m else (0, 0)
        spec = f"{req},<1.0" if low >= (0, 26) else f"{req},<0.29"
    fix = [f"pip install '{spec}'" + (" (the ms-swift 4.x README recommends trl 0.29.1)" if spec.endswith("<1.0") else "")
           + (" (a downgrade), or a release of the code that checks this which supports the installed one"
              if side == "newer than" else "")]
    if pkg in README_RANGES and framework == "ms-swift":
        fix.append(f"The ms-swift README range: {README_RANGES[pkg]}." + (
            f" A newer trl may need a newer transformers: install them together (pip install '{spec}' transformers "
            f"-U) and re-check with pip show." if pkg == "trl" else ""))
    return Diagnosis(message=msg, fix=tuple(fix))
