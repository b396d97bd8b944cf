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
from collections import deque
from typing import BinaryIO

from ..engine.state import HEAD
from ..gate import cached_words, engine
from ..signals import LogLine, Where
from .line_sorter import LineSorter
from .logtext import physical_lines, segments
from .matchers import HyperscanMatcher, Matcher, matcher_for
from .scanread import CandidateReader, dense_start

CHUNK = 8 << 20   # bytes scanned at a time
FORK_MIN = 32 << 20  # smaller logs are scanned in this process


class ChunkScanner:
    """Streams one seekable log file into a Session, feeding only the lines that can matter."""

    def __init__(self, session, display_path: str, counter: list[int], *, chunk: int = CHUNK,
                 matcher: Matcher | None = None, tail: int | None = None, fork: bool | None = None,
                 early=None):
        self.session = session
        self.path = display_path
        self.counter = counter
        self.sorter = LineSorter(session, display_path, counter)   # where each candidate line goes (sources/line_sorter.py)
        self.chunk = max(chunk, 1)
        self.matcher = matcher or matcher_for(session.gate_words)
        self.tail_len = tail
        self.fork = fork  # None: fork a scanning child when it pays (see _fork_size); False: never
        self.child_exit: int | None = None  # the scanning child's exit code (-N: killed by signal N)
        self.early = early  # a ScanChild from start_early, to adopt

    @property
    def lineno(self) -> int:
        """Physical lines consumed so far."""
        return self.sorter.lineno

    @property
    def fed(self) -> int:
        """Physical lines decoded and fed (statistics)."""
        return self.sorter.fed

    def run(self, stream: BinaryIO) -> None:
        """The file's candidate lines read (sources/scanread.py) into the sorter (sources/line_sorter.py), in a
        scanning child when it pays; then the tail rebuilt from the file's last lines."""
        self.session.begin_log(self.path)
        start, first_line, first_seq = stream.tell(), self.lineno, self.counter[0]
        early = self._adopt(stream)
        reader = CandidateReader(self.sorter, self.matcher, self.chunk, self.fork)
        try:
            if early is not None:
                size = reader.read_child(stream, early)
            elif (fork_size := self._fork_size(stream)) is not None:
                size = reader.read_forked(stream, fork_size)
            else:
                reader.read_stream(stream)
                size = stream.tell()
        finally:   # a read error ends the file here: what was read before it still reaches the rules
            self.child_exit = reader.child_exit
            self.sorter.end()
        self._rebuild_tail(stream, size)
        self._rebuild_head(stream, start, size, first_line, first_seq)

    # ------------------------------------------------------------------ head
    def _rebuild_head(self, stream: BinaryIO, start: int, size: int, first_line: int, first_seq: int) -> None:
        """Replace the session's head for this input by the first lines of the file, as feed_line keeps it."""
        stream.seek(start)
        keep: list[LogLine] = []
        nlines = nsegs = 0
        # a bounded read: the head is a few dozen lines, a first line may be a megabyte of one JSON row
        for _, data in physical_lines(stream, end=min(size, start + 4 * 1024 * 1024)):
            for seg in segments(data):
                nsegs += 1
                body, raw, rank, origin = seg
                if body.strip():
                    keep.append(LogLine(body, raw, Where(self.path, first_line + nlines + 1), rank, first_seq + nsegs,
                                        origin))
            nlines += 1
            if len(keep) >= HEAD:
                break
        self.session.state.replace_head(self.path, keep)

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
            for _, data in physical_lines(stream, end=size):
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
        # a list: the state takes finished lines, no generator of this module runs inside it
        self.session.state.replace_tail(
            self.path, [LogLine(body, raw, Where(self.path, first_line + i), rank, first_seq + k, origin)
                        for i, k, (body, raw, rank, origin) in keep])


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
