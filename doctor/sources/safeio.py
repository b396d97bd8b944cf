"""Opening files that other people wrote: only regular files, never a FIFO, socket or device (opening a FIFO
blocks until a writer comes; /dev/urandom never ends), never a link out of the run directory, and every read
bounded by the size the file had when it was opened (a file that keeps growing is read as it was).

``open_regular`` is the one way sources open a file from a run directory or a path the user gave (standard
input is the caller's business).
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


class NotRegular(OSError):
    """The path is not a regular file (``what`` says what it is) or leads out of the run directory."""

    def __init__(self, path: str | os.PathLike, what: str):
        super().__init__(f"{os.fspath(path)}: {what}")
        self.filename = os.fspath(path)
        self.what = what
        self.strerror = what


def what_is(mode: int) -> str | None:
    """None for a regular file, else what it is, in words ("a FIFO (named pipe)", "a socket", ...)."""
    if stat.S_ISREG(mode):
        return None
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """True when ``path``, with every link resolved, is ``root`` (resolved) or below it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def link_out(path: str | os.PathLike, root: str | os.PathLike | None) -> bool:
    """True when ``path`` is a symlink (or passes through one) that leads out of ``root``."""
    return root is not None and not inside(path, root)


class _Capped(io.FileIO):
    """A FileIO that reads at most ``limit`` bytes from offset 0 (the size at open): no endless read."""

    def __init__(self, fd: int, limit: int, name: str):
        super().__init__(fd, "rb", closefd=True)
        self.limit = limit
        self.name = name

    def _left(self) -> int:
        return max(0, self.limit - self.tell())

    def readinto(self, b) -> int:  # type: ignore[override]
        left = self._left()
        if left <= 0:
            return 0
        view = memoryview(b).cast("B")
        return super().readinto(view[:left] if len(view) > left else view)

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        left = self._left()
        return super().read(left if size is None or size < 0 else min(size, left)) if left else b""

    def readall(self) -> bytes:
        return self.read(-1)


def open_regular(path: str | os.PathLike, *, root: str | os.PathLike | None = None,
                 buffering: int = io.DEFAULT_BUFFER_SIZE) -> io.BufferedReader:
    """Open a regular file for reading, bounded by its size now. Raises ``NotRegular`` for a FIFO, socket,
    device or directory (without blocking: the open is non-blocking) and, with ``root``, for a path that leads
    out of ``root`` through a symlink; ``OSError`` as ``open`` does otherwise."""
    if link_out(path, root):
        raise NotRegular(path, "a symlink out of the run directory, not followed")
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        what = what_is(st.st_mode)
        if what is not None:
            raise NotRegular(path, what)
        os.set_blocking(fd, True)
        raw = _Capped(fd, st.st_size, os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(raw, buffering)


def read_head(path: str | os.PathLike, limit: int, *, root: str | os.PathLike | None = None) -> bytes:
    """At most ``limit`` bytes from the start of a regular file (see ``open_regular``)."""
    with open_regular(path, root=root) as f:
        return f.read(limit)


def head_text(path: str | os.PathLike, limit: int) -> str:
    """The first ``limit`` bytes of a log as text, decompressed when the file is compressed (sources/compressed.py)."""
    from .compressed import READABLE, CompressionError, codec_of, decompressing  # noqa: PLC0415
    with open_regular(path) as f:
        codec = codec_of(f.peek(8)[:8])
        if codec in READABLE:
            try:
                return decompressing(f, codec, str(path)).read(limit).decode("utf-8", "replace")
            except CompressionError:
                return ""   # said once, by the reader of the log itself
        return f.read(limit).decode("utf-8", "replace")


def walk(top: str | os.PathLike):
    """``os.walk(top)`` without recursion: Python 3.11's os.walk recurses once per level, so ~990 nested folders
    ended analyze and check-ckpt in RecursionError. Top-down and depth-first like os.walk (the caller may prune
    ``dirnames`` in place), links to folders listed among ``dirnames`` but never entered, unreadable folders
    skipped (os.walk's default)."""
    stack = [os.fspath(top)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        dirnames, filenames = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(e.name)
        yield d, dirnames, filenames
        for name in reversed(dirnames):  # popped in order: the first folder's tree first, as os.walk
            sub = os.path.join(d, name)
            if not os.path.islink(sub):
                stack.append(sub)


def regular_size(path: str | os.PathLike) -> int | None:
    """The size of a regular file (links followed), None for anything else or an error."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def free_bytes(path: str | os.PathLike) -> int:
    """The bytes free to an unprivileged user on the filesystem of ``path``: shutil.disk_usage(path).free, which is
    this very statvfs reading on POSIX, without importing shutil (with bz2 and lzma, ~6 M instructions) in watch
    once a checkpoint is saved. OSError as shutil raises it."""
    if not hasattr(os, "statvfs"):   # Windows: shutil's own call
        import shutil
        return shutil.disk_usage(path).free
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
