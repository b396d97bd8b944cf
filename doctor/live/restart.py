"""`watch --on-failure stop|restart|resume`: after a failed attempt, decide from its primary finding whether to
launch again, and how.

Verdicts: restart (transient: an NCCL / c10d flake, a lost rollout server), resume (a checkpoint exists that the fix
does not invalidate: relaunch with --resume_from_checkpoint), relaunch (a configuration error: a person must change
the command) and stop (a data, reward or model bug). The verdict is the primary finding's own ``action``: every rule
declares one in its TOML, the diagnosis and doctor/verdict.py refine it; a finding without one is not restarted.
A relaunch or stop verdict is never restarted. Every attempt keeps its own console log and report (NAME.N).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from .. import lazyre
from ..model import Severity
from ..registry import ACTIONS
from .rundir import output_dir_of
from .say import say

_CKPT = lazyre.compile(r"^checkpoint-(\d+)$")


def verdict(findings: list) -> tuple[str, str]:
    """(verdict, why) from the primary error finding; "stop" when there is none to act on."""
    errors = [f for f in findings if f.severity >= Severity.error]
    if not errors:
        return "stop", "no finding at error names the failure"
    f = errors[0]
    action = getattr(f, "action", None)
    if action not in ACTIONS:
        return "stop", f"{f.rule_id} {f.title} (no action: a person decides)"
    return action, f"{f.rule_id} {f.title} (its action)"


def last_checkpoint(root: str) -> str | None:
    """The newest non-empty checkpoint-N folder under ``root`` (highest N; links never followed), found by the same
    walk as check-ckpt's (sources/checkpoint.py)."""
    from ..sources.checkpoint import find_checkpoints  # noqa: PLC0415 - only when a resume is decided
    best: tuple[int, str] | None = None
    for p in find_checkpoints(Path(root)):
        m = _CKPT.match(p.name)
        try:
            if m and any(os.scandir(p)) and (best is None or int(m.group(1)) > best[0]):
                best = (int(m.group(1)), str(p))
        except OSError:
            continue
    return best[1] if best else None


def resumed(argv: list[str], ckpt: str) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--resume_from_checkpoint":
            skip = True
            continue
        if a.startswith("--resume_from_checkpoint="):
            continue
        out.append(a)
    return out + ["--resume_from_checkpoint", ckpt]


def supervise(argv: list[str], run_once: Callable[[list[str], int], tuple[int, list, bool, bool]], on_failure: str,
              max_restarts: int, backoff: float, output_dir: str | None = None,
              wait: Callable[[float], object] = threading.Event().wait) -> int:
    """Run attempts until one succeeds, the verdict forbids another, or ``max_restarts`` are spent.
    ``run_once(argv, attempt)`` returns (exit code, findings, started, stopped_by_watch)."""
    attempt = 1
    cmd = list(argv)
    while True:
        code, findings, started, stopped = run_once(cmd, attempt)
        if code == 0 or not started or on_failure == "stop":
            return code
        v, why = verdict(findings)
        if stopped and v not in ("restart", "resume"):
            return code
        if v not in ("restart", "resume"):
            say(f"attempt {attempt} failed: verdict {v} ({why}): not restarting"
                + (" (a configuration error: change the command)" if v == "relaunch" else ""))
            return code
        if attempt > max_restarts:
            say(f"attempt {attempt} failed: verdict {v} ({why}); --max-restarts {max_restarts} spent: not restarting")
            return code
        if v == "resume" or on_failure == "resume":
            where = output_dir_of(argv) or output_dir or "."
            ckpt = last_checkpoint(where)
            if ckpt is not None:
                cmd = resumed(argv, ckpt)
            elif v == "resume":
                say(f"attempt {attempt} failed: verdict resume ({why}) but no checkpoint-N under {where}: restarting "
                    "from the start")
        delay = backoff * (2 ** (attempt - 1))
        say(f"attempt {attempt} failed: verdict {v} ({why}); launching attempt {attempt + 1} of at most "
            f"{max_restarts + 1} in {delay:g} s" + (f" with --resume_from_checkpoint {cmd[-1]}" if cmd != list(argv)
                                                     else ""))
        wait(delay)
        attempt += 1
