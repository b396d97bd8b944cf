"""Several runs appended to one log (issue 17 point 16): ``nohup swift rlhf ... >> train.log`` or ``tee -a`` leave
one file holding run after run, each with its own configuration. A run starts at ms-swift's launcher line
(``run sh: ...``) or at its arguments dump (``[INFO:swift] args: RLHFArguments(``) when no launcher line opened
it (a ``run sh:`` line followed by its dump is one run). ``RunSplit`` records where each run starts and keeps
the arguments each finished run ended with, so a failure is diagnosed with its own run's configuration.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from ..signals import Where

MAX_RUNS = 64  # arguments kept for this many runs; later starts are still counted


@dataclass
class RunSplit:
    """Where each run appended to one log starts, and the arguments of each run that ended."""
    starts: list[Where] = field(default_factory=list)
    args: list[dict[str, Any]] = field(default_factory=list)   # args of run i, for each run already ended
    # the rest of run i's configuration (its typed flags, environment, launches), for each run already ended
    parts: list[dict[str, Any]] = field(default_factory=list)
    _dump_seen: bool = False   # the current run has had its arguments dump
    # per file, the start lines (ascending: a file is read in order) and their run indexes: index_of by bisection
    _lines: dict[str, list[int]] = field(default_factory=dict)
    _index: dict[str, list[int]] = field(default_factory=dict)

    def start(self, where: Where, current_args: dict[str, Any], *, dump: bool,
              current_parts: dict[str, Any] | None = None) -> bool:
        """A launcher line (``dump`` False) or an arguments dump (True) at ``where``; ``current_args`` (and
        ``current_parts``): the configuration read so far (the previous run's, when this starts a new one). True when
        it starts another run in the same file as the previous one (the caller starts the new run's configuration
        afresh)."""
        opens = not self.starts or self.starts[-1].path != where.path or (self._dump_seen or not dump)
        if dump and self.starts and not self._dump_seen and self.starts[-1].path == where.path:
            opens = False  # the dump of the run its launcher line opened
        appended = False
        if opens:
            if self.starts and len(self.args) < MAX_RUNS:
                self.args.append(dict(current_args))
                self.parts.append(dict(current_parts or {}))
            appended = bool(self.starts) and self.starts[-1].path == where.path
            self._lines.setdefault(where.path, []).append(where.line)
            self._index.setdefault(where.path, []).append(len(self.starts))
            self.starts.append(where)
            self._dump_seen = False
        if dump:
            self._dump_seen = True
        return appended

    def __len__(self) -> int:
        return len(self.starts)

    def index_of(self, where: Where) -> int | None:
        """The run (0-based) holding ``where``, or None when the log holds fewer than two runs or not this file."""
        if len(self.starts) < 2:
            return None
        lines = self._lines.get(where.path)
        if not lines:
            return None
        k = bisect_right(lines, where.line) - 1   # a log of thousands of appended runs: no scan of every start
        return self._index[where.path][k] if k >= 0 else None

    def args_of(self, index: int, current_args: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments of run ``index`` (the last run's are the current ones); None when not kept."""
        if index == len(self.starts) - 1:
            return current_args
        return self.args[index] if index < len(self.args) else None

    def parts_of(self, index: int) -> dict[str, Any] | None:
        """The typed flags, environment and launches of an ended run (``RunConfig.split_parts``); None when not kept."""
        return self.parts[index] if index < len(self.parts) else None

    def span(self, index: int) -> tuple[str, int, int | None]:
        """(path, first line, last line or None for the last run of its file)."""
        s = self.starts[index]
        nxt = next((t for t in self.starts[index + 1:] if t.path == s.path), None)
        return s.path, s.line, (nxt.line - 1 if nxt else None)

    def label(self, index: int) -> str:
        path, first, last = self.span(index)
        return f"run {index + 1} of {len(self.starts)} in {path}, lines {first}-{last if last else 'end'}"

    def summary(self, limit: int | None = None) -> list[dict[str, Any]]:
        """``span`` of every run, in one pass from the end (span per run copies the rest of the list: a log
        repeating its launcher line tens of thousands of times made this quadratic). With ``limit``, only the first
        and the last ``limit // 2`` runs when there are more (the report of such a log stays small)."""
        n = len(self.starts)
        half = None if limit is None or n <= limit else max(1, limit // 2)
        out: list[dict[str, Any]] = []
        next_start: dict[str, int] = {}   # path -> the first line of the run after, in that file
        for i in range(n - 1, -1, -1):
            s = self.starts[i]
            if half is None or i < half or i >= n - half:
                nxt = next_start.get(s.path)
                out.append({"path": s.path, "first_line": s.line, "last_line": nxt - 1 if nxt is not None else None})
            next_start[s.path] = s.line
        out.reverse()
        return out
