"""Sparse files: a log with holes (a file preallocated or truncated up, a copy that kept the holes) has an apparent
size far above what it holds. Reading it whole reads gigabytes of zero pages (20 GiB of holes: 65 s). The holes hold
no line, only NUL bytes, so they are skipped with SEEK_DATA: what the file holds is read, in order, and a line that a
hole cuts is the bytes on both sides of it."""
from __future__ import annotations

import io
import os
from typing import BinaryIO

MIN_SIZE = 64 << 20     # smaller files are read whole whatever they hold
READ = 1 << 20


def is_sparse(fd: int | str | os.PathLike) -> bool:
    """Holding less than half its apparent size on disk, and large enough for that to matter (an open descriptor, or
    a path: links followed)."""
    try:
        st = os.fstat(fd) if isinstance(fd, int) else os.stat(fd)
    except OSError:
        return False
    return (st.st_size >= MIN_SIZE and hasattr(os, "SEEK_DATA") and hasattr(st, "st_blocks")
            and st.st_blocks * 512 < st.st_size // 2)


class HoleSkipping(io.RawIOBase):
    """The file's data extents, in order, without its holes. ``streamed``: read like a decompressed stream (no
    size, no seek: the line-by-line path)."""

    streamed = True
    damaged = ""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._fd = f.fileno()
        self._pos = 0

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buf) -> int:  # type: ignore[override]
        try:
            data = os.lseek(self._fd, self._pos, os.SEEK_DATA)
        except OSError:   # ENXIO: no data past this point (the file ends in a hole, or here)
            return 0
        chunk = os.pread(self._fd, min(len(buf), READ), data)
        if not chunk:
            return 0
        n = len(chunk)
        buf[:n] = chunk
        self._pos = data + n
        return n

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


def skipping_holes(f: BinaryIO) -> io.BufferedReader:
    return io.BufferedReader(HoleSkipping(f), buffer_size=READ)
