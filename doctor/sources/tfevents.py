"""TensorBoard event files (``runs/events.out.tfevents.*``, what ``--report_to tensorboard`` writes) read as metric
rows, streaming, in pure Python: no tensorboard, tensorflow or protobuf import, nothing loaded whole.

The file is TFRecord framing: ``uint64 length``, ``uint32 masked crc32c(length)``, ``data``, ``uint32 crc32c(data)``.
Each record is an ``Event`` protobuf; only scalar summaries are read (``Summary.Value.simple_value``, and a
``tensor`` holding one float/double/int). The length's crc is checked (a bad one ends the file: it is cut or not an
event file); a record longer than MAX_RECORD is skipped with a seek, never read. Skipped, and said so in the
input's note: text, histogram, image and audio summaries, graphs.

Rows: the scalars of one logging call share a step; the trainer's tags ``train/loss`` become ``loss``, ``eval/loss``
``eval_loss`` (the names of logging.jsonl), and a row holds the ``step`` it was logged at.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

MAX_RECORD = 16 * 1024 * 1024   # an Event larger than this (a graph, an image) is skipped unread
MAX_ROW_KEYS = 4096              # scalars kept of one logging call (one step and kind)
_SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos",
                           "train_loss"})


# ----------------------------------------------------------------------------------------------- crc32c (length only)
def _table() -> list[int]:
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_CRC = _table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ----------------------------------------------------------------------------------------------- records
def records(stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(record number, data) of each record; data None for one skipped as too large. Stops at the end, at a cut
    record, or at a length whose crc does not match."""
    n = 0
    while True:
        head = stream.read(12)
        if len(head) < 12:
            return
        length, crc = struct.unpack("<QI", head)
        if masked_crc(head[:8]) != crc:
            return
        n += 1
        if length > MAX_RECORD:
            try:
                stream.seek(length + 4, 1)
            except (OSError, ValueError):
                return
            yield n, None
            continue
        data = stream.read(length)
        if len(data) < length or len(stream.read(4)) < 4:
            return
        yield n, data


# ----------------------------------------------------------------------------------------------- protobuf wire format
def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of a message: ints for varint and fixed, bytes for length-delimited."""
    i, end = 0, len(buf)
    while i < end:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        val: Any
        if wt == 0:
            val, i = _varint(buf, i)
        elif wt == 1:
            if i + 8 > end:
                raise ValueError("cut")
            val, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            if i + ln > end:
                raise ValueError("cut")
            val, i = buf[i:i + ln], i + ln
        elif wt == 5:
            if i + 4 > end:
                raise ValueError("cut")
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, val


_DTYPES = {1: ("<f", 4), 2: ("<d", 8), 3: ("<i", 4), 9: ("<q", 8)}   # DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64


def _tensor_scalar(buf: bytes) -> float | None:
    """The one number of a scalar TensorProto (float_val, double_val, int_val, int64_val or tensor_content)."""
    dtype, content = 0, b""
    for num, wt, val in fields(buf):
        if num == 1 and wt == 0:
            dtype = val
        elif num == 4 and wt == 2:
            content = val
        elif num == 5:   # float_val: packed or one fixed32
            if len(val) >= 4:
                return struct.unpack_from("<f", val)[0]
        elif num == 6:
            if len(val) >= 8:
                return struct.unpack_from("<d", val)[0]
        elif num in (7, 10):   # int_val, int64_val (varint or packed varints)
            if wt == 0:
                return float(val)
            if val:
                return float(_varint(val, 0)[0])
    if dtype in _DTYPES and content:
        fmt, size = _DTYPES[dtype]
        if len(content) == size:
            return float(struct.unpack(fmt, content)[0])
    return None


def _summary(buf: bytes, out: list[tuple[str, float]], skipped: set[str]) -> None:
    for num, wt, val in fields(buf):
        if num != 1 or wt != 2:
            continue
        tag, value, kind = None, None, None
        for vn, vwt, vv in fields(val):
            if vn == 1 and vwt == 2:
                tag = vv.decode("utf-8", "replace")
            elif vn == 2 and vwt == 5:
                value = struct.unpack("<f", vv)[0]
            elif vn == 8 and vwt == 2:
                value = _tensor_scalar(vv)
                if value is None:
                    kind = "text or non-scalar tensor"
            elif vn in (3, 4, 5, 6):
                kind = {3: "histogram", 4: "image", 5: "histogram", 6: "audio"}[vn]
        if tag is not None and value is not None:
            out.append((tag, value))
        elif kind:
            skipped.add(kind)


def events(stream: BinaryIO, skipped: set[str]) -> Iterator[tuple[int, int | None, float | None, list]]:
    """(record number, step, wall time, [(tag, value)]) of each event holding scalars. ``skipped``: what kinds of
    summary were left unread (for the input's note)."""
    for n, data in records(stream):
        if data is None:
            skipped.add("records over 16 MB")
            continue
        step, wall = None, None
        scalars: list[tuple[str, float]] = []
        try:
            for num, wt, val in fields(data):
                if num == 1 and wt == 1:
                    wall = struct.unpack("<d", val)[0]
                elif num == 2 and wt == 0:
                    step = val - (1 << 64) if val >= 1 << 63 else val
                elif num == 5 and wt == 2:
                    _summary(val, scalars, skipped)
                elif num == 4:
                    skipped.add("graph")
        except (ValueError, struct.error):
            skipped.add("malformed records")
            continue
        if scalars:
            yield n, step, wall, scalars


def _name(tag: str) -> tuple[str, str]:
    """('train'|'eval'|'summary', key) of a trainer tag: 'train/loss' -> loss, 'eval/loss' -> eval_loss."""
    if tag.startswith("train/"):
        key = tag[len("train/"):]
        return ("summary" if key in _SUMMARY_KEYS else "train"), key
    if tag.startswith("eval/"):
        return "eval", "eval_" + tag[len("eval/"):]
    return ("summary" if tag in _SUMMARY_KEYS else "train"), tag


def rows(stream: BinaryIO, skipped: set[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(record number of the row's first scalar, values) of each logging call: scalars of one step and one kind
    (train, eval, the final summary) form a row; a tag seen again starts a new one."""
    cur: dict[str, Any] = {}
    cur_key: tuple[int | None, str] | None = None
    first = 0
    for n, step, _wall, scalars in events(stream, skipped):
        for tag, value in scalars:
            kind, key = _name(tag)
            k = (step, kind)
            if cur and (k != cur_key or key in cur):
                yield first, cur
                cur = {}
            if not cur:
                cur_key, first = k, n
                if step is not None:
                    cur["step"] = float(step)
            if len(cur) >= MAX_ROW_KEYS and key not in cur:
                # a file adding tag after tag at one step would make one row of them all (333 MiB); a trainer logs
                # tens of scalars per step
                skipped.add(f"tags past {MAX_ROW_KEYS} in one step")
                continue
            cur[key] = float(value)
    if cur:
        yield first, cur
