"""The line path's first stage (see docs/DEVELOPMENT.md, "Performance"): the candidate lines of one log file, found
with the matcher and handed in file order to the line sorter (sources/line_sorter.py), which says only how many lines
of a run it took and whether the session is sticky (then every line is handed over).

Two ways to read, one interface to the sorter:

- in this process (``read_stream``): 8 MB chunks read into one reused buffer, scanned for hits, each hit's line (or a
  run of step lines starting there) cut out of the buffer;
- from a scanning child (``read_child``, ``read_forked``; the child is sources/scanchild.py): the child maps the file and
  sends the candidates' line numbers and offsets; each line is read here with one ``pread``, in file order while the
  child goes on.

A child pays where the scan is the bulk of the work: candidates few and far between (the realistic mix: ~180 per 8 MiB).
Where they are dense (a dense console log: every line; a short-line one: a quarter) this process is the bottleneck, and
a record and a pread per candidate cost it more CPU than the scan it is spared (measured +30 % CPU on DENSE 60 MB, +25 %
on SHORT 20 MB, slower in wall time too): a log whose first ``SAMPLE`` bytes hold a candidate per ``DENSE_BYTES`` gets
no child (``dense_start``), and a child's batch that dense hands the rest of the log to this process.
"""
from __future__ import annotations

import os
from bisect import bisect_right
from typing import Any, BinaryIO

from ..progress import METER
from .line_sorter import LineSorter
from .logtext import MAX_LINE
from .matchers import Matcher
from .step_lines import run_in_buffer, step_line

DENSE_BYTES = 2048   # a candidate per this many bytes or more: too dense for a scanning child to pay (the module)
SAMPLE = 1 << 20     # the bytes at a log's start whose candidates say whether to fork a scanning child at all
_STEP_ENDS = (93, 13)   # the last bytes a step line (step_lines.step_line) may end with: a bar's "]" or "\r"
# a run starts with a dict, or with a bar and a dict after it: bars alone cost less line by line (BarStretch.take)


class CandidateReader:
    """Reads one log file's candidate lines into ``sorter`` (see the module); ``child_exit``: the scanning child's exit
    code (-N: killed by signal N), None when none ran."""

    def __init__(self, sorter: LineSorter, matcher: Matcher, chunk: int, fork: bool | None):
        self.sorter = sorter
        self.matcher = matcher
        self.chunk = chunk
        self.fork = fork   # None: a child's batch too dense hands the rest back; True: a child was asked for
        self.child_exit: int | None = None
        self._ahead: tuple[int, bytes] | None = None   # (offset, line) of a candidate read ahead from the scanning child

    # ------------------------------------------------------------------ in this process
    def read_stream(self, stream: BinaryIO) -> None:
        """From the stream's position to its end, in this process. Reads into one reused buffer (fresh 8 MB
        objects per chunk cost more than the scan itself)."""
        size = self.chunk
        line = self.sorter.line
        buf = bytearray(size + MAX_LINE + 1)
        view = memoryview(buf)
        have = 0          # bytes of an unfinished line kept at the front of buf
        skipping = False  # inside a line longer than MAX_LINE, already fed: drop up to its newline
        try:
            while True:
                got = stream.readinto(view[have:have + size])
                if not got:
                    break
                end = have + got
                if skipping:  # have == 0 here
                    nl = buf.find(b"\n", 0, end)
                    if nl < 0:
                        continue
                    skipping = False
                    rest = end - nl - 1
                    buf[:rest] = bytes(view[nl + 1:end])
                    end = rest
                last = buf.rfind(b"\n", 0, end)
                if last >= 0:
                    self._scan(buf, view, last + 1)
                    have = end - last - 1
                    if have:
                        buf[:have] = bytes(view[last + 1:end])
                else:
                    have = end
                if have > MAX_LINE:  # an over-long line: its head is all the line-by-line path reads too
                    line(bytes(view[:MAX_LINE]))
                    have = 0
                    skipping = True
            if have:
                line(bytes(view[:have]))
        finally:
            view.release()

    def _sticky_run(self, buf: bytearray, view: memoryview, pos: int, n: int) -> int:
        """Hand over whole lines from ``pos`` while the session is sticky; returns the new position."""
        sorter = self.sorter
        sticky = sorter.sticky
        while pos < n and sticky():
            end = buf.find(b"\n", pos, n)
            sorter.line(bytes(view[pos:min(end, pos + MAX_LINE)]))
            pos = end + 1
        return pos

    def _scan(self, buf: bytearray, view: memoryview, n: int) -> None:
        """``buf[:n]`` holds whole lines (``buf[n - 1]`` is a newline)."""
        pos = self._sticky_run(buf, view, 0, n)
        count, find, rfind = buf.count, buf.find, buf.rfind
        hits = self.matcher.ends(buf, view, n)
        sorter = self.sorter
        runs, skip, line = sorter.runs, sorter.skip, sorter.line
        for hit in hits:
            if hit <= pos:
                continue  # on a line already fed (or read in a run)
            start = rfind(b"\n", pos, hit) + 1 or pos
            end = find(b"\n", hit - 1, n)
            if start > pos:
                skip(count(b"\n", pos, start))
            if runs is not None and (buf[start] == 123 or buf[end + 1] == 123 and buf[end - 1] in _STEP_ENDS) and \
                    end - start <= MAX_LINE and step_line(buf, start, end):   # a dict, or a bar and then a dict?
                last = run_in_buffer(buf, start, end, n, hits, bisect_right(hits, end), sorter.run_most,
                                     runs.saves is not None)
                lines = bytes(view[start:last]).split(b"\n") if last > end else []
                took = sorter.run(lines) if lines else 0   # a line alone: as any (its short cuts cost less)
                if took:   # the line after them, if any, is fed as any
                    pos = self._sticky_run(buf, view, start + sum(map(len, lines[:took])) + took, n)
                    continue
            fed = line(bytes(view[start:min(end, start + MAX_LINE)]), True)  # capped as physical_lines does
            # a line that took a short cut left the session as it found it: not sticky
            pos = self._sticky_run(buf, view, end + 1, n) if fed else end + 1
        if pos < n:
            skip(count(b"\n", pos, n))

    # ------------------------------------------------------------------ from a scanning child
    def read_forked(self, stream: BinaryIO, size: int) -> int:
        """Fork a scanning child for ``[0, size)`` and read its candidates (``read_child``); in this process when the
        fork fails. Returns where the scan stopped."""
        from .scanchild import ScanChild

        m = self.matcher
        child = ScanChild.start(stream.fileno(), size, lambda: m, self.chunk)
        if child is None:
            self.read_stream(stream)
            return stream.tell()
        return self.read_child(stream, child)

    def read_child(self, stream: BinaryIO, child) -> int:
        """A child finds the candidate lines of ``[0, child.size)``; this process reads each with one ``pread``
        and hands it over, in file order, while the child goes on. When the child dies before its end record
        (the file shrank under its mapping: SIGBUS), or its candidates come too dense for it to pay
        (``DENSE_BYTES``; not when a child was asked for: ``fork=True``, ``GRPO_DOCTOR_SCAN=fork``), this process
        reads the rest itself from the last line it handed over. Returns where the scan stopped."""
        from .scanchild import END

        fd, size = stream.fileno(), child.size
        sorter = self.sorter
        pos = 0          # offset just past the last line fed
        total = None     # physical lines in [0, size), from the child's end record
        sticky = sorter.sticky
        try:
            if sticky():
                pos = self._sticky_file(fd, pos, size)
            for k, payload in child.records():
                if k == END:
                    total = payload
                    break
                if k:   # the progress bar: the reads here are preads (no file offset); a batch may be empty
                    METER.at(payload[3 * k - 1])
                i, stop = 0, 3 * k
                while i < stop:
                    start = payload[i + 1]
                    if start < pos:
                        i += 3
                        continue  # fed already, by a sticky run
                    end = payload[i + 2]
                    sorter.skip(payload[i] - 1 - sorter.lineno)
                    i += 3
                    if sorter.runs is not None and end - start <= MAX_LINE:
                        j = self._run_of_records(fd, payload, i, stop, start)
                        if j:
                            i, end = j, payload[j - 1]
                    else:
                        sorter.line(os.pread(fd, min(end - start, MAX_LINE), start), True)
                    pos = end + 1
                    if sticky():
                        pos = self._sticky_file(fd, pos, size)
                if k * DENSE_BYTES >= self.chunk >= SAMPLE and self.fork is None and \
                        os.environ.get("GRPO_DOCTOR_SCAN") != "fork":
                    break   # candidates too dense for a child to pay: the rest is read here (DENSE_BYTES)
        finally:
            self.child_exit = child.close()
        if total is None:
            stream.seek(min(pos, size))
            self.read_stream(stream)
            return stream.tell()
        sorter.skip(total - sorter.lineno)
        return size

    def _run_of_records(self, fd: int, payload: Any, i: int, stop: int, start: int) -> int:
        """The candidate line at ``start`` (the record before ``payload[i]``, at most MAX_LINE long), handed over, or
        read with the candidates that follow it line after line as a run of step lines (sources/step_runs.py) when it
        starts one (two lines at least). Returns the index of the first record past the lines read, or 0 (that line
        handed over alone). The line after the lines read, read already, is kept for the next call (``_ahead``)."""
        sorter = self.sorter
        end = payload[i - 1]
        ahead, self._ahead = self._ahead, None
        data = ahead[1] if ahead is not None and ahead[0] == start else os.pread(fd, end - start, start)
        if i >= stop or payload[i + 1] != end + 1 or payload[i + 2] - payload[i + 1] > MAX_LINE or \
                not step_line(data, 0, len(data)):
            sorter.line(data, True)
            return 0
        nxt = os.pread(fd, payload[i + 2] - end - 1, end + 1)   # the next line is a candidate too
        lines = [data, nxt]
        if (data[:1] == b"{" or nxt[:2] == b"{'") and step_line(nxt, 0, len(nxt)):   # see _STEP_ENDS
            j = k = i + 3
            while k < stop and k - i < 3 * (sorter.run_most - 1) and payload[k + 1] == payload[k - 1] + 1 and \
                    payload[k + 2] - payload[k + 1] <= MAX_LINE:
                k += 3   # the next candidate is the next line
            if k > j:
                for line in os.pread(fd, payload[k - 1] - payload[j - 1] - 1, payload[j - 1] + 1).split(b"\n"):
                    if not step_line(line, 0, len(line)):
                        break
                    lines.append(line)
            took = sorter.run(lines)
        else:
            took = 0
        if took < len(lines):
            self._ahead = (start + sum(map(len, lines[:max(took, 1)])) + max(took, 1), lines[max(took, 1)])
        if took:
            return i + 3 * (took - 1)
        sorter.line(data, True)
        return 0

    def _sticky_file(self, fd: int, pos: int, size: int) -> int:
        """Hand over whole lines from offset ``pos`` while the session is sticky; returns the new offset."""
        from .scanchild import line_at

        sorter = self.sorter
        sticky = sorter.sticky
        while pos < size and sticky():
            got = line_at(fd, pos, size)
            if got is None:
                return size
            data, pos = got
            sorter.line(data)
        return pos


def dense_start(fd: int, matcher: Matcher) -> bool:
    """Whether the file's first SAMPLE bytes hold a candidate line per DENSE_BYTES or more (see there): then no
    scanning child is forked (``GRPO_DOCTOR_SCAN=fork`` forks one still). One scan of a MiB, ~2 ms."""
    if os.environ.get("GRPO_DOCTOR_SCAN") == "fork":
        return False
    try:
        data = bytearray(os.pread(fd, SAMPLE, 0))
    except OSError:
        return False
    n = data.rfind(b"\n") + 1   # (a file shorter than SAMPLE, or without a newline in it, is not judged)
    return len(data) == SAMPLE and n > 0 and len(matcher.ends(data, memoryview(data), n)) * DENSE_BYTES >= n


__all__ = ["DENSE_BYTES", "SAMPLE", "CandidateReader", "dense_start"]
