"""The parallel path's half in this process (``ChunkScanner``'s, sources/scan.py): feed the candidate lines a scanning
child (sources/scanchild.py) finds, each read with one ``pread``, in file order while the child goes on; and when not to
fork one at all.

A child pays where the scan is the bulk of the work: candidates few and far between (the realistic mix: ~180 per 8 MiB).
Where they are dense (a dense console log: every line; a short-line one: a quarter) this process is the bottleneck, and
a record and a pread per candidate cost it more CPU than the scan it is spared (measured +30 % CPU on DENSE 60 MB, +25 %
on SHORT 20 MB, slower in wall time too): a log whose first ``SAMPLE`` bytes hold a candidate per ``DENSE_BYTES`` gets
no child, and a child's batch that dense hands the rest of the log to this process.
"""
from __future__ import annotations

import os
from typing import Any, BinaryIO

from ..progress import METER
from .logtext import MAX_LINE
from .matchers import Matcher
from .step_lines import step_line

DENSE_BYTES = 2048   # a candidate per this many bytes or more: too dense for a scanning child to pay (the module)
SAMPLE = 1 << 20     # the bytes at a log's start whose candidates say whether to fork a scanning child at all


class ChildFeed:
    """The methods of ChunkScanner that take a scanning child's records (see the module)."""

    def _run_forked(self, stream: BinaryIO, size: int) -> int:
        from .scanchild import ScanChild

        m = self.matcher
        child = ScanChild.start(stream.fileno(), size, lambda: m, self.chunk)
        if child is None:
            self._run_read(stream)
            return stream.tell()
        return self._run_child(stream, child)

    def _run_child(self, stream: BinaryIO, child) -> int:
        """A child finds the candidate lines of ``[0, child.size)``; this process reads each with one ``pread``
        and feeds it, in file order, while the child goes on. When the child dies before its end record
        (the file shrank under its mapping: SIGBUS), or its candidates come too dense for it to pay
        (``DENSE_BYTES``; not when a child was asked for: ``fork=True``, ``GRPO_DOCTOR_SCAN=fork``), this process
        reads the rest itself from the last line it fed. Returns where the scan stopped."""
        from .scanchild import END

        fd, size = stream.fileno(), child.size
        pos = 0          # offset just past the last line fed
        total = None     # physical lines in [0, size), from the child's end record
        sticky = self._sticky
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
                    self._skip(payload[i] - 1 - self.lineno)
                    i += 3
                    if self.runs is not None and end - start <= MAX_LINE:
                        j = self._run_of_records(fd, payload, i, stop, start)
                        if j:
                            i, end = j, payload[j - 1]
                    else:
                        self._feed(os.pread(fd, min(end - start, MAX_LINE), start), True)
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
            self._run_read(stream)
            return stream.tell()
        self._skip(total - self.lineno)
        return size

    def _run_of_records(self, fd: int, payload: Any, i: int, stop: int, start: int) -> int:
        """The candidate line at ``start`` (the record before ``payload[i]``, at most MAX_LINE long), fed, or read with
        the candidates that follow it line after line as a run of step lines (sources/step_runs.py) when it starts one
        (two lines at least). Returns the index of the first record past the lines read, or 0 (that line fed alone).
        The line after the lines read, read already, is kept for the next call (``_ahead``)."""
        end = payload[i - 1]
        ahead, self._ahead = self._ahead, None
        data = ahead[1] if ahead is not None and ahead[0] == start else os.pread(fd, end - start, start)
        if i >= stop or payload[i + 1] != end + 1 or payload[i + 2] - payload[i + 1] > MAX_LINE or \
                not step_line(data, 0, len(data)):
            self._feed(data, True)
            return 0
        nxt = os.pread(fd, payload[i + 2] - end - 1, end + 1)   # the next line is a candidate too
        lines = [data, nxt]
        if (data[:1] == b"{" or nxt[:2] == b"{'") and step_line(nxt, 0, len(nxt)):   # see _STEP_ENDS
            j = k = i + 3
            while k < stop and k - i < 3 * (self._run_most - 1) and payload[k + 1] == payload[k - 1] + 1 and \
                    payload[k + 2] - payload[k + 1] <= MAX_LINE:
                k += 3   # the next candidate is the next line
            if k > j:
                for line in os.pread(fd, payload[k - 1] - payload[j - 1] - 1, payload[j - 1] + 1).split(b"\n"):
                    if not step_line(line, 0, len(line)):
                        break
                    lines.append(line)
            took = self._run(lines)
        else:
            took = 0
        if took < len(lines):
            self._ahead = (start + sum(map(len, lines[:max(took, 1)])) + max(took, 1), lines[max(took, 1)])
        if took:
            return i + 3 * (took - 1)
        self._feed(data, True)
        return 0

    def _sticky_file(self, fd: int, pos: int, size: int) -> int:
        """Feed whole lines from offset ``pos`` while the session is sticky; returns the new offset."""
        from .scanchild import line_at

        sticky = self._sticky
        while pos < size and sticky():
            got = line_at(fd, pos, size)
            if got is None:
                return size
            data, pos = got
            self._feed(data)
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



__all__ = ["DENSE_BYTES", "SAMPLE", "ChildFeed", "dense_start"]
