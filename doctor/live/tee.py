"""The pass-through side of `watch`, on the reader thread: write the child's bytes to our fds, tee whole lines to
the console log, and hand chunks to the analyser without ever waiting for it.

Nothing here depends on the analysis: an analysis that breaks or falls behind never costs a byte of the
terminal output or of the console log. A console log that cannot be written (disk full) is said once on stderr,
with the byte from which it is incomplete; the terminal output goes on.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque

from .say import say

HOLD_MAX = 1 << 20        # a giant unterminated line is teed in pieces beyond this
# what one queued chunk costs besides its bytes (the tuple, the bytes header, its read time, the queue's slot): a
# child writing a byte at a time must not queue a million tuples within a byte bound
CHUNK_COST = 256


def write_all(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            import select
            select.select([], [fd], [], 1.0)
            continue
        except (BrokenPipeError, OSError):
            return False
        view = view[n:]
    return True


def hold_std_fds() -> None:
    """Open /dev/null on fd 0, 1 or 2 when it is closed (`watch ... >&-`, a daemon's launcher). Otherwise the next
    file watch opens, the console log, gets that number: the pass-through to fd 1 would write every line into the
    console log a second time, and the doctor's messages on fd 2 would land in it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                nul = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            except OSError:
                return
            if nul != fd:  # cannot happen (lower fds are filled first, open takes the lowest), but never leak one
                os.dup2(nul, fd)
                os.close(nul)


class Stream:
    """One of the child's output streams: pass-through fd, the tee's held partial line, the analyser's state."""

    def __init__(self, fd: int, out_fd: int):
        from ..sources.logtext import LineSplitter
        self.fd = fd
        self.out_fd = out_fd
        self.out_ok = True
        self.held = bytearray()   # bytes of an unterminated line not yet teed (reader thread)
        self.splitter = LineSplitter()   # analyser thread from here on
        self.bar: tuple[str, int] | None = None
        self.resync = False       # the analyser skipped ahead: drop the rest of the cut line


class ConsoleLog:
    """The console log file: whole lines, in arrival order; a write error is said once, with the byte from which the
    log is incomplete, and nothing more is written (the pass-through is not affected)."""

    def __init__(self, path: str):
        self.path = path
        from .atomic import open_fresh
        self.f = open_fresh(path)  # a link left at the name (archived already, unless it came back) is refused
        self.written = 0
        self.failed_at: int | None = None
        self.error: str | None = None

    def write(self, data: bytes) -> None:
        if self.failed_at is not None or not data:
            return
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.f.fileno(), view)
            except OSError as e:
                self.failed_at = self.written
                self.error = e.strerror or str(e)
                say(f"{self.path}: cannot write the console log ({self.error}): it is incomplete from byte "
                    f"{self.written} on; the terminal output and the run are not affected")
                return
            self.written += n
            view = view[n:]

    def tee(self, st: Stream, data: bytes) -> None:
        nl = data.rfind(b"\n")
        if nl >= 0:
            self.write(bytes(st.held) + data[:nl + 1] if st.held else data[:nl + 1])
            st.held = bytearray(data[nl + 1:])
        else:
            st.held += data
            if len(st.held) > HOLD_MAX:
                self.write(bytes(st.held))
                st.held.clear()

    def close_stream(self, st: Stream) -> None:
        if st.held:
            self.write(bytes(st.held) + (b"\n" if not st.held.endswith(b"\n") else b""))
            st.held.clear()

    def close(self) -> None:
        try:
            self.f.close()
        except OSError:
            pass


class Feed:
    """Chunks for the analyser. ``put`` never blocks: when more than ``limit`` bytes wait (data plus CHUNK_COST each), or the analyser is more than
    ``lag`` seconds behind the output, chunks are skipped (counted, with their newlines) and the analyser gets one
    ("skip", stream, bytes, newlines) item before the next chunk. The last TAIL bytes skipped are kept: at the end
    of the run they are analysed (the final traceback is there)."""

    TAIL = 1 << 20

    def __init__(self, limit: int, lag: float = 30.0, clock=time.monotonic):
        self.limit = limit
        self.lag = lag
        self.clock = clock
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.backlog = 0
        self.lock = threading.Lock()
        self.skipping: dict[int, list] = {}   # stream fd -> [stream, bytes, newlines, tail]
        self.skipped = 0                     # bytes, in all
        self.head_t: float | None = None     # when the chunk the analyser takes next was read (None: queue empty)
        self.pending: deque = deque()        # read times of the queued chunks
        self.queued: dict[int, int] = {}     # stream fd -> bytes queued, not yet analysed
        self.drop: dict[int, int] = {}       # set at close: bytes of each stream the analyser skips (all but TAIL)

    def behind(self, n: int) -> bool:
        if self.backlog + n + CHUNK_COST > self.limit:
            return True
        t = self.head_t
        return t is not None and self.clock() - t > self.lag

    def put(self, st: Stream, data: bytes) -> None:
        n = len(data)
        if self.behind(n):
            sk = self.skipping.setdefault(st.fd, [st, 0, 0, bytearray()])
            sk[1] += n
            sk[2] += data.count(b"\n")
            sk[3] += data
            if len(sk[3]) > self.TAIL:
                del sk[3][:-self.TAIL]
            self.skipped += n
            return
        sk = self.skipping.pop(st.fd, None)
        if sk is not None:
            self.q.put(("skip", sk[0], sk[1], sk[2]))
        now = self.clock()
        with self.lock:
            self.backlog += n + CHUNK_COST
            self.queued[st.fd] = self.queued.get(st.fd, 0) + n
            self.pending.append(now)
            if self.head_t is None:
                self.head_t = now
        self.q.put((st, data))

    def done(self, st: Stream, n: int) -> None:
        with self.lock:
            self.backlog -= n + CHUNK_COST
            self.queued[st.fd] = self.queued.get(st.fd, 0) - n
            if self.pending:
                self.pending.popleft()
            self.head_t = self.pending[0] if self.pending else None

    def close(self) -> None:
        """End of the output: the skip records, then the kept tail of what was skipped last. The analysis does not
        hold up the end of the run either: of what still waits for it, all but the last TAIL bytes of each stream are
        skipped (the analyser takes ``take(st, data)`` before each chunk)."""
        with self.lock:
            for fd, n in self.queued.items():
                if n > self.TAIL:
                    self.drop[fd] = n - self.TAIL
        for st, nbytes, newlines, tail in self.skipping.values():
            tail_nl = tail.count(b"\n")
            self.skipped -= len(tail)
            self.q.put(("skip", st, nbytes - len(tail), newlines - tail_nl))
            if tail:
                with self.lock:
                    self.backlog += len(tail) + CHUNK_COST
                    self.pending.append(self.clock())
                self.q.put((st, bytes(tail)))
        self.skipping.clear()
        self.q.put(None)

    def take(self, st: Stream, data: bytes) -> tuple[int, int, bytes]:
        """Analyser side, after close: (bytes skipped, newlines skipped, the rest of the chunk to analyse)."""
        d = self.drop.get(st.fd, 0)
        if d <= 0:
            return 0, 0, data
        n = min(d, len(data))
        self.drop[st.fd] = d - n
        self.skipped += n
        return n, data.count(b"\n", 0, n), data[n:]
