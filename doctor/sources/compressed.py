"""Compressed logs, read as a stream: ``train.log.gz`` (and bzip2, xz from the standard library; zstd when the
``zstandard`` package is installed) is decompressed on the fly, never whole in memory. The codec is told by the
file's first bytes (a ``.gz`` suffix on a plain file is read as plain text); the suffix only says which files of a run
folder to look at. A stream cut before its end (a log compressed while it was written, a partial copy) gives what
was decompressed, and says so.
"""
from __future__ import annotations

import io
import zlib
from typing import BinaryIO

MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
         (b"PK\x03\x04", "zip"), (b"\x04\x22\x4d\x18", "lz4"))
SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
READABLE = ("gzip", "bzip2", "xz", "zstd")
_HINT = {"zip": "unzip -p {name} | grpo-doctor analyze -", "lz4": "lz4 -dc {name} | grpo-doctor analyze -",
         "zstd": "pip install zstandard, or: zstd -dc {name} | grpo-doctor analyze -"}


class CompressionError(Exception):
    """A compressed input this tool cannot open: the message says how to read it instead."""


def codec_of(head: bytes) -> str | None:
    for magic, name in MAGIC:
        if head.startswith(magic):
            return name
    return None


def suffix_codec(name: str) -> tuple[str, str] | None:
    """(codec, the name without its compression suffix) for ``train.log.gz``; None for any other name."""
    low = name.lower()
    for suffix, codec in SUFFIXES.items():
        if low.endswith(suffix) and len(name) > len(suffix):
            return codec, name[: -len(suffix)]
    return None


CHUNK = 64 * 1024    # compressed bytes read at a time
ZSTD_CHUNK = 8 * 1024  # zstd's decompressobj has no output bound: smaller inputs keep each output small


class _Decoded(io.RawIOBase):
    """The decompressed bytes, from incremental decompressors (concatenated members and frames included), each
    call bounded in output. A stream that ends early (cut, or still being written) or damaged ends the input there,
    with everything decoded before it kept, and says why in ``damaged``."""

    streamed = True

    def __init__(self, raw: BinaryIO, codec: str) -> None:
        self._raw = raw
        self._codec = codec
        self._d = self._new()
        self._tail = b""        # compressed bytes read and not yet consumed
        self._raw_done = False
        self._member_done = False
        self.damaged = ""

    def _new(self):
        if self._codec == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # bz2 and lzma (~4 M instructions to import) with a log of theirs only: watch imports this module at start
        if self._codec == "bzip2":
            import bz2
            return bz2.BZ2Decompressor()
        if self._codec == "xz":
            import lzma
            return lzma.LZMADecompressor()
        import zstandard  # noqa: PLC0415 - checked by decompressing()
        return zstandard.ZstdDecompressor().decompressobj()

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        import lzma
        want = len(buf)
        while not self.damaged:
            try:
                out = self._step(want)
            except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, *self._codec_errors()) as e:
                self.damaged = f"read in part: the compressed data is damaged ({e}); everything before it was read"
                return 0
            if out:
                buf[: len(out)] = out
                return len(out)
            if self._raw_done and not self._tail:
                if not self._member_done:
                    self.damaged = ("read in part: the compressed stream ends before its end marker (cut, or "
                                    "still being written); everything before the cut was read")
                return 0
        return 0

    def _step(self, want: int) -> bytes:
        """Some decompressed bytes (at most ``want``), or b"" when more input is needed or none is left."""
        d = self._d
        if getattr(d, "eof", False):   # a member or frame ended: another may follow (gzip -c a b > ab.gz)
            rest = getattr(d, "unused_data", b"") + self._tail
            self._tail = rest
            self._member_done = True
            if not rest.strip(b"\x00"):
                self._tail = b""
                if self._raw_done:
                    return b""
                more = self._raw.read(CHUNK)
                if not more:
                    self._raw_done = True
                    return b""
                self._tail = more
            self._d = d = self._new()
        if not self._tail and not self._raw_done and self._needs_input(d):
            more = self._raw.read(ZSTD_CHUNK if self._codec == "zstd" else CHUNK)
            if more:
                self._member_done = False
            else:
                self._raw_done = True
            self._tail = more
        data, self._tail = self._tail, b""
        if self._codec == "gzip":
            out = d.decompress(data, want)
            self._tail = d.unconsumed_tail
        elif self._codec == "zstd":
            out = d.decompress(data)
        else:
            out = d.decompress(data, max_length=want)
        return out

    def _codec_errors(self) -> tuple[type[BaseException], ...]:
        """zstandard's own error class (ZstdError: not an OSError nor a ValueError), for a zstd stream."""
        if self._codec != "zstd":
            return ()
        import zstandard  # noqa: PLC0415 - loaded already: a zstd stream is being read
        return (zstandard.ZstdError,)

    @staticmethod
    def _needs_input(d) -> bool:
        return getattr(d, "needs_input", True)

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def decompressing(raw: BinaryIO, codec: str, name: str) -> io.BufferedReader:
    """A buffered reader (``peek`` works) of what ``raw`` decompresses to; ``damaged`` on ``.raw`` after reading."""
    if codec == "zstd":
        try:
            import zstandard  # noqa: F401, PLC0415 - optional: only for .zst logs
        except ImportError:
            raise CompressionError(f"{name}: zstd-compressed; {_HINT['zstd'].format(name=name)}") from None
    elif codec not in READABLE:
        hint = _HINT.get(codec, "decompress it first and pass the log")
        raise CompressionError(f"{name}: {codec}-compressed, which grpo-doctor does not read; "
                               f"{hint.format(name=name)}")
    return io.BufferedReader(_Decoded(raw, codec), buffer_size=1 << 20)


def damage(stream: object) -> str:
    """Why a decompressed stream ended early ('' when it did not, or for a plain stream)."""
    raw = getattr(stream, "raw", None)
    return raw.damaged if isinstance(raw, _Decoded) else ""


def is_streamed(stream: object) -> bool:
    """A stream read in order with no size or seek: decompressed, or a sparse file without its holes
    (sources/sparse.py)."""
    return bool(getattr(getattr(stream, "raw", None), "streamed", False))
