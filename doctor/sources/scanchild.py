"""The scanning half of analyze's parallel path: a forked child maps the log and finds the candidate lines
while the parent decodes and judges the ones already found.

Why a child process: Hyperscan (~0.7 s per GB here) and counting newlines for exact line numbers
(~0.25 s per GB with numpy) are the two costs that do not depend on the log's content; the rules run on
the candidate lines only. On two cores the parent's rule work hides behind the child's scan. A thread
cannot do this: Hyperscan calls back into Python for every match, and each callback would wait for the
GIL the parent holds.

Why ``mmap`` here and only here: reading 1 GB into a buffer costs ~0.5 s of copying; a mapping costs
~0.1 s. A mapped file that shrinks under the reader (``logrotate`` copytruncate) raises SIGBUS on the next
page touched, which kills the process: it kills this child, never the parent, and the parent then
goes on reading the file itself from the last line it fed (``doctor.sources.scanread``).

Records on the pipe, all native int64 (both ends are the same process image):
- a batch: ``k`` (>= 0), then ``k`` triples ``(line number, line start, line end)`` (``end``: the
  offset of the line's newline, or of the end of the scan for an unterminated last line);
- the end: ``-1``, the number of physical lines in ``[0, size)``.
A batch is written once per chunk, and only whole batches count.
"""
from __future__ import annotations

import mmap
import os
import signal
import struct
from array import array
from collections.abc import Callable, Iterator
from typing import Any

from .logtext import MAX_LINE

HEAD = struct.Struct("=q")
END = -1


class ScanChild:
    """The parent's handle on one scanning child: its pid, the read end of its pipe, what it scans (the
    size, the file's (device, inode)) and the trigger words it looks for."""

    def __init__(self, pid: int, rfd: int, size: int, ident: tuple[int, int], words: frozenset[str] | None):
        self.pid, self.rfd, self.size, self.ident, self.words = pid, rfd, size, ident, words
        self.done = False           # the end record came
        self.exit: int | None = None

    @classmethod
    def start(cls, fd: int, size: int, make_matcher: Callable[[], Any], chunk: int,
              words: frozenset[str] | None = None) -> ScanChild | None:
        """Fork a child scanning ``[0, size)`` of ``fd`` with ``make_matcher()`` (called in the child: a
        Hyperscan database still to compile or load costs the child, not this process). None when the
        fork fails."""
        st = os.fstat(fd)
        rfd, wfd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(rfd)
            os.close(wfd)
            return None
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(rfd)
                m = make_matcher()
                child_main(wfd, fd, size, m._db, m._scratch, chunk, m.max_len - 1)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent notices the missing end record
                pass
            finally:
                os._exit(code)
        os.close(wfd)
        return cls(pid, rfd, size, (st.st_dev, st.st_ino), words)

    def records(self) -> Iterator[tuple[int, array | int]]:
        for k, payload in read_records(self.rfd):
            if k == END:
                self.done = True
            yield k, payload

    def close(self) -> int:
        """Stop the child unless it finished, reap it; its exit code (-N: killed by signal N)."""
        if self.exit is None:
            os.close(self.rfd)
            if not self.done:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.exit = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.exit


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def child_main(fd: int, fileno: int, size: int, db: Any, scratch: Any, chunk: int, overlap: int) -> None:
    """Scan ``[0, size)`` of ``fileno`` and write the records to ``fd``. Runs in the forked child."""
    import faulthandler

    faulthandler.disable()  # a SIGBUS here is expected and handled by the parent: no dump on stderr
    mm = mmap.mmap(fileno, size, access=mmap.ACCESS_READ)
    try:
        mm.madvise(mmap.MADV_SEQUENTIAL)
    except (AttributeError, OSError):  # pragma: no cover - platforms without madvise
        pass
    scanner = MappedScan(mm, size, db, scratch, chunk, overlap)
    try:
        for batch in scanner.batches():
            write_all(fd, HEAD.pack(len(batch) // 3) + batch.tobytes())
        write_all(fd, HEAD.pack(END) + HEAD.pack(scanner.lines))
    finally:
        scanner.close()
        mm.close()


class MappedScan:
    """Finds the candidate lines of a mapped file, piece by piece, in flat memory.

    Pieces are ``chunk`` bytes, cut anywhere: each Hyperscan call starts ``overlap`` bytes (the longest
    pattern less one) before its piece, so a word across a cut is still found, and a match already
    reported lies on a line already reported (dropped). Pages behind the scan are handed back after each
    piece (``MADV_DONTNEED`` on a read-only file mapping: they stay in the page cache and come back on
    the next touch), so RSS stays near one piece even over a line of many megabytes."""

    STEP = 4 << 20  # the look-ahead for a line's newline, and the unit of counting newlines
    BACK = 8 << 20  # released again below the last release (see _release)
    # spans up to this are counted by a copy: numpy's three calls cost ~3 us more than a copy of a few lines, which
    # made up a third of the child's CPU on a log whose every line is a candidate (DENSE 60 MB: 0.79 -> 0.51 s)
    SMALL = 4096

    def __init__(self, mm: Any, size: int, db: Any, scratch: Any, chunk: int, overlap: int):
        self.mm, self.size, self.db, self.scratch = mm, size, db, scratch
        self.chunk, self.overlap = max(chunk, 1), max(overlap, 0)
        self.view = memoryview(mm)
        try:  # only the child needs it (~0.1 s to import); optional (the `full` extra): ~4x faster counting
            import numpy as np
        except ImportError:
            self.arr = None
        else:
            self.arr = np.frombuffer(mm, dtype=np.uint8)
            self._count_nonzero = np.count_nonzero
        self.lines = 0          # newlines in [0, counted); a line that starts before counted has none after
        self.counted = 0
        self.line_end = -1      # the newline (or end) of the last line reported
        self.last_nl = -1       # the last newline before the current piece
        self.page = mmap.PAGESIZE
        self.dontneed = getattr(mmap, "MADV_DONTNEED", None)
        self.released = 0       # pages below this offset were handed back

    def close(self) -> None:
        del self.arr
        self.view.release()

    def _count(self, a: int, b: int) -> int:
        if b - a <= self.SMALL:   # the lines between two near candidates (every line of a metric-dense log is one)
            return self.mm[a:b].count(b"\n")
        n = 0
        arr, step = self.arr, self.STEP
        if arr is None:  # without numpy: a bounded copy counted in C (~0.6 GB/s against numpy's ~2.5 GB/s)
            mm = self.mm
            while a < b:
                c = min(b, a + step)
                n += mm[a:c].count(b"\n")
                a = c
            return n
        cnz = self._count_nonzero
        while a < b:  # a bounded temporary: one byte per byte counted, at most STEP
            c = min(b, a + step)
            n += int(cnz(arr[a:c] == 10))
            a = c
        return n

    def _release(self, upto: int) -> None:
        """Hand back the pages below ``upto``, and again the BACK bytes below the last release: touching a page
        maps its whole page-cache folio (up to 2 MiB of a large folio), so the overlap read of a piece, a line's
        start or the newline count can map pages behind the last release again (1-2 MiB per piece: 186 MiB of
        RSS over a 1 GiB log before this margin)."""
        if self.dontneed is None:
            return
        top = upto - upto % self.page
        if top - self.released >= self.page:
            low = max(0, self.released - self.BACK)
            self.mm.madvise(self.dontneed, low, top - low)
            self.released = top

    def _newline_from(self, pos: int) -> int:
        """The first newline at or after ``pos``, or ``size``; a long way ahead is searched in steps whose
        pages are handed back (the scan will touch them again when it gets there)."""
        find, size, step = self.mm.find, self.size, self.STEP
        while pos < size:
            stop = min(size, pos + step)
            nl = find(b"\n", pos, stop)
            if nl >= 0:
                return nl
            if self.dontneed is not None and stop < size:
                a = pos - pos % self.page
                b = stop - stop % self.page
                if b > a and a >= self.released:
                    self.mm.madvise(self.dontneed, a, b - a)
            pos = stop
        return size

    def batches(self) -> Iterator[array]:
        """One ``array('q')`` of (line number, start, end) per piece; ``self.lines`` at the end is the
        number of physical lines (the unterminated last line counts, and is always a candidate)."""
        size, mm = self.size, self.mm
        rfind = mm.rfind
        p = 0
        while p < size:
            q = min(size, p + self.chunk)
            ends: list[tuple[int, int]] = []   # (match end, its line's newline)
            add = ends.append

            base = max(0, p - self.overlap)

            def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object, base: int = base,
                         q: int = q) -> bool:
                end += base
                if end > self.line_end:
                    self.line_end = self._newline_from(end - 1)
                    add((end, self.line_end))
                    # the rest of the piece is on this line: stop (a line of a gigabyte full of trigger words
                    # would cost a Python call per match)
                    return self.line_end >= q
                return False

            try:
                self.db.scan(self.view[base:q], match_event_handler=on_match, scratch=self.scratch)
            except Exception as e:  # noqa: BLE001 - hyperscan.ScanTerminated: on_match stopped the scan
                if type(e).__name__ != "ScanTerminated":
                    raise
            out = array("q")
            for hit, line_end in ends:
                nl = rfind(b"\n", p, hit)
                start = nl + 1 if nl >= 0 else self.last_nl + 1
                if start > self.counted:
                    self.lines += self._count(self.counted, start)
                    self.counted = start
                out.extend((self.lines + 1, start, line_end))
            nl = rfind(b"\n", p, q)
            if nl >= 0:
                self.last_nl = nl
            if q == size and mm[size - 1] != 10 and (not out or out[-2] != self.last_nl + 1):
                if self.last_nl + 1 > self.counted:
                    self.lines += self._count(self.counted, self.last_nl + 1)
                    self.counted = self.last_nl + 1
                out.extend((self.lines + 1, self.last_nl + 1, size))  # the unterminated last line
            self.lines += self._count(self.counted, q)  # now, while the piece's pages are mapped
            self.counted = q
            yield out
            self._release(q)
            p = q
            if self.line_end >= q:  # the last line reported runs past the piece: go on after its end
                if self.line_end < size:  # no newline in [q, line_end): found by _newline_from
                    self.lines += 1
                    self.last_nl = self.line_end
                p = self.counted = min(self.line_end + 1, size)
        self.lines += self._count(self.counted, size)
        self.counted = size
        if size and mm[size - 1] != 10:
            self.lines += 1


def read_records(fd: int) -> Iterator[tuple[int, array | int]]:
    """(k, triples) per batch and (END, line count) at the end; stops early (without END) when the child
    died: a short read means the rest never came."""
    while True:
        head = _read_exact(fd, 8)
        if head is None:
            return
        (k,) = HEAD.unpack(head)
        if k == END:
            body = _read_exact(fd, 8)
            if body is None:
                return
            yield END, HEAD.unpack(body)[0]
            return
        body = _read_exact(fd, 24 * k) if k else b""
        if body is None:
            return
        triples = array("q")
        triples.frombytes(body)
        yield k, triples


def _read_exact(fd: int, n: int) -> bytes | None:
    parts = []
    while n:
        got = os.read(fd, min(n, 1 << 20))
        if not got:
            return None
        parts.append(got)
        n -= len(got)
    return b"".join(parts)


def line_at(fd: int, pos: int, size: int) -> tuple[bytes, int] | None:
    """For the parent (``scanread.CandidateReader`` handing over a sticky run): (the line starting at ``pos``, capped at
    MAX_LINE, without its newline; the offset after it), read with ``pread``; None when the file ended early
    (it shrank)."""
    want = 4096
    while True:
        n = min(want, size - pos)
        block = os.pread(fd, n, pos)
        if not block:
            return None
        nl = block.find(b"\n")
        if nl >= 0:
            return block[:min(nl, MAX_LINE)], pos + nl + 1
        if len(block) < n or pos + len(block) >= size:
            return block[:MAX_LINE], size  # the unterminated last line
        if want > MAX_LINE:
            break
        want *= 4
    head, p = block[:MAX_LINE], pos + len(block)
    while p < size:  # an over-long line: its head, then on to its newline
        block = os.pread(fd, min(1 << 20, size - p), p)
        if not block:
            break
        nl = block.find(b"\n")
        if nl >= 0:
            return head, p + nl + 1
        p += len(block)
    return head, size
