"""Checkpoint checks as a library: ``check-ckpt``, ``analyze`` and the live ``watch`` call these.

``check_checkpoint_dirs(dirs, *, expect=None, run=None)`` is the stable entry for other code (watch): the
findings of the checkpoint rules (GD801-GD805) for those directories, with ``run`` (the live RunConfig) telling
what the command line asked for.
"""
from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__
from .checks.checkpoint._facts import inventory, inventory_line
from .engine import Session
from .model import Finding, InputInfo, Report
from .registry import RuleMeta, _load_one, _parsed, rule_files
from .signals import CheckpointInput
from .sources.checkpoint import CheckpointFacts, checkpoint_dir_of, find_checkpoints, is_checkpoint_dir, read_checkpoint
from .sources.safeio import what_is
from .sources.swiftconfig import RunConfig


@lru_cache(maxsize=1)
def _ckpt_metas() -> tuple[RuleMeta, ...]:
    """Only the checkpoint rules' TOML files: compiling the whole catalog's regexes costs ~0.4 s, more than the
    checks of a 70B checkpoint."""
    files = [p for p in rule_files() if p.parent.name == "checkpoint"]
    return tuple(_load_one(p, data) for p, data in zip(files, _parsed(files)))   # parsed once (registry._parsed)


def checkpoint_rules(metas: Iterable[RuleMeta] | None = None) -> list[RuleMeta]:
    """The catalog entries whose check consumes CheckpointInput signals."""
    from .rules import build_rule
    out = []
    for m in (_ckpt_metas() if metas is None else metas):
        if m.family == "checkpoint" and m.check and CheckpointInput in build_rule(m).kinds:
            out.append(m)
    return out


def check_checkpoint_dirs(dirs: Iterable[str | os.PathLike], *, expect: str | None = None,
                          run: RunConfig | None = None, facts: dict | None = None,
                          library: bool = True) -> list[Finding]:
    """Findings of the checkpoint rules for these checkpoint directories (each read once, headers only); ``facts``:
    what the caller knows of the run that wrote them (RunState.facts; watch: ``ended_by_signal``); ``library``:
    read_checkpoint's."""
    session = Session(checkpoint_rules(), run=run, facts=facts)
    seen: set[str] = set()
    sizes: dict[str, Any] = {}  # each checkpoint measured once for all its siblings (and each run folder read once)
    for d in dirs:
        p = Path(d)
        key = os.path.realpath(p)
        if key in seen:
            continue
        seen.add(key)
        session.emit(CheckpointInput(read_checkpoint(p, str(d), sizes=sizes, library=library), expect))
    return session.finish()


def group_paths(paths: list[str]) -> list[tuple[Path, str]]:
    """Checkpoint directories named by the arguments: a checkpoint dir, any file inside one (global_stepN/
    files belong to their checkpoint), or a run directory (its checkpoint-N/ folders). Each once, in order."""
    # check-ckpt's path: watch, which checks each checkpoint it sees saved, imports neither the input readers nor the
    # selectors (difflib) for it
    from .sources.inputs import InputError, path_exists
    out: list[tuple[Path, str]] = []
    seen: set[str] = set()

    def add(d: Path, display: str) -> None:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            out.append((d, display))

    for p in paths:
        path = Path(p)
        if not path_exists(path, p):
            raise InputError(f"{p}: no such file or directory; pass a checkpoint directory or a file inside one")
        if path.is_dir():
            if not os.access(path, os.R_OK | os.X_OK):
                raise InputError(f"{p}: permission denied; make the directory readable")
            if is_checkpoint_dir(path):
                add(path, p.rstrip("/") or p)
                continue
            found = find_checkpoints(path)
            if not found:
                raise InputError(f"{p}: no checkpoint here (no model*.safetensors, adapter_model.*, "
                                 f"trainer_state.json or checkpoint-N/); pass a checkpoint directory")
            for c in found:
                add(c, str(Path(p) / c.relative_to(path)))
            continue
        what = what_is(path.stat().st_mode) if path.exists() else None
        if what is not None:
            raise InputError(f"{p}: {what}, not a regular file; pass a checkpoint directory or a file inside one")
        d = checkpoint_dir_of(path)
        disp = os.path.dirname(p.rstrip("/")) or "."
        if d != path.parent:
            disp = os.path.dirname(disp) or "."
        add(d, disp)
    return out


def check_paths(paths: list[str], *, expect: str | None = None, select: set[str] | None = None,
                ignore: set[str] | None = None) -> Report:
    """The report of ``grpo-doctor check-ckpt PATH...``."""
    from .selectors import resolve
    from .sources.inputs import InputError
    groups = group_paths(paths)
    for d, disp in groups:
        if not os.access(d, os.R_OK | os.X_OK):
            raise InputError(f"{disp}: permission denied; make the directory readable")
    sel = resolve(checkpoint_rules(), select, ignore)
    session = Session(sel.run)
    summary = RunConfig()
    sizes: dict[str, Any] = {}  # each checkpoint measured once for all its siblings (and each run folder read once)
    checked = []
    skipped: list[InputInfo] = []
    for d, disp in groups:
        facts = read_checkpoint(d, disp, sizes=sizes)
        if isinstance(facts.args, dict) and not summary.args:
            summary.add_args_json(facts.args)  # the report's run line (version); rules read each checkpoint's own
        skipped += skipped_inputs(facts)
        session.emit(CheckpointInput(facts, expect, gate=True))
        checked.append(inventory(facts))
    findings = sel.keep(session.finish())
    run = summary.summary()
    run["vitals"] = inventory_vitals(checked)
    return Report(__version__, [InputInfo(disp, "checkpoint") for _, disp in groups] + skipped, run, findings)


SHOWN = 3  # checkpoints named in the one line; the JSON report lists them all


def inventory_vitals(checked: list[dict]) -> dict:
    """The report's run.vitals for check-ckpt: what was checked, so that a pass says what passed."""
    lines = [inventory_line(c) for c in checked[-SHOWN:]]
    more = len(checked) - SHOWN
    return {"checkpoints": checked,
            "summary": (f"{len(checked)} checkpoints, the last {SHOWN} listed: " if more > 0 else "") + "; ".join(lines)}


def skipped_inputs(facts: CheckpointFacts) -> list[InputInfo]:
    """What a checkpoint held but was not read (a link out of it, an unreadable folder), named in the report."""
    return [InputInfo(posixpath.join(facts.path, name), "skipped", why) for name, why in sorted(facts.skipped.items())]


def fold_into_log_finding(findings: list[Finding]) -> list[Finding]:
    """analyze: when the log already names the forced LoRA (GD701), the checkpoint finding (GD801) adds its
    evidence to it instead of repeating the diagnosis."""
    log = next((f for f in findings if f.rule_id == "GD701"), None)
    ck = [f for f in findings if f.rule_id == "GD801"]
    if log is None or not ck:
        return findings
    merged = replace(log, evidence=log.evidence + tuple(e for f in ck for e in f.evidence[:2]))
    return [merged if f is log else f for f in findings if f.rule_id != "GD801"]
