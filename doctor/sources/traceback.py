"""Recognise Python exceptions in a stream of log lines.

Handles the shapes seen in real logs: full tracebacks, tracebacks interleaved across ranks
(tracked per rank), excerpts that start mid-stack, paths shortened by the user, Python 3.11+
caret lines, and lone ``ValueError: ...`` lines pasted without their stack.
"""
from __future__ import annotations

import re
from collections import deque

from .. import lazyre
from ..signals import ExceptionInfo, Frame, LogLine
from . import ipython_tb, rich_box

_FRAME = lazyre.compile(r'^\s*(?:File\s+)?"?([^"]*?\.pyx?|<[^>]+>)"?, line (\d+), in (\S+)')
# a frame line a text box hard-wrapped inside its line number: `File "x.py", line 15` then `3, in convert_sharegpt`
_FRAME_CUT = lazyre.compile(r'^\s*File\s+"([^"]*?\.pyx?)", line (\d+)\s*$')
_FRAME_REST = lazyre.compile(r"^(\d*), in (\S+)")
# "ValueError: msg", "torch.OutOfMemoryError: msg", "AssertionError" (bare), "KeyError: 'prompt'"
_LABEL = lazyre.compile(r"[a-z0-9][\w.\-]{0,40}")
_EXC = lazyre.compile(
    r"^((?:[A-Za-z_][A-Za-z0-9_]*\.)*(?:[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)|"
    r"Exception|AssertionError|KeyError|StopIteration|NotImplementedError|KeyboardInterrupt|ChildFailedError))"
    r"(?::\s?(.*))?$"
)
# IPython's notebook tracebacks (Jupyter, Colab, VS Code): doctor/sources/ipython_tb.py
_HEADER = "Traceback (most recent call last)"
NO_FUNC = "<unknown>"  # the function of a frame line pasted without its ", in name"
CUT = "…/"  # the path of a frame line whose start was cut off (`grpo_trainer.py", line 637, in f`)
# an exception line glued onto the line before it (the newline lost in a paste or behind a redraw): the source line
# of the last frame, its caret line, or any line inside an open traceback, then "SomeError: message" right after a
# bracket, quote, caret or tilde ("    raise ValueError(msg)ValueError: msg", "    ^^^^^^^^^KeyError: 'x'", a call cut
# at its parenthesis "    x = f(AttributeError: ...")
# an exception's (dotted) type name, as tracebacks print it: shared with the line splitter (sources/logtext.py)
# (ASCII: a type glued to the text before it, `报错TypeError: ...`, is read from its own capital on)
EXC_TYPE = r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)"
# (with its message: a title that ends in a bare type says less than the stack pasted under it)
_CJK_GLUED = lazyre.compile(r"^\S*?[^\x00-\x7f](" + EXC_TYPE + r"):\s?(.+)$")
# a type a Chinese sentence says was raised, without its message ("13B的一直失败，报错NotImplementedError，提示子类没有覆写父类
# 方法", "训练报错 ValueError remaining_argv"): a frameless exception with no message, which the stack pasted beside it places
_CJK_NAMED = lazyre.compile(r"(?:报错|错误是?|出现了?|抛出了?|遇到了?)\s*[:：]?\s*(" + EXC_TYPE + r")(?=[\s，,。.!?！？）)]|$)")


def named_only(exc) -> bool:
    """An exception a sentence only named (``_CJK_NAMED``: no message, no stack)."""
    return not exc.message and not exc.frames and _CJK_NAMED.search(exc.raw) is not None


_GLUED = lazyre.compile(r"(?<=[()\]'\"^~}>])\s*(" + EXC_TYPE + r")(?::\s?(.*))?$")
# messages that C++ code raises, pasted without their type (the user copied the message only): the start of the
# message names the exception torch gives it. Sources: c10/cuda/CUDACachingAllocator.cpp ("CUDA out of memory. Tried
# to allocate", torch.OutOfMemoryError since 2.0), ATen's device check (aten/src/ATen/TensorIterator.cpp and
# native/...: "Expected all tensors to be on the same device, but found at least two devices"), c10/cuda/CUDAException
# ("CUDA error: an illegal memory access was encountered"), ProcessGroupNCCL ("NCCL error in: ...").
_BARE: tuple[tuple[re.Pattern, str], ...] = (
    (lazyre.compile(r"^(?i:cuda) out of memory\. Tried to allocate"), "torch.OutOfMemoryError"),
    (lazyre.compile(r"^Expected all tensors to be on the same device"), "RuntimeError"),
    (lazyre.compile(r"^CUDA error: (?:an illegal memory access|device-side assert|misaligned address|unspecified launch)"),
     "RuntimeError"),
    (lazyre.compile(r"^NCCL error in: \S+"), "torch.distributed.DistBackendError"),
    # CPython's own AttributeError wording (Objects/object.c PyObject_GenericGetAttr: "'%.100s' object has no attribute
    # '%U'"), a whole line pasted without its type (an issue's title)
    (lazyre.compile(r"^'[A-Za-z_][\w.]*' object has no attribute '\w+'$"), "AttributeError"),
    # ATen ExpandUtils.cpp infer_size_impl (a broadcast of two shapes), raised as RuntimeError
    (lazyre.compile(r"^The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"), "RuntimeError"),
)
# a notebook's error output as nbformat stores it (an .ipynb opened as text): "ename", then "evalue" (nbformat v4
# schema, output_type "error"); keys are written in sorted order, so the type comes first
_NB_ENAME = lazyre.compile(r'"ename":\s*"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)"')
_NB_EVALUE = lazyre.compile(r'"evalue":\s*"((?:[^"\\]|\\.)*)"')
# the escaped colour code in each entry of an nbformat "traceback" array (logtext.split_segments decodes the entry)
NB_TB_WORD = "\\u001b"
BARE_WORDS = ("out of memory. Tried", "Expected all tensors", "CUDA error: ", "NCCL error in: ",  # gate words
              "must match the size of tensor b",
              "' object has no attribute '",
              '"ename":', '"evalue":', NB_TB_WORD)
# an exception name retyped by hand with a space ("Runtime Error: ...", "Value Error: ...")
_SPACED = lazyre.compile(r"^(Runtime|Value|Type|Key|Attribute|Assertion|Index|Import|OutOfMemory|ModuleNotFound|"
                     r"FileNotFound|NotImplemented|Permission|Connection|OS) Error\s*:\s?(.*)$")
# rich's traceback box: doctor/sources/rich_box.py
_MAX_PATH = 1000
_MAX_FRAMES = 40
# CPython's faulthandler (Python/traceback.c dump_frame: '  File "<file>", line <n> in <name>', no comma before "in", as
# 3.11 prints it): the stack it dumps on a fatal signal or on faulthandler.dump_traceback, innermost frame first
FAULT_FRAME = lazyre.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_MAX_DUMPED = 400  # the dumped frames kept (the last ones): a dump of every thread of a big job runs to thousands
_MAX_MSG = 600


class _State:
    __slots__ = ("frames", "in_tb", "expect_code", "ipy", "shown", "last", "rich", "rich_path", "headless")

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.in_tb = False
        self.expect_code = False
        self.ipy = False  # the awaited code line is IPython's arrow line (context lines come before it)
        self.shown = ""  # the last source line IPython showed before that arrow line
        self.last: LogLine | None = None  # the last frame line seen
        self.rich = False  # inside rich's traceback box (its lines hold no gate word: every one is fed)
        self.rich_path: str | None = None  # the pieces so far of a frame line rich folded, awaiting its " in func"
        self.headless = False  # a rich box opened by a line inside it (its header not in the paste)


class TracebackTracker:
    """Feed LogLines; ``feed`` returns an ExceptionInfo when a line completes an exception."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, int | None], _State] = {}
        self._nb: dict[str, str] = {}  # a notebook error output's "ename" / "evalue" seen so far, and their file
        # faulthandler's frames (FAULT_FRAME), with the line of each: read once here for every reader of the run
        self.dumped: deque[tuple[LogLine, Frame]] = deque(maxlen=_MAX_DUMPED)
        # a frame line wrapped inside its line number, awaiting its remainder on the next line of the same file:
        # (file, frame path, line digits so far, state key, the frame's line)
        self._split: tuple[str, str, str, tuple[str, int | None], LogLine] | None = None

    def open_tracebacks(self) -> list[tuple[LogLine, tuple[Frame, ...]]]:
        """Tracebacks whose exception line never came (a log cut mid-stack): (last frame line, frames)."""
        out = []
        for st in self._states.values():
            if st.frames and st.last is not None:
                frames = tuple(st.frames)
                last = frames[-1]
                if st.ipy and st.shown and not last.code:
                    # cut before IPython's arrow line: the code is the nearest the log shows, the source line just
                    # above the one that ran (ultratb _format_traceback_lines prints them in order); the line number
                    # stays the frame's own
                    frames = frames[:-1] + (Frame(last.path, last.lineno, last.func, st.shown[:200]),)
                out.append((st.last, frames))
        return sorted(out, key=lambda x: x[0].seq)

    def expecting(self) -> bool:
        """Some frame still waits for its source line (an indented line without any gate word counts)."""
        return self._split is not None or any(st.expect_code and st.frames or st.rich for st in self._states.values())

    def _frame(self, key: tuple[str, int | None], st: _State | None, line: LogLine, frame: Frame) -> _State:
        """A frame line of the traceback of ``key`` (opened here when its header was not seen): the last
        ``_MAX_FRAMES`` frames are kept; the state waits for no source line until the caller says so."""
        if st is None:
            st = self._states[key] = _State()
        st.in_tb = True
        st.last = line
        st.frames.append(frame)
        if len(st.frames) > _MAX_FRAMES:
            del st.frames[0]
        st.expect_code = False
        st.ipy = False
        st.shown = ""
        return st

    def _rich(self, key: tuple[str, int | None], st: _State, line: LogLine, stripped: str) -> bool:
        """A line inside rich's traceback box (its side borders already taken off by the paste reader): a frame, the
        second half of a wrapped frame, the code line that ran, or the box's end. True when the line was one."""
        if line.raw.lstrip()[:1] == "╰" or rich_box.ASCII_END.match(line.raw):
            st.rich = False
            return True
        if stripped[:1] == "|" and stripped[-1:] == "|" and len(stripped) > 1:
            stripped = stripped[1:-1].strip()  # the ASCII box's side borders (the paste reader takes off "│" only)
            if not stripped:
                return True
        pieces, st.rich_path = st.rich_path, None
        m = rich_box.FOLDED.match(pieces + stripped) if pieces else rich_box.FRAME.match(stripped)
        if m:
            self._frame(key, st, line, Frame(m.group(1), int(m.group(2)), m.group(3))).rich = True
            return True
        m = None if pieces else rich_box.NOFILE.match(stripped)
        if m:
            self._frame(key, st, line, Frame(rich_box.NOFILE_PATH, int(m.group(2)), m.group(1))).rich = True
            return True
        joined = (pieces or "") + stripped
        if (rich_box.PIECE.match(joined) and (pieces or "/" in stripped or "\\" in stripped)
                and len(joined) <= _MAX_PATH):
            st.rich_path = joined
            return True
        m = rich_box.CODE.match(stripped)
        if m and st.frames:
            last = st.frames[-1]
            st.frames[-1] = Frame(last.path, last.lineno, last.func, m.group(1).replace("│", " ").strip()[:200])
            return True
        return False

    def _notebook_json(self, line: LogLine, stripped: str) -> ExceptionInfo | None:
        """An nbformat error output, one key per line (an .ipynb file) or all on one line (a JSON view): the exception
        once both its "ename" and its "evalue" were seen in the same file, in either order."""
        if self._nb.get("path") != line.where.path:
            self._nb = {"path": line.where.path}
        for key, rx in (("ename", _NB_ENAME), ("evalue", _NB_EVALUE)):
            m = rx.search(stripped)
            if m is not None:
                self._nb[key] = m.group(1)
        if "ename" not in self._nb or "evalue" not in self._nb:
            return None
        etype, msg = self._nb["ename"], self._nb["evalue"]
        self._nb = {}
        # a message of several lines ("...compiled.\nPlease update") reads as one, as a one-line exception does
        return ExceptionInfo(etype, " ".join(_unescape(msg).split())[:_MAX_MSG], (), line.where, line.rank, line.seq,
                             line.raw)

    def feed(self, line: LogLine) -> ExceptionInfo | None:
        text = line.text
        key = (line.where.path, line.rank)
        st = self._states.get(key)
        stripped = text.strip()
        if not stripped:
            return None
        if rich_box.HEADER in text:  # the header's start: one test per line for both forms (_HEADER begins with it)
            rich = "╭" in line.raw or bool(rich_box.ASCII_TOP.match(line.raw))  # a narrow rich box cuts its title short
            if rich or _HEADER in text:
                st = self._states[key] = _State()
                st.in_tb = True
                st.rich = rich
                return None
        if (st is None or not st.rich) and "│" in line.raw and rich_box.opens_box(line.raw, stripped):
            st = self._states[key] = _State()  # a paste that starts inside the box: its frames are read all the same
            st.in_tb = st.rich = st.headless = True
        elif st is not None and st.headless and st.rich and "│" not in line.raw:
            st.rich = False  # out of a box whose header was not seen: every line inside it has a side border
        if st is not None and st.rich:
            if self._rich(key, st, line, stripped):
                return None
        if self._split is not None:
            split, self._split = self._split, None
            rest = _FRAME_REST.match(stripped) if line.where.path == split[0] else None
            if rest is not None:
                frame = Frame(split[1], int(split[2] + rest.group(1)), rest.group(2))
                self._frame(split[3], self._states.get(split[3]), split[4], frame).expect_code = True
                return None
            if line.where.path == split[0] and split[3] == key:
                # not a wrapped frame line: one pasted without its function (`File "x.py", line 57` and then the code
                # line): a frame all the same, whose source line this line may be
                frame = Frame(split[1], int(split[2]), NO_FUNC)
                st = self._frame(key, st, split[4], frame)
                st.expect_code = True
        if ', line ' in text:
            cut = _FRAME_CUT.match(text) if text.rstrip()[-1:].isdigit() else None
            if cut is not None:
                self._split = (line.where.path, cut.group(1), cut.group(2), key, line)
                return None
            m = _FRAME.match(text)
            if m:
                # its source line follows on the next line (indented, often without any gate word)
                path = m.group(1)
                if not text.lstrip().startswith(("File", '"')) and "/" not in path and "\\" not in path:
                    path = CUT + path  # the paste starts inside the path: whose file it is cannot be told
                self._frame(key, st, line, Frame(path, int(m.group(2)), m.group(3))).expect_code = True
                return None
            m = FAULT_FRAME.match(text) or FAULT_FRAME.match(line.raw)
            if m:
                self.dumped.append((line, Frame(m.group("path"), int(m.group("line")), m.group("func"))))
                return None
        ipy = None
        if stripped[:5] == "File " and ".py:" in stripped:
            ipy = ipython_tb.file_frame(stripped)
        elif stripped[:5] == "Cell ":
            ipy = ipython_tb.cell_frame(stripped)
        elif stripped[:1] == "[" and ipython_tb.COLAB_WORD in stripped:
            ipy = ipython_tb.colab_frame(stripped)
        if ipy is not None:
            # IPython prints the source lines after it, the one that ran marked with an arrow (below)
            st = self._frame(key, st, line, Frame(*ipy))
            st.expect_code = st.ipy = True
            return None
        if stripped[:1] == "-" and st is not None and st.ipy and st.frames:
            ran = ipython_tb.arrow(stripped)
            if ran is not None:
                last = st.frames[-1]
                lineno = ran[0] if last.lineno == ipython_tb.NO_LINE else last.lineno
                st.frames[-1] = Frame(last.path, lineno, last.func, ran[1][:200])
                st.expect_code = st.ipy = False
                return None
        m = _EXC.match(stripped)
        if m is None and ": " in stripped[:72]:
            # a launcher's host or task label before the exception ("worker-7: ValueError: ...", pdsh's and srun
            # --label's prefixes) where the reader could not take it off (a one-line paste): a label is lower case or
            # digits with a digit in it, never an exception's capitalised type
            head, rest = stripped.split(": ", 1)
            if _LABEL.fullmatch(head):
                m = _EXC.match(rest)
        if m is None and not stripped.isascii():
            # the type glued to the words of a title before it (`swift3.8版本GRPO训练报错TypeError: ...`): read from
            # the type's own capital on
            m = _CJK_GLUED.match(stripped)
            if m is None and (st is None or not st.in_tb):
                named = _CJK_NAMED.search(stripped)
                # (RuntimeError and Exception alone say nothing of the cause: a title names them for any failure)
                if named is not None and named.group(1).rsplit(".", 1)[-1] not in ("RuntimeError", "Exception"):
                    return ExceptionInfo(named.group(1), "", (), line.where, line.rank, line.seq, line.raw)
        if m:
            etype, msg = m.group(1), (m.group(2) or "").strip()
            if msg[:2] == "**" and msg[-2:] == "**" and len(msg) > 4:
                msg = msg[2:-2].strip()  # markdown bold around the message in a pasted issue
            if etype.endswith("Warning") and not (st and st.in_tb):
                return None
            frames = tuple(st.frames) if st else ()
            if st is not None:
                del self._states[key]
            if len(msg) > _MAX_MSG:
                msg = msg[:_MAX_MSG] + "…"
            return ExceptionInfo(etype, msg, frames, line.where, line.rank, line.seq, line.raw)
        if '"ename"' in stripped or '"evalue"' in stripped:
            nb = self._notebook_json(line, stripped)
            if nb is not None:
                return nb
        if stripped[-1:] == ")" and "(" in stripped and (st is None or not st.expect_code):
            call = _CALL.match(stripped)
            if call is not None:
                # the exception's constructor pasted alone (`ValueError(f"Dataset ... {col} is not supported.")`): the
                # author quoted the raise from the source; its message is the template, holes included
                return ExceptionInfo(call.group(1), call.group(3)[:_MAX_MSG], (), line.where, line.rank, line.seq,
                                     line.raw)
        bare = _bare(stripped)
        if bare is not None:
            frames = tuple(st.frames) if st else ()
            if st is not None:
                del self._states[key]
            return ExceptionInfo(bare[0], bare[1][:_MAX_MSG], frames, line.where, line.rank, line.seq, line.raw)
        if st is not None and st.frames and st.in_tb and not st.ipy:
            g = _GLUED.search(stripped)
            if g and g.start() > 0:
                code = stripped[:g.start()].strip()
                last = st.frames[-1]
                if st.expect_code and not last.code and not set(code) <= set("^~ "):
                    st.frames[-1] = Frame(last.path, last.lineno, last.func, code[:200])
                msg = (g.group(2) or "").strip()
                if len(msg) > _MAX_MSG:
                    msg = msg[:_MAX_MSG] + "…"
                frames = tuple(st.frames)
                del self._states[key]
                return ExceptionInfo(g.group(1), msg, frames, line.where, line.rank, line.seq, line.raw)
        if st is not None and st.ipy:
            code = ipython_tb.shown(stripped)
            if code is None:  # not a source line: this frame shows no arrow line
                st.expect_code = st.ipy = False
            elif code:
                st.shown = code
            return None
        if st is not None and st.expect_code and st.frames:
            last = st.frames[-1]
            if not last.code and not set(stripped) <= set("^~ "):
                st.frames[-1] = Frame(last.path, last.lineno, last.func, stripped[:200])
            st.expect_code = set(stripped) <= set("^~ ")  # caret line: still under the same frame
        return None


_CALL = lazyre.compile(r"""^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\(\s*[fr]?(["'])(.{8,}?)\2\s*\)$""")


def _unescape(text: str) -> str:
    import json
    try:
        return str(json.loads(f'"{text}"'))
    except ValueError:
        return text


def _bare(text: str) -> tuple[str, str] | None:
    """(type, message) of an exception line pasted without its type or with the type retyped with a space."""
    m = _SPACED.match(text)
    if m is not None:
        return f"{m.group(1)}Error", m.group(2).strip()
    if text[:1] in "CENT'":
        for rx, etype in _BARE:
            if rx.match(text):
                return etype, text
    return None


def bare_message(text: str) -> bool:
    """Whether ``text`` opens with a message torch prints without its exception type (BARE_WORDS' wordings)."""
    return _bare(text) is not None

