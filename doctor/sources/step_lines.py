"""Which candidate lines make a run of step lines (sources/step_runs.py reads them): the scanner's cheap tests over its
buffer, before a run is read."""
from __future__ import annotations

from typing import Any

from .logtext import MAX_LINE


def step_line(buf: Any, s: int, e: int, saves: bool = False) -> bool:
    """Whether the line ``buf[s:e]`` may be a step line (its first bytes a dict's, or a bar's percentage and its end a
    rate's; ``saves``: or a checkpoint save's message in it): the scanner's test for the lines of a run, before
    StepRuns reads them."""
    if buf.startswith(b"{'", s):
        return True
    last = buf[e - 1] if e > s else 0
    if last == 13 and e - 1 > s:   # a bar redrawn with \r\n
        last = buf[e - 2]
    if last == 93:   # "]"
        return buf.find(b"%|", s, e) >= 0
    return saves and buf.find(b"Saving model checkpoint to ", s, e) >= 0


def run_in_buffer(buf: Any, start: int, end: int, n: int, hits: list[int], i: int, most: int, saves: bool = False) -> int:
    """The run that starts with the candidate line ``buf[start:end]`` (a step line; ``hits[i]`` is the first hit past
    it) within ``buf[:n]``, of ``most`` lines at most: the newline of its last line. A line joins the run while it is a
    candidate (a hit falls on it) and a step line by ``step_line``."""
    nh = len(hits)
    find = buf.find
    while most > 1 and i < nh and end + 1 < n:
        s = end + 1
        e = find(b"\n", s, n)
        if not s < hits[i] <= e or e - s > MAX_LINE or not step_line(buf, s, e, saves):
            break
        while i < nh and hits[i] <= e:   # more hits on a line (the pure-Python matcher may give some)
            i += 1
        end = e
        most -= 1
    return end


__all__ = ["run_in_buffer", "step_line"]
