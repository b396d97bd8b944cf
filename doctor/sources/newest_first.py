"""Metric rows pasted newest first, put back in the order they were logged.

People copy a metrics table from a dashboard or a notebook that shows the latest step on top, or paste the last rows of
a log in reverse. The metric rules read rows in order (a NaN "from step 20 on", a reward "falling"), so a run of rows
whose step counter only goes down is reversed before it is read. Two shapes are read, each by its own step column:
- a trainer's logged dicts (``{'loss': ..., 'epoch': 0.02}``, transformers' Trainer.log; ``global_step`` or ``step``
  when the row has one);
- a markdown or plain-text table whose first cell is the step (``| 30 | nan | ... |``, the notebook table of
  transformers' NotebookProgressCallback copied as markdown).
Only small inputs (pastes) are looked at, as for the other repairs of sources/reflow.py; a program's own log is never
newest first. Each row keeps its physical line number, so evidence points at the paste as it is.
"""
from __future__ import annotations

from collections.abc import Iterator

from .. import lazyre

# the step of a logged dict: its step counter, else the epoch (a float that grows with every logged step)
_DICT_STEP = lazyre.compile(rb"""^\s*\{.*?['"](?:global_step|step)['"]:\s*(\d+(?:\.\d+)?)""")
_DICT_EPOCH = lazyre.compile(rb"""^\s*\{.*['"]epoch['"]:\s*(\d+(?:\.\d+)?)""")
# a table row whose first cell is a whole number (the step), then at least two more cells
_TABLE_STEP = lazyre.compile(rb"^\s*\|?\s*(\d+)\s*\|(?:[^|\n]*\|){1,}")


def _step(line: bytes) -> tuple[str, float] | None:
    """(the row's shape, its step) or None for a line that is no metric row."""
    if line.lstrip()[:1] == b"{":
        m = _DICT_STEP.match(line) or _DICT_EPOCH.match(line)
        return ("dict", float(m.group(1))) if m else None
    if b"|" in line:
        m = _TABLE_STEP.match(line)
        return ("table", float(m.group(1))) if m else None
    return None


def newest_first_runs(lines: list[bytes]) -> list[tuple[int, int]]:
    """(first, end) index ranges of the blocks of two or more adjacent rows of one shape whose steps strictly decrease
    from the first row of the block to its last (a block that goes up anywhere, two runs appended one after the other,
    stays as it is)."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        first = _step(lines[i])
        if first is None:
            i += 1
            continue
        steps, j = [first[1]], i + 1
        while j < len(lines):
            nxt = _step(lines[j])
            if nxt is None or nxt[0] != first[0]:
                break
            steps.append(nxt[1])
            j += 1
        if len(steps) >= 2 and all(a > b for a, b in zip(steps, steps[1:])):
            runs.append((i, j))
        i = j
    return runs


def reordered(data: bytes) -> Iterator[tuple[int, bytes]] | None:
    """(physical line number, line) of ``data`` with its newest-first runs of rows reversed, or None when it holds
    none."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    runs = newest_first_runs(lines)
    if not runs:
        return None
    order = list(range(len(lines)))
    for first, end in runs:
        order[first:end] = reversed(order[first:end])
    return ((k + 1, lines[k]) for k in order)
