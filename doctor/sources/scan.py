"""Feed a log file to a Session fast: scan large binary chunks for the trigger words and decode only the
lines that hold one.

``Session.feed_line`` ignores a line without any gate word except for three things, so the scanner may
skip such lines exactly when it reproduces those three:

- line numbers and ``seq``: a skipped line (no ``\\r`` inside, no tqdm rate, no markdown fence) is one
  message, so both counters advance by its newline count;
- the per-input tail (the last lines, for the hang and cut-log rules): rebuilt at the end from the last
  lines of the file with the very numbers the line-by-line path gives them;
- sticky states (an open ``args: RLHFArguments(`` dump, a traceback frame awaiting its code line):
  while ``RunState.sticky()`` holds, every line is fed.

A line is a candidate when its raw bytes hold a gate word, ``StopIteration`` (the tracker reads indented
lines without gate words), a control byte that cleaning would remove (ANSI, NUL: removing it may join a
word), a ``\\r`` inside the line, a tqdm rate (``it/s]``, ``s/it]``, ``B/s]``: the line splits) or a
markdown fence. Candidates are false positives at worst: they go through ``feed_line`` unchanged.

Matching uses Hyperscan (the ``hyperscan`` package, optional) when it imports, else a trie-shaped
``re`` pattern over bytes (same candidates, slower). Memory stays flat: one chunk plus one capped line.
"""
from __future__ import annotations

import io
import os
import stat
import threading
from bisect import bisect_right
from collections import deque
from typing import BinaryIO

from ..gate import cached_words, engine
from ..signals import LogLine, Where
from . import bars as bars_mod
from . import step_runs
from .logtext import MAX_LINE, LineReader, physical_lines, segments
from .matchers import HyperscanMatcher, Matcher, matcher_for
from .quiet import QuietLines
from .saves import SaveLines
from .scanfeed import ChildFeed, dense_start
from .step_lines import run_in_buffer, step_line
from .step_runs import StepRuns

CHUNK = 8 << 20   # bytes scanned at a time
FORK_MIN = 32 << 20  # smaller logs are scanned in this process
_STEP_ENDS = (93, 13)   # the last bytes a step line (step_lines.step_line) may end with: a bar's "]" or "\r"
# a run starts with a dict, or with a bar and a dict after it: bars alone cost less line by line (BarStretch.take)


class ChunkScanner(ChildFeed):
    """Streams one seekable log file into a Session, feeding only the lines that can matter."""

    def __init__(self, session, display_path: str, counter: list[int], *, chunk: int = CHUNK,
                 matcher: Matcher | None = None, tail: int | None = None, fork: bool | None = None,
                 early=None):
        self.session = session
        self.path = display_path
        self.counter = counter
        self.reader = LineReader(display_path, counter)
        self.chunk = max(chunk, 1)
        self.matcher = matcher or matcher_for(session.gate_words)
        self.lineno = 0  # physical lines consumed so far
        self.fed = 0     # physical lines decoded and fed (statistics)
        self.tail_len = tail
        self.fork = fork  # None: fork a scanning child when it pays (see _fork_size); False: never
        self.child_exit: int | None = None  # the scanning child's exit code (-N: killed by signal N)
        self.early = early  # a ScanChild from start_early, to adopt
        # pure progress bars between two other lines, summarised (sources/bars.py); None: every bar is fed
        self.bars: bars_mod.BarStretch | None = None
        # logger-prefix lines no reader acts on, only counted (sources/quiet.py); None: every such line is fed
        self.quiet: QuietLines | None = None
        # checkpoint save lines among console metric rows, which do not end their block (sources/saves.py)
        self.saves: SaveLines | None = None
        # runs of pure bars and lone metric dicts, read at once (sources/step_runs.py); None: line by line
        self.runs: StepRuns | None = None
        self._run_most = step_runs.RUN_MIN   # lines the next run may hold: doubles after a run read whole, back to RUN_MIN after
        self._ahead: tuple[int, bytes] | None = None   # (offset, line) of a candidate read ahead from the scanning child
        if os.environ.get("GRPO_DOCTOR_BARS") != "all" and bars_mod.summarisable(session):
            self.bars = bars_mod.BarStretch(session)
            self.quiet = QuietLines.of(session)
            self.saves = SaveLines.of(session)
            self.runs = StepRuns.of(self.bars, self.saves)

    # ------------------------------------------------------------------ feeding
    def _sticky(self) -> bool:
        """Feed every line: the session is in a sticky state, or a metrics dict printed over several lines is
        open in the reader (sources/paste.py DictJoiner; its item lines hold no gate word)."""
        return self.session.state.sticky() or self.reader.dicts.parts is not None

    def _feed(self, data: bytes, defer: bool = False) -> bool:
        """Feed one physical line; ``defer``: a candidate found by the scan (not a sticky line), which may be a
        pure bar kept for later (``_flush``). False: it took a short cut (a pure bar, a quiet line, a metric row),
        which reaches neither the state nor the line reader, so it left the session as sticky as it found it."""
        bars = self.bars
        if bars is not None:
            if defer and (bars.take(self.lineno + 1, self.counter[0] + 1, data)
                          or self.quiet is not None and self.quiet.skip(data)):
                self.lineno += 1
                self.counter[0] += 1  # a pure bar or a quiet line is one message
                return False
            # a metric row ends the bars' stretch only for a rule that reads rows too (BarStretch.metric_line)
            if defer and bars.metric_line(self.path, self.lineno + 1, self.counter[0] + 1, data):
                self.lineno += 1
                self.counter[0] += 1
                self.fed += 1
                return False
            if bars.pending:
                self._flush()
            if defer and bars.rows and self.saves is not None and self.saves.among_rows(data):
                self.lineno += 1   # a checkpoint save: its readers need not read the rows before it (sources/saves.py)
                self.fed += 1
                feed_among, hold = self.session.feed_line_among, bars.hold
                for line in self.reader.line(self.lineno, data):
                    feed_among(line, hold)
                return True
            bars.emit_rows()   # the metric rows gathered so far reach the rules before this line
        self.lineno += 1
        self.fed += 1
        feed = self.session.feed_line
        for line in self.reader.line(self.lineno, data):
            feed(line)
        return True

    def _run(self, lines: list[bytes]) -> int:
        """Read ``lines``, candidates that follow each other from the next line on, as a run of step lines (see
        sources/step_runs.py), up to the first that is not one: returns how many were read. The scanner looks ahead
        for a run of ``_run_most`` lines, which grows while runs are read whole: a run cut short costs a look at
        as many lines as were read before it, not at RUN_MAX."""
        took = self.runs.take(lines, self.lineno + 1, self.counter[0] + 1, self.path) if self.runs is not None else 0
        self._run_most = min(self._run_most * 2, step_runs.RUN_MAX) if took == len(lines) else step_runs.RUN_MIN
        self.lineno += took
        self.counter[0] += took   # each a message, but a save glued to its bar: two
        if self.runs is not None:   # as metric_line and a save among rows count them (bars: not fed)
            self.counter[0] += self.runs.extra
            self.fed += self.runs.rows_read + self.runs.saves_read
        return took

    def _flush(self) -> None:
        """Feed the bars kept since the last line fed, with their own line numbers and seqs."""
        if self.bars is not None:
            self.fed += self.bars.flush(self.path)

    def _end(self) -> None:
        """The bars kept and the metric rows gathered, fed: the file's last lines are read."""
        self._flush()
        if self.bars is not None:
            self.bars.emit_rows()

    def _skip(self, n: int) -> None:
        self.lineno += n
        self.counter[0] += n

    def _sticky_run(self, buf: bytearray, view: memoryview, pos: int, n: int) -> int:
        """Feed whole lines from ``pos`` while the session is sticky; returns the new position."""
        sticky = self._sticky
        while pos < n and sticky():
            end = buf.find(b"\n", pos, n)
            self._feed(bytes(view[pos:min(end, pos + MAX_LINE)]))
            pos = end + 1
        return pos

    def _scan(self, buf: bytearray, view: memoryview, n: int) -> None:
        """``buf[:n]`` holds whole lines (``buf[n - 1]`` is a newline)."""
        pos = self._sticky_run(buf, view, 0, n)
        count, find, rfind = buf.count, buf.find, buf.rfind
        hits = self.matcher.ends(buf, view, n)
        runs = self.runs
        for hit in hits:
            if hit <= pos:
                continue  # on a line already fed (or read in a run)
            start = rfind(b"\n", pos, hit) + 1 or pos
            end = find(b"\n", hit - 1, n)
            if start > pos:
                self._skip(count(b"\n", pos, start))
            if runs is not None and (buf[start] == 123 or buf[end + 1] == 123 and buf[end - 1] in _STEP_ENDS) and \
                    end - start <= MAX_LINE and step_line(buf, start, end):   # a dict, or a bar and then a dict?
                last = run_in_buffer(buf, start, end, n, hits, bisect_right(hits, end), self._run_most,
                                     runs.saves is not None)
                lines = bytes(view[start:last]).split(b"\n") if last > end else []
                took = self._run(lines) if lines else 0   # a line alone: as any (its short cuts cost less)
                if took:   # the line after them, if any, is fed as any
                    pos = self._sticky_run(buf, view, start + sum(map(len, lines[:took])) + took, n)
                    continue
            fed = self._feed(bytes(view[start:min(end, start + MAX_LINE)]), True)  # capped as physical_lines does
            # a line that took a short cut left the session as it found it: not sticky
            pos = self._sticky_run(buf, view, end + 1, n) if fed else end + 1
        if pos < n:
            self._skip(count(b"\n", pos, n))

    def run(self, stream: BinaryIO) -> None:
        self.session.begin_log(self.path)
        early = self._adopt(stream)
        try:
            if early is not None:
                size = self._run_child(stream, early)
            elif (fork_size := self._fork_size(stream)) is not None:
                size = self._run_forked(stream, fork_size)
            else:
                self._run_read(stream)
                size = stream.tell()
        finally:   # a read error ends the file here: what was read before it still reaches the rules
            self._end()
        self._rebuild_tail(stream, size)

    def _run_read(self, stream: BinaryIO) -> None:
        """From the stream's position to its end, in this process. Reads into one reused buffer (fresh 8 MB
        objects per chunk cost more than the scan itself)."""
        size = self.chunk
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
                    self._feed(bytes(view[:MAX_LINE]))
                    have = 0
                    skipping = True
            if have:
                self._feed(bytes(view[:have]))
        finally:
            view.release()

    # ------------------------------------------------------------------ the parallel path
    def _adopt(self, stream: BinaryIO):
        """The child started early for this file (``start_early``) when it scans this very file from its start
        for at least the session's words; otherwise it is stopped and None."""
        early, self.early = self.early, None
        if early is None:
            return None
        try:
            st = os.fstat(stream.fileno())
            fits = (self.fork is not False and stream.tell() == 0 and (st.st_dev, st.st_ino) == early.ident
                    and early.words is not None and self.session.gate_words <= early.words)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            fits = False
        if not fits:
            early.close()
            return None
        return early

    def _fork_size(self, stream: BinaryIO) -> int | None:
        """The file's size when a forked child is to scan it (``doctor.sources.scanchild``), else None:
        Hyperscan present, ``os.fork`` present, no other thread in this process (a fork copies only the
        calling thread), a plain file read from its start, and at least ``FORK_MIN`` bytes (below that,
        forking and importing numpy cost more than they save). ``GRPO_DOCTOR_SCAN=inproc`` turns it off,
        ``=fork`` on for any size (tests)."""
        if self.fork is False or not _fork_allowed() or not isinstance(self.matcher, HyperscanMatcher):
            return None
        try:
            if stream.tell() != 0:
                return None
            size = os.fstat(stream.fileno()).st_size
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return None
        if size == 0 or (size < FORK_MIN and not (self.fork or os.environ.get("GRPO_DOCTOR_SCAN") == "fork")):
            return None
        if self.fork is None and dense_start(stream.fileno(), self.matcher):
            return None
        return size

    # ------------------------------------------------------------------ tail
    def _rebuild_tail(self, stream: BinaryIO, size: int) -> None:
        """Replace the session's tail for this input by the last lines of the file, as feed_line keeps it."""
        tail = self.session.state.tails.get(self.path)
        if tail is None:
            return
        want = self.tail_len or tail.maxlen or 0
        # ``size``: where the scan stopped (a log still being written may have grown since)
        window = 256 * 1024
        while True:
            start = max(0, size - window)
            stream.seek(start)
            if start > 0:
                while True:  # the first whole line of the window
                    block = stream.read(64 * 1024)
                    if not block:
                        break
                    nl = block.find(b"\n")
                    if nl >= 0:
                        stream.seek(stream.tell() - len(block) + nl + 1)
                        break
            keep: deque[tuple[int, int, tuple[str, str, int | None, str]]] = deque(maxlen=want)
            nlines = nsegs = nonblank = 0
            for _, data in physical_lines(_Bounded(stream, size)):
                for seg in segments(data):
                    nsegs += 1
                    if seg[0].strip():
                        nonblank += 1
                        keep.append((nlines, nsegs, seg))
                nlines += 1
            if nonblank >= want or start == 0:
                break
            window *= 4
        first_line = self.lineno - nlines + 1
        first_seq = self.counter[0] - nsegs
        self.session.state.replace_tail(
            self.path, (LogLine(body, raw, Where(self.path, first_line + i), rank, first_seq + k, origin)
                        for i, k, (body, raw, rank, origin) in keep))


def _fork_allowed() -> bool:
    """A scanning child may be forked: ``os.fork`` exists, this process runs no other thread (a fork copies
    only the calling thread), and ``GRPO_DOCTOR_SCAN`` does not ask for this process (``inproc``) or the
    line-by-line path (``lines``)."""
    return (hasattr(os, "fork") and threading.active_count() == 1
            and os.environ.get("GRPO_DOCTOR_SCAN", "") not in ("inproc", "lines"))


def big_enough(path: str) -> bool:
    """A regular file of at least FORK_MIN bytes: worth a scanning child."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size >= FORK_MIN


def start_early(path: str):
    """Fork the scanning child of a big log before the catalog is loaded, so that its start (numpy, the
    Hyperscan database) overlaps this process's: ``analyze`` calls this first. Possible when the trigger words
    of the whole catalog are cached from an earlier run of this code (``gate.cached_words``); they are a
    superset of any selection's words, and extra candidates are harmless. None when it does not apply; the
    caller must ``close()`` a child that no scanner adopted."""
    if not _fork_allowed() or engine() != "hyperscan":
        return None
    words = cached_words()
    if words is None:
        return None
    from .scanchild import ScanChild

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size < FORK_MIN or dense_start(fd, matcher_for(words)):
            return None
        return ScanChild.start(fd, st.st_size, lambda: matcher_for(words), CHUNK, words)
    finally:
        os.close(fd)  # the child has its own copy


class _Bounded:
    """A reader that stops at byte ``end`` of the underlying stream."""

    def __init__(self, stream: BinaryIO, end: int):
        self.stream = stream
        self.end = end

    def read(self, n: int = -1) -> bytes:
        left = self.end - self.stream.tell()
        if left <= 0:
            return b""
        return self.stream.read(left if n < 0 else min(n, left))


def scan_file(session, display_path: str, stream: BinaryIO, counter: list[int], **kw) -> ChunkScanner:
    scanner = ChunkScanner(session, display_path, counter, **kw)
    scanner.run(stream)
    return scanner


def usable(session, stream: BinaryIO) -> bool:
    """The chunk path needs a seekable regular file and no rule that reads every line
    (``GRPO_DOCTOR_SCAN=lines`` turns it off: the benchmark compares both paths on big files)."""
    if session.sees_every_line or os.environ.get("GRPO_DOCTOR_SCAN") == "lines":
        return False
    try:
        return stream.seekable() and os.path.isfile(getattr(stream, "name", "") or "")
    except (OSError, ValueError, AttributeError):   # a stream with no seekable(): read line by line
        return False


__all__ = ["ChunkScanner", "scan_file", "start_early", "big_enough",
           "usable"]
