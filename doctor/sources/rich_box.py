"""rich's traceback box (rich/traceback.py ``Traceback``; also typer's and many CLIs' pretty exceptions) as the
traceback reader (sources/traceback.py) and the paste reader (sources/paste.py) see it.

The box (rich 15.0: rich/traceback.py ``_render_stack``): a top border holding the header ``╭── Traceback (most recent
call last) ──╮``, one ``path:line in func`` line per frame, then the frame's source lines as rich/syntax.py numbers
them (the line that ran marked ``❱ N``, rich's ``line_pointer``; each indentation level drawn as a ``│`` guide), every
line between two ``│`` side borders, and ``╰──╯`` at the bottom.
"""
from __future__ import annotations

from .. import lazyre

BORDER = "│"
# a frame line (rich/traceback.py _render_stack: filename ":" lineno " in " name, when the file exists on disk). A frame
# line longer than the box is wrapped: at a space (which rich drops) or, inside a word, at any character (after the
# ":", inside the file name or the line number); its pieces are joined without a separator and read with the spaces
# optional (FOLDED)
FRAME = lazyre.compile(r"^(\S+?\.pyx?):(\d+) in ([\w<>.]+)$")
FOLDED = lazyre.compile(r"^(\S+?\.pyx?):(\d+) ?in ?([\w<>.]+)$")
# a frame line folded after its " in" (the function on the box's next line)
FRAME_HEAD = lazyre.compile(r"^(\S+?\.pyx?):(\d+) in$")
PIECE = lazyre.compile(r"^[^\s│❱]+(?: ?in)?$")  # a frame line's first pieces: the path, up to its " in"
# a frame whose file rich could not find on disk (exec'd or compiled code, a notebook cell): "in score:2"
# (rich/traceback.py _render_stack: "in " name ":" lineno when not os.path.exists(frame.filename))
NOFILE = lazyre.compile(r"^in ([\w<>.]+):(\d+)$")
NOFILE_PATH = "<file not on disk>"
# the source line that ran (rich/syntax.py: line_pointer "❱ " before its number, then the code with its indent guides)
CODE = lazyre.compile(r"^❱\s*\d+(?:\s*[│|]\s?|\s+)(.*)$")
HEADER = "Traceback (most recent"
# rich's ASCII box (a console whose encoding is not UTF-8): "+--- Traceback ... ---+", "| line |", "+------+"
ASCII_TOP = lazyre.compile(r"^\s*\+-+ Traceback \(most recent")
ASCII_END = lazyre.compile(r"^\s*\+-+\+\s*$")
# the words of a line that opens a box whose header the paste left out: a frame line holds ".py:", the line that ran
# "❱" (the scanner's gate words: doctor/engine/state.py STATE_WORDS)
WORDS = (".py:", "❱")


def one_border(s: str) -> str | None:
    """``s`` without the one side border a paste kept on a frame line or on the line that ran (the paste started or
    stopped inside the box, or a copy took the other border off: ``/x/train.py:105 in <module>     │``, ``│ ❱ 105 │
    main()``); None when ``s`` is not such a line (a line with a bar at one end says nothing of rich by itself)."""
    if s[-1:] == BORDER and s[:1] != BORDER:
        inner = s[:-1].strip()
        return inner if FRAME.match(inner) else None
    if s[:1] == BORDER and s[-1:] != BORDER:
        inner = s[1:].strip()
        return inner if CODE.match(inner) else None
    return None


def opens_box(raw: str, text: str) -> bool:
    """The line is unmistakably inside rich's box though no header was seen (a paste that starts inside the box): a
    frame line followed by the right border, or the line that ran after the left border (``text``: the line with its
    borders taken off by the paste reader, ``raw``: as it was)."""
    r = raw.strip()
    at = r.find(BORDER)
    if 0 < at <= 60:  # a line prefix before the box (Ray's worker label, a timestamp, a quote mark)
        r = r[at:]
    if r[-1:] == BORDER and (FRAME.match(text) or FRAME_HEAD.match(text)):
        return True
    return r[:1] == BORDER and CODE.match(text) is not None
