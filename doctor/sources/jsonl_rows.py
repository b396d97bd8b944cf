"""logging.jsonl read in blocks: lines split in C, rows decoded a few hundred per call, converted by their key
layout (issue 19).

The result is exactly ``metrics.parse_jsonl(decode(line))`` and ``metrics.jsonl_finite`` of every physical line,
with the same line numbers:

- lines are split by ``bytes.split`` while no line of a block is longer than the cap; else the ``LineSplitter``
  does it line by line, as ``physical_lines`` does;
- the lines that start with ``{`` and end with ``}`` are decoded together, as the elements of
  ``[line,\nline,\n...]``. Element i is line i when the decoder gives as many elements as lines and every one is
  a flat object: a line's first byte opens an element (a string cannot run past a line: JSON forbids a raw
  newline in one), a flat element ends at its first ``}`` outside strings, at the latest its line's last byte;
  so each line holds one element or more, and as many elements as lines means one each. A block where one is not
  flat is read line by line. An error of the decoder at a known byte (NaN, Infinity, broken UTF-8 ...) sends
  that line to ``parse_jsonl`` and the others on together; an error elsewhere sends the rest of the part;
- a row whose keys are those of the rows before it, with floats and texts in the same places, is converted with
  one C-level get per group (jsonl_layouts ``_by_layout``); any other through ``_convert``, parse_jsonl's loop. Where
  the block will be read as columns (``row_tables``), runs of one layout are converted at once and the block's
  columns taken with them (jsonl_layouts ``by_runs``).
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterator
from itertools import accumulate, compress, filterfalse, repeat
from operator import add, is_
from typing import Any, BinaryIO

from .. import lazyre
from ..engine import columns
from ..engine.table import Table
from . import metrics as msrc
from .jsonl_layouts import NESTED, _by_layout, _convert, by_runs
from .logtext import CHUNK, MAX_LINE, LineSplitter, decode

BLOCK = CHUNK // 16   # bytes read at a time (~100 rows of ms-swift): their objects stay in the CPU caches
PART = 256          # rows decoded in one call: as fast per row as one call per row (the objects' creation is
                    # the cost), and faster than thousands at once (memory locality)


def blocks(stream: BinaryIO, max_line: int = MAX_LINE) -> Iterator[tuple[int, list[bytes]]]:
    """(line number of the first line, physical lines) per block read: ``physical_lines`` in lists."""
    splitter = LineSplitter(max_line)
    read = getattr(stream, "read1", stream.read)
    while True:
        chunk = read(BLOCK)
        if not chunk:
            break
        if not splitter.skipping:
            if splitter.pending:   # the line the last block cut: same as feeding the splitter both
                chunk = bytes(splitter.pending) + chunk
                splitter.pending.clear()
            lines = chunk.split(b"\n")
            last = lines.pop()   # the unterminated rest (b"" when the chunk ends with a newline)
            if len(last) <= max_line and (not lines or max(map(len, lines)) <= max_line):
                first = splitter.lineno + 1
                splitter.lineno += len(lines)
                splitter.pending += last
                if lines:
                    yield first, lines
                continue
        got = splitter.feed(chunk)
        if got:
            yield got[0][0], [data for _, data in got]
    for lineno, data in splitter.close():
        yield lineno, [data]


Row = tuple[int, dict[str, Any], bool | None]   # (line number, values, finite)


def rows(stream: BinaryIO) -> Iterator[list[Row]]:
    """Per block, (line number, values, finite) of every line that parse_jsonl reads as a record."""
    nan = [False]   # whether the last block had rows the decoder refused (a run that diverged logs NaN)
    for first, lines in blocks(stream):
        yield parse_block(first, lines, nan)


def row_tables(stream: BinaryIO) -> Iterator[tuple[list[Row], Table | None]]:
    """``rows``, each block with its columns (engine/table.py; None where they were not taken: a block that will not
    be read as columns, columns.Block.of)."""
    nan = [False]
    for first, lines in blocks(stream):
        np = columns.load_numpy() if columns.ENABLED and columns.worth(len(lines)) else None
        yield parse_block_table(first, lines, nan, np)


def parse_block(first: int, lines: list[bytes], nan: list[bool] | None = None) -> list[Row]:
    """(line number, values, finite) of the lines of a block (line numbers from ``first``) that parse_jsonl reads
    as a record, in order. ``nan[0]``: look for NaN rows before decoding (set when a block had refused rows)."""
    return parse_block_table(first, lines, nan, None)[0]


def parse_block_table(first: int, lines: list[bytes], nan: list[bool] | None, np: Any) -> tuple[list[Row], Table | None]:
    """``parse_block``, and with numpy (``np``) the block's columns where its rows were decoded together and each
    line is a record (row i of the table is line i): the runs of one layout converted at once (jsonl_layouts)."""
    fast = msrc._fast_loads if msrc._fast_loads is not msrc._UNSET else msrc._fast_decoder()
    got: list[Any] = [None] * len(lines)
    table = None
    alone: list[int] = []   # the lines of the table read row by row
    if fast is not None:
        batch = _batchable(lines, nan is not None and nan[0])
        if batch:
            rows = lines if len(batch) == len(lines) else [lines[i] for i in batch]
            decoded = _decode(fast, rows)
            if nan is not None:
                nan[0] = len(batch) < len(lines) or None in decoded
            runs = by_runs(decoded, batch, len(lines), np) if np is not None else None
            if runs is not None:
                conv, table = runs
                if len(batch) == len(lines) and None not in conv:   # every line a row of a run: (line, values, finite)
                    return list(map(add, zip(range(first, first + len(lines))), conv)), table
                if len(batch) == len(lines):
                    got = conv
                else:
                    deque(map(got.__setitem__, batch, conv), 0)
                left = list(map(is_, conv, repeat(None)))   # the objects no run converted: row by row
                alone = list(compress(batch, left))
                batch, decoded = list(alone), list(compress(decoded, left))
            for i, obj in zip(batch, decoded):
                if obj is not None:
                    x = _by_layout(obj) or _convert(obj)
                    if x is NESTED:   # not a flat record: the decoded rows may not be the lines (see above)
                        got = [None] * len(lines)
                        table = None
                        break
                    got[i] = x
    out: list[Row] = []
    append = out.append
    for i, x in enumerate(got):
        if x is not None:
            append((first + i, x[0], x[1]))
            continue
        values = msrc.parse_jsonl(decode(lines[i]))
        if values is not None:
            append((first + i, values, msrc.jsonl_finite(values)))
        if table is not None:
            alone.append(i)
    if table is not None:
        at: Any = range(len(lines))
        if len(out) != len(lines):   # a line that is no record: the table's rows by their places among the records
            at = dict(zip([lineno - first for lineno, _, _ in out], range(len(out))))
            table.renumber(at, len(out))
        for i in alone:
            if i in at:
                table.add_row(at[i], out[at[i]][1])
    return out, table


def _batchable(lines: list[bytes], look_for_nan: bool) -> list[int]:
    """The indices of the lines to decode together: those that start with "{" and end with "}" (tested on the whole
    block first: the rows of a run all do), less, when asked, those holding NaN: the decoders refuse it, so in a
    run that diverged they are read alone without costing a failed decoding of the rows around them."""
    n = len(lines)
    if not (all(map(bytes.startswith, lines, repeat(b"{"))) and all(map(bytes.endswith, lines, repeat(b"}")))):
        return [i for i, data in enumerate(lines) if data[:1] == b"{" and data[-1:] == b"}"]
    if look_for_nan:
        joined = b"\n".join(lines)
        at = _find_nan(joined, 0)
        if at >= 0:
            starts = list(accumulate(map(_PLUS_ONE, map(len, lines)), initial=0))
            found: set[int] = set()
            while at >= 0:
                i = bisect_right(starts, at) - 1
                found.add(i)
                at = _find_nan(joined, starts[i + 1])
            return list(filterfalse(found.__contains__, range(n)))
    return list(range(n))


_PLUS_ONE = (1).__add__   # a line and its newline
_PLUS_TWO = (2).__add__   # a row and its separator ",\n" (_decode)
NAN_TRIES = 64   # "N"s that are not a NaN before the three-byte search takes over (a block of texts full of them)


def _find_nan(data: bytes, at: int) -> int:
    """``data.find(b"NaN", at)``: by the one-byte search for its "N" (memchr: ~70x faster than the three-byte search
    on 64 KiB of rows, where an "N" is rare but in a NaN), checking each "N" found, NAN_TRIES of them at most."""
    for _ in range(NAN_TRIES):
        at = data.find(b"N", at)
        if at < 0 or data.startswith(b"NaN", at):
            return at
        at += 1
    return data.find(b"NaN", at)


def _decode(fast: Any, rows: list[bytes]) -> list[Any]:
    """The decoded object of each row, None for a row to read alone. On an error at a known byte (a NaN row of a
    run that diverged), the rows before it are decoded together again, the row holding it is read alone and
    the rest go on together (about twice the decoder's work on such a block, no copy: each part is a slice of
    one buffer whose separators are turned into brackets in place)."""
    n = len(rows)
    buf = bytearray(b"[" + b",\n".join(rows) + b"]")
    begin = list(accumulate(map(_PLUS_TWO, map(len, rows)), initial=1))   # begin[i]: row i's first byte; begin[n]
    out: list[Any] = []
    for a in range(0, n, PART):
        out.extend(_decode_rows(fast, buf, begin, a, min(n, a + PART)))
    return out


def _decode_rows(fast: Any, buf: bytearray, begin: list[int], a: int, n: int) -> list[Any]:
    """The objects of rows a..n-1 (None: a row to read alone)."""
    out: list[Any] = []
    while a < n:
        got = _decode_part(fast, buf, begin, a, n)
        if not isinstance(got, int):
            out.extend(got)
            break
        bad = got if got >= a else -1
        if bad < 0:   # the decoder did not say where: the rest alone
            out.extend([None] * (n - a))
            break
        if bad > a:
            part = _decode_part(fast, buf, begin, a, bad)
            out.extend(part if not isinstance(part, int) else [None] * (bad - a))
        out.append(None)
        a = bad + 1
    return out


def _decode_part(fast: Any, buf: bytearray, begin: list[int], a: int, b: int) -> list[Any] | int:
    """The objects of rows a..b-1 (b > a), or the index of the row where the decoder stopped (-1: not known)."""
    lo, hi = begin[a] - 1, begin[b] - 2   # the separator (or "[") before row a, the one (or "]") after row b-1
    saved = buf[lo], buf[hi]
    buf[lo], buf[hi] = 0x5B, 0x5D   # "[" and "]"
    try:
        got = fast(memoryview(buf)[lo:hi + 1])
    except Exception as e:   # noqa: BLE001 - any refusal of the decoder (DecodeError, ValueError, RecursionError)
        pos = getattr(e, "pos", None)
        if not isinstance(pos, int):
            m = _AT_BYTE.search(str(e))
            pos = int(m.group(1)) if m else None
        return -1 if pos is None else max(a, min(b - 1, bisect_right(begin, lo + pos) - 1))
    finally:
        buf[lo], buf[hi] = saved
    if type(got) is not list or len(got) != b - a:
        return [None] * (b - a)
    return got


_AT_BYTE = lazyre.compile(r"\(byte (\d+)\)")   # msgspec's DecodeError says where; orjson's has .pos
