"""A pasted log put back into the lines the program printed: the indentation a paste added to every line (a markdown
code block indented under a list item, an e-mail or chat quote) removed, and lines that a terminal or a text box
hard-wrapped at a fixed width joined again.

Rules, the traceback parser and the metric readers read one line at a time: a frame line broken before its
`line N`, an exception message broken before its matched words or a `{'loss': ...}` dict broken in two are lost to
them. Only small inputs (pastes; a program's own log is neither indented as a whole nor wrapped) are read whole
for this, and only when a sign of either damage is there; each joined line keeps the number of its first
physical line, so evidence points at the paste as it is.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import lazyre
from .message_words import between_words

MAX_REFLOW = 4 * 1024 * 1024  # bytes: larger inputs are programs' logs, read as they are
MIN_WIDTH, MAX_WIDTH = 60, 400
# a line that opens a record of its own: never the continuation of a wrapped line
# a line that opens a record of its own, never the remainder of a wrapped one: a rank prefix, a timestamp, a table or box
# row (ASCII, or box-drawing characters U+2500-U+257F: rich's traceback box), a traceback's header or frame, a logger
# prefix, an exception line
_RECORD = lazyre.compile(rb"^(?:\[rank\s*\d+\]|\[?\d{4}-\d\d-\d\d[ T]\d\d:|[|+]|\xe2[\x94\x95]|Traceback \(most recent|"
                     rb"\[(?:INFO|WARNING|ERROR|DEBUG)|(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d |\s*File \"|"
                     rb"[IWEF]\d{4} \d\d:\d\d:|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):\s|"
                     # an issue thread's byline, as GitHub shows it and as thread exports write it ("skamano commented
                     # on Sep 21, 2023", "skamano \u00b7 description \u00b7 2023-09-21"): the next post, never a message's rest
                     rb"\S{1,40} (?:commented (?:on )?[A-Z][a-z]{2} \d{1,2}, \d{4}|\xc2\xb7 (?:description|comment) \xc2\xb7 \d{4}-))")
# the last character of a row drawn with box-drawing characters (U+2500-U+257F, UTF-8 e2 94 xx / e2 95 xx)
_BOX_END = lazyre.compile(rb"\xe2[\x94\x95][\x80-\xbf]$")


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def common_indent(lines: list[bytes]) -> int:
    """The indentation every non-blank line has (0: none). A tab counts as one character: a paste that indented with
    tabs indented every line with them."""
    if any(ln[:1] not in (b" ", b"\t") and ln.strip() for ln in lines):
        return 0  # a line in the first column (most logs: the first one)
    indents = [_indent(ln) for ln in lines if ln.strip()]
    if not indents:
        return 0
    least = min(indents)
    if least == 0:
        return 0
    # the same characters on every line (four spaces, a tab), not a mix that only looks aligned
    heads = {ln[:least] for ln in lines if ln.strip()}
    return least if len(heads) == 1 else 0


def _width(text: bytes) -> int:
    if text.isascii():  # most log lines: no decoding
        return len(text)
    try:
        return len(text.decode("utf-8"))
    except UnicodeDecodeError:
        return len(text)


def _shape(line: bytes) -> bytes:
    """The character classes of a line's first five characters (digit 9, letter a, others as they are)."""
    return bytes(57 if 48 <= c <= 57 else 97 if (65 <= c <= 90 or 97 <= c <= 122) else c for c in line[:5])


def wrap_width(lines: list[bytes]) -> int | None:
    """The column at which the lines were hard-wrapped, or None. Signs: the longest lines all have the same
    length W (a terminal or text box cuts every longer line there), at least three of them with different texts,
    and no line is longer."""
    widths = [_width(ln) for ln in lines]
    if not widths:
        return None
    longest = max(widths)
    if not MIN_WIDTH <= longest <= MAX_WIDTH:
        return None
    # a table drawn with box characters (nvidia-smi, pasted markdown) has rows of one width that are not wrapped
    at = [i for i, w in enumerate(widths) if w == longest and not lines[i].rstrip().endswith((b"|", b"+"))
          and not _BOX_END.search(lines[i].rstrip())]
    if len(at) < 2:
        return None
    # one long line repeated (the same warning) is not a wrap, unless each copy goes on in a line of its own: the
    # remainder a terminal cut off, from the first column, opening no record; copies of one line cut at one column
    # leave copies of one remainder (different lines after them are lines of their own: a person's remarks)
    if len({lines[i] for i in at}) < len(at) * 2 / 3 and not (all(
            i + 1 < len(lines) and lines[i + 1].strip() and lines[i + 1] != lines[i] and not _RECORD.match(lines[i + 1])
            and not lines[i + 1][:1].isspace() for i in at)
            and len({lines[i + 1] for i in at}) < len(at) * 2 / 3):
        return None
    # rows of a column-aligned table (nvidia-smi dmon, csv) are followed by rows that start the same way; a wrapped
    # line by its remainder, cut mid-text
    if sum(1 for i in at if i + 1 < len(lines) and _shape(lines[i + 1]) == _shape(lines[i])) * 2 >= len(at):
        return None
    # a wrap leaves its continuation lines: a non-blank line that opens no record of its own; with only two lines at
    # the width, both continuations must also start in the first column (text cut mid-line is not indented)
    follow = Counter(i + 1 < len(lines) and bool(lines[i + 1].strip()) and not _RECORD.match(lines[i + 1])
                     and (len(at) > 2 or not lines[i + 1][:1].isspace()) for i in at)
    return longest if follow[True] >= max(2, 2 * follow[False]) else None


_GUTTER = lazyre.compile(rb"^\s*\[?(\d{1,9})\]?(?:[:|\t]|\s)\s?")


def gutter(lines: list[bytes]) -> bool:
    """A log viewer's line numbers in front of every line (``[80810] text``, ``  12 | text``, ``12:text``): every
    non-blank line numbered, the numbers those of the lines themselves (a constant offset). A table whose rows start
    with a step number is not one: its header and separator rows carry none."""
    offsets = []
    for i, ln in enumerate(lines):
        if not ln.strip():
            continue
        m = _GUTTER.match(ln)
        if m is None:
            return False
        offsets.append(int(m.group(1)) - i)
    if len(offsets) < 3:
        return False
    common = Counter(offsets).most_common(1)[0][1]
    return common >= 0.9 * len(offsets)


# a label a launcher or a log collector writes in front of every line of a process: DeepSpeed's pdsh runner the host
# (``worker-1: ``, deepspeed/launcher/multinode_runner.py runs pdsh, which prefixes each line with "host: "), ``srun
# --label`` the task number (``3: ``), docker compose the service (``trainer-1  | ``)
_HOST_LABEL = lazyre.compile(rb"^([A-Za-z0-9][\w.\-]{0,62}): (?=\S| )")
_COMPOSE = lazyre.compile(rb"^([A-Za-z0-9][\w.\-]{0,62}) +\| ")
# the program's own words: a log level (uvicorn's "INFO:     ..."; "Error: ", "Warning: " as a program or Ray's
# scheduler writes them), an exception or warning type ("ValueError: x" printed by every rank), an all-capitals tag
_NOT_LABEL = lazyre.compile(rb"(?:[\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure)|[A-Z]+|Traceback|Caused|"
                        rb"(?i:error|warning|warn|exception|fatal|critical|info|debug|note|hint|tip)")
# a job runner's bracketed status in front of every line ("[err, 2:16, 162s, g3115] "): its numbers change from line
# to line, its shape does not; never a logger's own tag ("[INFO:swift] ", "[rank0]:"), which rules read
_BRACKET = lazyre.compile(rb"^\[([^\[\]\n]{1,80})\] ?")
_LOGGER_TAG = lazyre.compile(rb"(?i)info|warn|error|debug|critical|fatal|rank|swift|vllm|\.py")
_DIGITS = lazyre.compile(rb"\d+")
GUTTER, HOST_LABEL, COMPOSE, BRACKET = -1, -2, -3, -4  # the ``indent`` of a plan that takes a prefix off instead
_LABELS = {HOST_LABEL: _HOST_LABEL, COMPOSE: _COMPOSE, BRACKET: _BRACKET}


def _status_shape(label: bytes) -> bytes | None:
    """A bracketed status reduced to its shape (numbers taken out), None when it is no runner's: a logger's tag, or
    numbers and punctuation only (a timestamp, which hang rules read)."""
    if _LOGGER_TAG.search(label) or not any(c.isalpha() for c in label.decode("latin-1")):
        return None
    return _DIGITS.sub(b"0", label)


def labelled(lines: list[bytes]) -> int:
    """HOST_LABEL, COMPOSE or BRACKET when (nearly) every non-blank line starts with that kind of label, else 0. A
    label names a few processes, each on many lines; keys of a pasted config (``lr: 0.1``) or of a key | value table differ from line
    to line, and a log level (``INFO: ``) or an exception type (``ValueError: ``) is the program's own."""
    text = [ln for ln in lines if ln.strip()]
    if len(text) < 2:
        return 0
    for kind, rx in _LABELS.items():
        labels = [m.group(1) for m in map(rx.match, text) if m]
        if kind == BRACKET:
            labels = [shape for shape in map(_status_shape, labels) if shape is not None]
        if len(labels) < 0.9 * len(text):
            continue
        counts = Counter(labels)
        if len(text) == 2 and len(counts) > 1:
            continue  # two lines: one label on both
        # each label on several lines ("checkpoint-100: 15 GB", one line per name, is a listing, not a launcher's)
        top = counts.most_common(1)[0][1]
        if len(counts) <= 16 and top >= max(2, 0.3 * len(labels)) \
                and not any(_NOT_LABEL.fullmatch(label) for label in counts):
            return kind
    return 0


# an exception line cut mid-word by a paste (one long line wrapped, so no common width shows): it ends inside a word and
# the next line goes on in the first column inside the same word or sentence
# the prefixes a line may carry, any of them, nested (a collector's timestamp before Ray's worker prefix before a rank)
_PREFIX = (rb"(?:\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\]?\s|\[rank\s*\d+\]:\s*|"
           rb"\((?:\w+ )?(?:rank=\d+ )?pid=\d+(?:, ip=[\d.]+)?\)\s*)*")
_EXC_LINE = lazyre.compile(rb"^" + _PREFIX + rb"\**(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):\s")
# a frame line cut inside its path: `File "` opened, its `", line N` on the next line
_FRAME_OPEN = lazyre.compile(rb'^' + _PREFIX + rb'\s*File "[^"]+$')
_FRAME_REST = lazyre.compile(rb'^[^"\s]*", line \d+')
# a frame line cut after its line number, its function on the next line (" in done")
_FRAME_NO_FUNC = lazyre.compile(rb'^' + _PREFIX + rb'\s*File "[^"]+", line \d+,?\s*$')
_FUNC_REST = lazyre.compile(rb'^ ?in [\w<>.]+\s*$')
EXC_WRAP = 0  # the width that says: join only exception lines cut mid-word with their continuation
WORD_WRAP = -2  # the same, in a paste that rich word-wrapped (box-drawn traceback): the cut was at a space
_RICH_BOX = "│".encode()
MIN_CUT = 30  # a line shorter than this was not wrapped by a text box
SPACE_CUT = 60  # nor one this short that ends in a space: editors and browsers wrap prose at 72 columns or more
MAX_PASTE = 128 * 1024  # bytes: a single cut exception line is looked for in pastes, not in programs' own logs


def _word_end(line: bytes, nxt: bytes = b"") -> bool:
    # a letter last: a number at a line's end is usually whole ("local_world_size: 3"), unless the next line goes on
    # with digits or a dot (an address or a size cut in two: "(12" then "7.0.0.1, 51216).")
    if len(line) < MIN_CUT:
        return False
    last = line[-1:]
    return last.isalpha() or last == b"_" or (last.isdigit() and nxt[:1].isdigit() or last.isdigit() and nxt[:1] == b".")


def _space_end(line: bytes) -> bool:
    """A long line that ends in one space after a word: an editor's or a browser's word wrap keeps the space it broke
    at (padding to a terminal's width leaves many)."""
    return len(line) >= SPACE_CUT and line[-1:] == b" " and line[-2:-1] not in (b" ", b"")


# a line that opens a sentence of its own: a capitalised word, or an all-capitals one, then a space ("CUDA kernel errors
# might be asynchronously reported ...", which torch prints under every CUDA error)
# ("I am new to ...", "A run with ...": a one-letter word opens a sentence too; "When I fine-tune ...": so does a word
# before a capital one)
_SENTENCE_START = lazyre.compile(rb"^(?:[A-Z][a-z]*|[A-Z]{2,}) (?:[a-z]|[A-Z][a-z]* [a-z])")


def _cut(line: bytes, nxt: bytes) -> bool:
    """``line`` was cut where ``nxt`` goes on: inside a word (not before a line that opens a sentence of its own), or
    at a space kept at its end before a lower-case word or a number (a new sentence or a record starts with a
    capital)."""
    return _word_end(line, nxt) and not _SENTENCE_START.match(nxt) \
        or _space_end(line) and (nxt[:1].islower() or nxt[:1].isdigit()) or _comma_end(line)


def _comma_end(line: bytes) -> bool:
    """A long line that ends in a comma: a message that goes on (Python prints an exception's one-line message whole;
    one broken after its comma was broken by the paste or by a person writing it out)."""
    return len(line) >= MIN_CUT and line.rstrip(b" ")[-1:] == b","


# a snake_case name alone on its line, however long: a field pydantic names under its header
# ("zero_hpz_partition_size" under "3 validation errors for DeepSpeedZeroConfig")
_FIELD_NAME = lazyre.compile(rb"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+\s*$")


def _goes_on(line: bytes) -> bool:
    """The rest of a sentence: from the first column, with a space in it or long (a bare identifier on its own line is
    a field name, as pydantic's ValidationError prints them)."""
    # a character wrap at a space leaves that one space in front of the rest (never two: that is indentation)
    head = line[1:2] if line[:1] == b" " else line[:1]
    return bool(line.strip()) and (head.isalnum() or head == b"_") and not _RECORD.match(line.lstrip(b" ")) \
        and not _EXC_LINE.match(line) and (b" " in line.strip() or len(line) >= 20 and not _FIELD_NAME.match(line))


# a CJK character (U+3000-U+9FFF: punctuation, kana, ideographs) in UTF-8
_CJK = lazyre.compile(rb"[\xe3-\xe9][\x80-\xbf]{2}")


def cut_exception(line: bytes, nxt: bytes) -> bool:
    """An exception line cut mid-word whose rest is the next line, or a frame line cut inside its path."""
    if _FRAME_OPEN.match(line):
        return bool(_FRAME_REST.match(nxt))
    if _FRAME_NO_FUNC.match(line):
        return bool(_FUNC_REST.match(nxt))
    if line.isascii() and _CJK.search(nxt) or nxt.rstrip().endswith(b" \\"):
        # a person's sentence in another script after a library's English message, or a shell command continued on
        # the next line: text of its own, not the message's rest
        return False
    return _cut(line, nxt) and bool(_EXC_LINE.match(line)) and _goes_on(nxt)


# a traceback header or frame behind a launcher's label ("grpo_02: Traceback (most recent call last):", "trainer-2:
#   File ..."): pdsh labels only what the remote processes print, so a paste may hold the labelled traceback (its header
# cut or not) below a person's unlabelled prose
_TRACE_LABEL = lazyre.compile(rb"^([A-Za-z0-9][\w.\-]{0,62}): (?:Traceback \(most recent call last\)|\s+File \")")


def traceback_label(lines: list[bytes]) -> bytes | None:
    """The label of a labelled traceback in a paste whose other lines carry none, when it is on three lines or more
    and is no program's own word (a log level, an exception type)."""
    for ln in lines:
        m = _TRACE_LABEL.match(ln)
        if m is not None and not _NOT_LABEL.fullmatch(m.group(1)):
            prefix = m.group(1) + b": "
            if sum(1 for other in lines if other.startswith(prefix)) >= 3:
                return m.group(1)
    return None


def needs_reflow(data: bytes) -> tuple[int, int | None] | tuple[int, int | None, bytes] | None:
    """(indent, width) to undo in these bytes, or None when they show neither damage; a negative indent: a prefix in
    front of every line to take off (GUTTER: a line-number gutter; HOST_LABEL, COMPOSE, BRACKET: a launcher's label);
    a width of EXC_WRAP (WORD_WRAP): only an exception line cut mid-word (at a space) to join."""
    lines = data.split(b"\n")
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    if gutter(lines):
        return GUTTER, None
    label = labelled(lines)
    only = traceback_label(lines) if not label and (b": Traceback (most recent" in data or b':   File "' in data) \
        else None
    if only is not None:
        prefix = only + b": "
        lines = [ln[len(prefix):] if ln.startswith(prefix) else ln for ln in lines]
        label = HOST_LABEL
    elif label:
        lines = [_LABELS[label].sub(b"", ln, count=1) for ln in lines]
    indent = label or common_indent(lines)
    if indent > 0:
        lines = [ln[indent:] for ln in lines]
    width = wrap_width(lines)
    if width is None and len(data) <= MAX_PASTE and any(cut_exception(a, b) for a, b in zip(lines, lines[1:])):
        width = WORD_WRAP if _RICH_BOX in data else EXC_WRAP
    if not indent and width is None:
        return None
    return (indent, width) if only is None else (indent, width, only)


def reflowed(data: bytes, indent: int, width: int | None, only: bytes | None = None) -> Iterator[tuple[int, bytes]]:
    """(first physical line number, line) of the text with ``indent`` characters taken off every line and lines
    of exactly ``width`` characters joined with the next one (a blank line or a record start is never joined);
    ``only``: the one label to take off, from the lines that carry it."""
    prefix = only + b": " if only is not None else None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    pending: bytes | None = None
    start = 0
    for number, ln in enumerate(lines, 1):
        if ln.endswith(b"\r"):
            ln = ln[:-1]
        if prefix is not None:
            ln = ln[len(prefix):] if ln.startswith(prefix) else ln
        elif indent < 0:
            ln = (_LABELS.get(indent) or _GUTTER).sub(b"", ln, count=1)
        elif indent and ln.strip():
            ln = ln[indent:]
        if pending is not None:
            if width in (EXC_WRAP, WORD_WRAP):
                if _FRAME_OPEN.match(pending):
                    if _FRAME_REST.match(ln):
                        yield start, pending + ln
                        pending = None
                        continue
                elif _FRAME_NO_FUNC.match(pending):
                    if _FUNC_REST.match(ln):
                        yield start, pending.rstrip() + b" " + ln.strip()
                        pending = None
                        continue
                elif _goes_on(ln) and _cut(pending, ln):
                    # rich wraps at a space; a plain paste may have cut inside a word or between two
                    sep = width == WORD_WRAP or pending[-1:] == b"," or pending[-1:] != b" " and between_words(pending, ln)
                    pending += (b" " if sep else b"") + ln
                    if (_word_end(ln) or _space_end(ln)) and len(pending) < 4 * MAX_WIDTH:
                        continue  # cut again: the message goes on on the next line
                    yield start, pending
                    pending = None
                    continue
            elif ln.strip() and not _RECORD.match(ln):
                pending += ln
                if width is None or _width(ln) != width:
                    yield start, pending
                    pending = None
                continue
            yield start, pending
            pending = None
        if width in (EXC_WRAP, WORD_WRAP):
            if (_word_end(ln) or _space_end(ln) or _comma_end(ln) or len(ln) >= MIN_CUT and ln[-1:].isdigit()) \
                    and _EXC_LINE.match(ln) or \
                    _FRAME_OPEN.match(ln) or _FRAME_NO_FUNC.match(ln):
                pending, start = ln, number  # a number last: joined only if the next line goes on with digits
            else:
                yield number, ln
        elif width is not None and _width(ln) == width:
            pending, start = ln, number
        else:
            yield number, ln
    if pending is not None:
        yield start, pending


__all__ = ["BRACKET", "COMPOSE", "EXC_WRAP", "GUTTER", "HOST_LABEL", "MAX_REFLOW", "WORD_WRAP", "common_indent",
           "cut_exception", "labelled", "needs_reflow", "reflowed", "traceback_label", "wrap_width"]
