"""What to analyze for a finished job: its console output (StdOut, StdErr when separate) and the run's output
folder when the job names one (ms-swift ``--output_dir``, TRL ``output_dir``) in its batch script or its log.

Only existence is checked here: whether the job's user may read them is left to the analysis, which runs as that
user (doctor/fleet/diagnose.py)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import lazyre

SCRIPT_BYTES = 256 * 1024   # a batch script larger than this is not a script worth reading for a flag
LOG_HEAD_BYTES = 64 * 1024  # the launch line and the printed arguments come first
# --output_dir X / --output_dir=X (ms-swift, TRL's CLI), output_dir: X (YAML), output_dir='X' (printed arguments)
_OUTPUT_DIR = lazyre.compile(r"""(?:--output[_-]dir[= ]+|\boutput_dir\s*[:=]\s*)(?:"([^"\n]+)"|'([^'\n]+)'|([^\s'",)]+))""")
_RUN_FOLDER = lazyre.compile(r"v\d+-\d{8}-\d{6}")   # ms-swift's per-launch folder


@dataclass
class Located:
    paths: list[str] = field(default_factory=list)   # what the analysis reads, logs first
    output_dir: str | None = None
    notes: list[str] = field(default_factory=list)


def _head(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def output_dirs_named(text: str) -> list[str]:
    """Every output folder the text names, in order, without shell variables (they cannot be resolved here)."""
    out = []
    for m in _OUTPUT_DIR.finditer(text):
        v = next(g for g in m.groups() if g)
        if "$" not in v and "{" not in v and v not in out:
            out.append(v)
    return out


def newest_run_folder(d: str) -> str:
    """``d`` itself, or its newest ``v{N}-<timestamp>`` child: ms-swift adds one per launch, and this job's run is
    the newest (the others are earlier launches, not this failure)."""
    try:
        runs = [e for e in os.scandir(d) if _RUN_FOLDER.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return d
    if not runs:
        return d
    return max(runs, key=lambda e: e.stat(follow_symlinks=False).st_mtime).path


def locate(stdout: str | None, stderr: str | None, work_dir: str | None, script: str | None) -> Located:
    """The job's logs and run folder. A missing log is a note, not an error: the record still says how it ended."""
    found = Located()
    for p in (stdout, stderr):
        if not p or p in found.paths or p == "/dev/null":
            continue
        if os.path.isfile(p):
            found.paths.append(p)
        else:
            found.notes.append(f"no output file at {p}")
    texts = [_head(script, SCRIPT_BYTES)] if script and os.path.isfile(script) else []
    texts += [_head(p, LOG_HEAD_BYTES) for p in found.paths]
    for text in texts:
        for named in output_dirs_named(text):
            d = named if os.path.isabs(named) else os.path.join(work_dir or "/", named)
            if os.path.isdir(d):
                found.output_dir = newest_run_folder(os.path.normpath(d))
                break
        if found.output_dir:
            break
    if found.output_dir:
        found.paths.append(found.output_dir)
    return found
