"""``trainer_state.json`` as a metrics source: the ``log_history`` list that transformers' Trainer keeps (TRL's
GRPOTrainer and ms-swift's trainers inherit it), one entry per logged step.

What transformers writes (``Trainer.log``: ``output = {**logs, "step": self.state.global_step}`` appended to
``state.log_history``; ``TrainerState.save_to_json``: ``json.dumps(asdict(self), indent=2, sort_keys=True)``, in
every ``checkpoint-N/`` and, when a script calls ``trainer.save_state()``, in the output directory): each entry holds
the trainer's metrics of that step (TRL: ``reward``, ``reward_std``, ``frac_reward_zero_std``, ``kl``,
``completions/clipped_ratio``...; ms-swift the same keys, without the ``global_step/max_steps`` its logging.jsonl
adds) and the step number as ``step``; the last entry of a finished run holds ``train_runtime``.

Read streaming, never whole: the top-level object is walked key by key and each entry of ``log_history`` decoded
alone from a sliding buffer, so memory holds one entry (at most ``MAX_ENTRY`` bytes; a larger one ends the reading,
with a note). Each entry becomes a row as a logging.jsonl line does (``jsonl_layouts.flat_row``), with the line number
of its opening brace.
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from .. import lazyre
from .jsonl_layouts import flat_row

READ = 1 << 20        # bytes read at a time
MAX_ENTRY = 1 << 20   # one value of the file (an entry of log_history) larger than this ends the reading
_WS = " \t\r\n"
_DELIMS = _WS + ",:]}"   # what may follow a JSON value
_DECODER = json.JSONDecoder()   # NaN and Infinity allowed, as json.dumps writes them


class _Stop(Exception):
    """The file ends, is cut or is not a trainer state: what was read stands."""


class _Reader:
    """A window on the decoded text: ``buf[pos:]`` is what is left, ``line`` the line number at ``pos``."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.dec = codecs.getincrementaldecoder("utf-8")("replace")
        self.buf = ""
        self.pos = 0
        self.line = 1
        self.eof = False
        self.too_big = False

    def _more(self) -> bool:
        if self.eof:
            return False
        if len(self.buf) - self.pos > MAX_ENTRY:
            self.too_big = True
            return False
        data = self.stream.read(READ)
        self.buf = self.buf[self.pos:] + self.dec.decode(data, final=not data)
        self.pos = 0
        self.eof = not data
        return True

    def _advance(self, end: int) -> None:
        self.line += self.buf.count("\n", self.pos, end)
        self.pos = end

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            buf, i, n = self.buf, self.pos, len(self.buf)
            while i < n and buf[i] in _WS:
                i += 1
            self._advance(i)
            if i < n:
                return buf[i]
            if not self._more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise _Stop
        self._advance(self.pos + 1)
        return c

    def value(self) -> Any:
        """The JSON value at the cursor. A value not followed by a delimiter in the window is decoded again once
        more text is in (a number cut by the window, "0" of "0.09375", would read as a shorter one)."""
        self.peek()
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except (ValueError, RecursionError):
                if self._more():
                    continue
                raise _Stop from None
            if (end < len(self.buf) and self.buf[end] in _DELIMS) or self.eof or not self._more():
                self._advance(end)
                return obj


def rows(stream: BinaryIO, notes: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any], bool | None]]:
    """(line number, values, finite) of each entry of ``log_history``, in order; ``notes`` gets why the reading
    ended early (cut file, an entry too large, no ``log_history``)."""
    r = _Reader(stream)
    found = False
    try:
        r.expect("{")
        while r.peek() != "}":
            key = r.value()
            r.expect(":")
            if key != "log_history":
                r.value()   # a scalar or a small table (stateful_callbacks): read and dropped
            else:
                found = True
                r.expect("[")
                while r.peek() != "]":
                    for line, entry in _fast_entries(r):   # the entries whole in the window, at C speed
                        if isinstance(entry, dict):
                            row = flat_row(entry)
                            if row is not None:
                                yield line, row[0], row[1]
                    if r.peek() == "]":
                        break
                    line = r.line
                    entry = r.value()
                    if isinstance(entry, dict):
                        row = flat_row(entry)
                        if row is not None:
                            yield line, row[0], row[1]
                    if r.expect(",]") == "]":
                        return
                r.expect("]")
                return
            if r.expect(",}") == "}":
                break
    except _Stop:
        if notes is not None:
            if r.too_big:
                notes.append(f"an entry larger than {MAX_ENTRY >> 20} MiB at line {r.line}: read up to it")
            elif found:
                notes.append(f"cut or broken at line {r.line}: the entries before it are read")
        return
    if not found and notes is not None:
        notes.append("no log_history in it: no metric rows")


def top_scalars(stream: BinaryIO) -> tuple[dict[str, Any], str | None]:
    """The top-level values that are no container (``global_step``, ``max_steps``, ``save_steps``: what the
    checkpoint rules read), for a file too costly to decode whole (sources/jsoncost.py). The containers
    (``log_history``, ``stateful_callbacks``) are walked an element at a time and dropped, so memory holds one
    element, and a cut file is still told from a whole one. (values, None) or (values read, why the reading stopped)."""
    r = _Reader(stream)
    out: dict[str, Any] = {}
    try:
        r.expect("{")
        while r.peek() != "}":
            key = r.value()
            r.expect(":")
            c = r.peek()
            if c and c in "[{":
                _skip(r)
            elif isinstance(key, str):
                out[key] = r.value()
            else:
                raise _Stop
            if r.expect(",}") == "}":
                break
        else:
            r.expect("}")
        if r.peek():
            raise _Stop  # text after the object: json.loads refuses it too
    except _Stop:
        if r.too_big:
            return out, f"a value larger than {MAX_ENTRY >> 20} MiB at line {r.line}: not read"
        return out, f"not valid JSON: cut or broken at line {r.line}"
    return out, None


def _skip(r: _Reader) -> None:
    """Read past the container at the cursor, one element at a time (each decoded alone, then dropped). The elements
    that lie whole in the window go through the C scanner in a tight loop (a Python call per element costs ~6 us: 28 s
    for 8 MiB of `{},`); one cut by the window's end, or anything odd, takes the careful path of _Reader."""
    close = "]" if r.expect("[{") == "[" else "}"
    while True:
        pos = _fast_elements(r, close == "}")
        r._advance(pos)
        if r.peek() == close:
            break
        if close == "}":
            if not isinstance(r.value(), str):
                raise _Stop
            r.expect(":")
        r.value()
        if r.expect("," + close) == close:
            return
    r.expect(close)


_COMMA = lazyre.compile(r"[ \t\r\n]*,[ \t\r\n]*")
_COLON = lazyre.compile(r"[ \t\r\n]*:[ \t\r\n]*")
_SPACE = lazyre.compile(r"[ \t\r\n]*")


def _fast_entries(r: _Reader) -> Iterator[tuple[int, Any]]:
    """(line number, value) of the entries of a list that end before the window does and are followed by a comma, as
    _fast_elements finds them (a Python call per entry through _Reader cost ~6 us: 8 MiB of `{}` entries took 17.8 s);
    the cursor then stands at the first entry left to the careful path."""
    buf, scan, n = r.buf, _DECODER.scan_once, len(r.buf)
    pos = last = _SPACE.match(buf, r.pos).end()
    line = r.line + buf.count("\n", r.pos, pos)
    try:
        while True:
            try:
                obj, end = scan(buf, pos)
            except (StopIteration, ValueError, RecursionError):
                return
            m = _COMMA.match(buf, end)
            if m is None or m.end() >= n:
                return
            line += buf.count("\n", last, pos)
            last = pos
            yield line, obj
            pos = m.end()
    finally:
        r._advance(pos)


def _fast_elements(r: _Reader, keyed: bool) -> int:
    """Skip the elements (``"key": value`` when ``keyed``) that end before the window does and are followed by a
    comma; returns where the careful path takes over (the start of an element, or of the container's end)."""
    buf, scan, n = r.buf, _DECODER.scan_once, len(r.buf)
    pos = _SPACE.match(buf, r.pos).end()
    while True:
        at = pos
        try:
            if keyed:
                key, end = scan(buf, at)
                m = _COLON.match(buf, end)
                if not isinstance(key, str) or m is None:
                    return at
                _, end = scan(buf, m.end())
            else:
                _, end = scan(buf, at)
        except (StopIteration, ValueError, RecursionError):
            return at
        m = _COMMA.match(buf, end)
        if m is None or m.end() >= n:   # the container ends here, or the window may cut what follows
            return at
        pos = m.end()
