"""From diagnosis to action: each finding's verdict refined with what the run left (pure: no I/O).

A rule's TOML declares its default ``action`` (registry.ACTIONS) and a diagnosis may refine it
(``Diagnosis.action``). Here the run itself refines it further and writes the command to run:

- ``restart`` (a transient fault): with a good checkpoint in the run, ``resume`` from it instead (the same
  command plus ``--resume_from_checkpoint``); without one, the run's own command again.
- ``relaunch`` (a configuration error): with a good checkpoint and corrected flags that keep it valid
  (doctor/swift/relaunch.py ``invalidates``; checkpoints of the wrong kind, GD701/GD801/GD805, never are),
  ``resume`` with the corrected flags; else the whole corrected command, when the diagnosis computed the flags.
- ``resume``: from the last good checkpoint; with none left, ``relaunch``.
- ``stop`` (a data, reward or model bug a restart would repeat): no command.
- A consequence (``role``) takes its root cause's action and command: acting on the cause is what helps.

The last good checkpoint is the ``checkpoint-N`` with the highest N that no checkpoint error points into and that
was not saved at or after the first step of a weight-breaking error (loss or grad_norm not finite, grad_norm
exactly 0 while the rewards differ: RunState.broken_at): its weights are the diverged or dead ones, so resuming
from it repeats the fault, and the verdict is the relaunch with the fix. The
command is the run's ``swift rlhf`` launch (command.txt, a launcher script, the ``run sh:`` line, or preflight's
command) with the corrections; there is none when the launch is unknown.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .model import Finding, Role, Severity
from .sources.swiftconfig import RunConfig
from .swift.fixcheck import correct_launch
from .swift.relaunch import command_line, invalidates

# findings whose fix changes what the checkpoints hold (LoRA where full weights were meant, or the reverse; a
# --model or --resume_from_checkpoint of the wrong kind): resuming from one would carry the error on
_WRONG_KIND = frozenset({"GD438", "GD439", "GD701", "GD801", "GD805"})
_BROKEN_CKPT = frozenset({"checkpoint-corrupt", "checkpoint-adapter-only-load-args"})
# error categories whose first step breaks the weights every later checkpoint holds (engine/state.py broken_at)
_BROKEN_WEIGHTS = frozenset({"loss-nan-or-inf", "grad-norm-zero"})


def launch_of(run: RunConfig) -> tuple[dict[str, str], dict[str, Any]] | None:
    """(environment, flags) of the run's ``swift rlhf`` launch, or None when no launch was read."""
    for launch in run.launches:
        if launch.command == "rlhf" and launch.flags:
            return dict(launch.env), dict(launch.flags)
    return None


def last_good(checkpoints: Iterable[tuple[str, int | None]], findings: list[Finding],
              broken_at: dict[str, int] | None = None) -> str | None:
    """The path of the highest-numbered checkpoint that no checkpoint error's evidence points into, saved before the
    first step of any weight-breaking error finding (``broken_at``: category -> first step)."""
    bad = [e.path for f in findings if f.severity == Severity.error and f.category in _BROKEN_CKPT
           for e in f.evidence]
    steps = [broken_at[f.category] for f in findings if broken_at and f.severity == Severity.error
             and f.category in _BROKEN_WEIGHTS and f.category in broken_at]
    limit = min(steps) if steps else None
    best: tuple[int, str] | None = None
    for path, step in checkpoints:
        if step is None or (limit is not None and step >= limit):
            continue
        root = path.rstrip("/")
        if any(p == root or p.startswith(root + "/") for p in bad):
            continue
        if best is None or step > best[0]:
            best = (step, root)
    return best[1] if best else None


def refine(findings: list[Finding], run: RunConfig, checkpoints: Iterable[tuple[str, int | None]] = (), *,
           ended: bool = False, broken_at: dict[str, int] | None = None) -> list[Finding]:
    """``ended``: the run reached its normal end, so there is nothing to resume (the next run is a new one).
    ``broken_at``: the first step of each weight-breaking fault (RunState.broken_at)."""
    ckpts = list(checkpoints)
    good = last_good(ckpts, findings, broken_at) if ckpts and not ended else None
    launch = launch_of(run)
    server = any(_ROLLOUT in t.replace("/", ".") or "swift rollout" in t for t in run.command_texts)
    out = [_one(f, good, launch, server, run) for f in findings]
    # a consequence (NCCL timeout, ChildFailedError after the cause) is dealt with by acting on its root cause
    root = next((f for f in out if f.role == Role.root), None)
    if root is not None:
        out = [replace(f, action=root.action, command=root.command) if f.role == Role.consequence else f for f in out]
    return out


_ROLLOUT = "swift.cli.rollout"
_SERVER_FLAGS = ("vllm_server_host", "vllm_server_port", "vllm_server_base_url")


def mixed_modes(flags: dict[str, Any], changes: Iterable[tuple[str, str]] = ()) -> bool:
    """Whether the launch, with ``changes`` applied, asks for a colocated engine and names a rollout server too
    (ms-swift GRPO: --vllm_mode colocate builds the engine in the trainer and never reads --vllm_server_host /
    --vllm_server_port; a run that mixes them is the fault, never a command to relaunch as it is)."""
    out = {k.lstrip("-"): v for k, v in flags.items()}
    for flag, value in changes:
        if flag.startswith("--"):
            if value == "":
                out.pop(flag[2:], None)
            else:
                out[flag[2:]] = value
    return str(out.get("vllm_mode") or "") == "colocate" and any(out.get(k) for k in _SERVER_FLAGS)


def _one(f: Finding, good: str | None, launch: tuple[dict[str, str], dict[str, Any]] | None,
         server: bool = False, run: RunConfig | None = None) -> Finding:
    action = f.action
    if not action or action == "stop":
        return f
    changed = [name for name, _ in f.flags]
    keeps_ckpt = good is not None and f.rule_id not in _WRONG_KIND and not invalidates(changed)
    resume_at = None
    if action in ("restart", "relaunch") and keeps_ckpt:
        action, resume_at = "resume", good
    elif action == "resume":
        if keeps_ckpt:
            resume_at = good
        else:
            action = "relaunch"
    command = ""
    notes: list[str] = []
    if launch is not None and (resume_at or f.flags or action == "restart"):
        env, flags = launch
        if run is not None:  # misspelt, renamed and removed flags of the launch respelled or dropped, with a note
            flags, notes = correct_launch(flags, run)
        changes = tuple(f.flags)
        if mixed_modes(flags, changes):
            # corrected when a rollout server is part of the run (its launch is in the inputs): server mode; else
            # which mode was meant is unknown, and no command is better than the mixed one
            changes = changes + (("--vllm_mode", "server"),) if server else ()
        if not mixed_modes(flags, changes):
            command = command_line(env, flags, changes, resume=resume_at)
    fix = f.fix + tuple(n for n in notes if n not in f.fix) if command else f.fix
    if action == f.action and command == f.command and fix == f.fix:
        return f
    return replace(f, action=action, command=command, fix=fix)


__all__ = ["launch_of", "last_good", "refine"]
