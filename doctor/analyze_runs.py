"""A folder of runs, run by run: ``analyze output/`` over ms-swift's ``v{N}-<timestamp>`` folders (or several run
folders named on the command line) gives each run its own session, so no curve, configuration or error of one
launch is joined with another's. The report opens with one row per run (newest first) and each finding names its
run; the files beside the run folders (a ``nohup`` console log of several launches) are read as one more input
group, where the appended-runs split (doctor/sources/runs.py) applies.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import __version__
from .model import Finding, Report, RunRef, Severity
from .sources.inputs import Input, InputError, discover
from .sources.run_folders import RUN_NAME, find_runs, run_name

BESIDE = "(beside the run folders)"


@dataclass(frozen=True)
class RunSplit:
    root: Path | None        # the folder of runs; None when the run folders were named one by one
    display_root: str
    runs: list[Path]         # oldest first
    displays: list[str]      # each run as the user would write it


def split_runs(paths: list[str]) -> RunSplit | None:
    """How ``paths`` splits into runs, or None for one run (a log, a run folder, a folder with fewer than two runs,
    standard input)."""
    if "-" in paths:
        return None
    try:
        return _split(paths)
    except OSError:   # a path the system cannot even look at (a name too long): discover() says it in one line
        return None


def _split(paths: list[str]) -> RunSplit | None:
    if len(paths) == 1:
        root = Path(paths[0])
        if not root.is_dir() or root.is_symlink():
            return None
        runs = find_runs(root)
        if len(runs) < 2:
            return None
        base = paths[0].rstrip("/") or "/"
        return RunSplit(root, paths[0], runs, [os.path.join(base, run_name(r, root)) for r in runs])
    given = [Path(p) for p in paths]
    if all(p.is_dir() and RUN_NAME.match(p.name) for p in given):
        order = sorted(range(len(given)), key=lambda i: RUN_NAME.match(given[i].name).group(2))  # type: ignore[union-attr]
        return RunSplit(None, "", [given[i] for i in order], [paths[i] for i in order])
    return None


def analyze_runs(split: RunSplit, analyze_one: Callable[[list[Input], bool], Report], *,
                 series: bool = False) -> Report:
    """``analyze_one(inputs, series)``: one run's report. The newest run keeps its curves (``series``)."""
    groups: list[tuple[str, str, Callable[[], list[Input]]]] = []
    for run, display in zip(split.runs, split.displays):
        name = run_name(run, split.root) if split.root is not None else run.name
        groups.append((name, display, lambda d=display: discover([d])))
    if split.root is not None:
        excluded = frozenset(split.runs)
        groups.append((BESIDE, split.display_root, lambda: discover([split.display_root], exclude=excluded)))
    # newest first: the run a person acts on is the last one launched; the files beside the folders go last
    named = len(split.runs)
    read: list[tuple[str, str, list[Input] | InputError]] = []
    for name, display, inputs_of in list(reversed(groups[:named])) + groups[named:]:
        try:
            read.append((name, display, inputs_of()))
        except InputError as e:
            if name != BESIDE:   # nothing beside the run folders is the usual case: no row for it
                read.append((name, display, e))
    total = named + (1 if read and read[-1][0] == BESIDE else 0)
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    inputs = []
    newest: Report | None = None
    for position, (name, display, got) in enumerate(read):
        if isinstance(got, InputError):
            rows.append({"name": name, "path": display, "status": "nothing to read", "note": _why_empty(got),
                         "steps": None, "max_steps": None, "primary": None, "action": None, "findings": 0})
            continue
        rep = analyze_one(got, series and newest is None)
        if newest is None:
            newest = rep
        inputs.extend(rep.inputs)
        number = total if name == BESIDE else named - position   # oldest run 1
        ref = RunRef(number, total, display, None, None, name=name)
        findings.extend(replace(f, run=replace(ref, in_log=f.run)) for f in rep.findings)
        rows.append(_row(name, display, rep))
    run = dict(newest.run) if newest is not None else {}
    report = Report(__version__, inputs, run, findings, runs=rows)
    if newest is not None and newest.series is not None:
        report.series = dict(newest.series, run=rows[0]["name"])
    return report


def _row(name: str, display: str, rep: Report) -> dict[str, Any]:
    """One run's overview: status, how far it got, its primary finding and what to do."""
    vit = rep.run.get("vitals") or {}
    steps, max_steps = vit.get("step"), vit.get("max_steps")
    worst = rep.worst()
    if worst == Severity.error:
        status = "failed"
    elif steps is not None and max_steps and steps >= max_steps:
        status = "completed" + (" with warnings" if worst == Severity.warning else "")
    elif worst == Severity.warning:
        status = "warnings"
    else:
        status = "no problem found"
    first = rep.findings[0] if rep.findings else None
    primary = None if first is None else {"rule_id": first.rule_id, "severity": first.severity.name,
                                          "title": first.title, "category": first.category}
    return {"name": name, "path": display, "status": status, "steps": steps, "max_steps": max_steps,
            "primary": primary, "action": first.action if first is not None else None,
            "findings": len(rep.findings)}



def _why_empty(e: InputError) -> str:
    """A run folder with nothing to read, in a few words: ms-swift creates it while parsing the arguments, so a
    launch that stopped there (or is starting now) leaves it empty."""
    text = str(e)
    if "no log found in" in text:
        return "no log, metrics or args.json in it (a launch that stopped while parsing its arguments, or one starting)"
    return text.split(": ", 1)[-1]
