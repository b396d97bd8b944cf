"""A folder of runs: ms-swift writes each launch to its own ``v{N}-{YYYYmmdd-HHMMSS}`` folder under
``--output_dir`` (swift/utils/utils.py ``add_version_to_work_dir``; the default output_dir is
``output/{model_suffix}``, so the versions may sit one or two levels down). ``analyze output/`` over such a folder
analyzes each run on its own: metrics, arguments and errors of different launches are never joined.

Only the folder names are read here (no file is opened); links are not followed.
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import lazyre
from .kinds import SKIP_DIRS

# v0-20250101-120000 (ms-swift 2.x-4.x); ms-swift 3.x+ may append "-<suffix>" with --add_version and a custom name
RUN_NAME = lazyre.compile(r"^v(\d+)-(\d{8}-\d{6})(?:-.*)?$")
MAX_DEPTH = 3          # output/ -> output/<model>/ -> output/<model>/<sub>/ : where versions are found
MAX_ENTRIES = 20_000   # directory entries looked at in all: a huge tree is not a folder of runs worth listing


def find_runs(root: Path) -> list[Path]:
    """The run folders under ``root`` (``root`` itself excluded), oldest first by (timestamp, N, path); a run
    folder is not entered. Fewer than two: ``root`` is one run (or not a folder of runs), the caller reads it whole."""
    if RUN_NAME.match(root.name):
        return []
    found: list[Path] = []
    level = [root]
    seen = 0
    for _depth in range(MAX_DEPTH):
        deeper: list[Path] = []
        for d in level:
            try:
                with os.scandir(d) as it:
                    entries = sorted((e for e in it), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    return _ordered(found)
                try:
                    if not e.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                if RUN_NAME.match(e.name):
                    found.append(Path(e.path))
                elif not (e.name in SKIP_DIRS or e.name.startswith((".", "checkpoint-", "global_step"))):
                    deeper.append(Path(e.path))
        level = deeper
    return _ordered(found)


def _ordered(found: list[Path]) -> list[Path]:
    def key(p: Path) -> tuple[str, int, str]:
        m = RUN_NAME.match(p.name)
        assert m is not None
        return (m.group(2), int(m.group(1)), str(p))
    return sorted(found, key=key)


def run_name(run: Path, root: Path) -> str:
    """The run's name in the report: its path under the analyzed folder (``Qwen2.5-7B/v3-20250101-120000``)."""
    try:
        return run.relative_to(root).as_posix()
    except ValueError:
        return run.name
