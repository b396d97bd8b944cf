"""One command that preflight accepts: the fixes of a refused launch applied one after the other, each judged again
on the command the previous ones left, so a respelled flag, a batch fix and a mode fix end in one command line
rather than one per finding (each computed from the original, wrong, command).

Each round takes the first error with a computed command (the verdict's: the launch with its misspelt flags
respelled and that finding's flags changed, doctor/verdict.py) and judges it again; a refused launch whose errors
compute no command (an unknown flag alone) gets its flags respelled (doctor/swift/fixcheck.py). It stops when no error
is left, when no error computes a command, or after a few rounds; the result says which.
"""
from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from .model import Report, Severity

ROUNDS = 4


def _errors(rep: Report) -> list:
    return [f for f in rep.findings if f.severity == Severity.error]


def _respelled(argv: list[str], version: str | None) -> str | None:
    """The launch with its misspelt, renamed or removed flags respelled or dropped; None when nothing changes."""
    from .preflight import build_run
    from .sources.swiftcmd import parse_command
    from .swift.fixcheck import correct_launch
    from .swift.relaunch import command_line
    cmd = parse_command(argv, {})
    run = build_run(cmd, version)
    flags = {name: (vals[0] if len(vals) == 1 else vals if vals else "true") for name, vals in cmd.flags}
    fixed, notes = correct_launch(flags, run)
    if not notes:
        return None
    return command_line(cmd.inline_env, fixed, subcommand=cmd.subcommand or "rlhf")


def one_command(first: Report, argv: list[str], judge: Callable[[list[str]], Report],
                version: str | None) -> dict[str, Any] | None:
    """``{"command", "accepted", "remaining"}`` for a launch with errors (None without): ``judge`` runs preflight
    on an argv."""
    errors = _errors(first)
    if not errors:
        return None
    rep, command, seen = first, None, set()
    for _ in range(ROUNDS):
        nxt = next((f.command for f in _errors(rep) if f.command), None)
        if nxt is None:
            nxt = _respelled(shlex.split(command) if command else argv, version)
        if nxt is None or nxt in seen:
            break
        seen.add(nxt)
        command = nxt
        rep = judge(shlex.split(command))
        if not _errors(rep):
            break
    if command is None:
        return None
    left = sorted({f.rule_id for f in _errors(rep)})
    return {"command": command, "accepted": not left, "remaining": left}
