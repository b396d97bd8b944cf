"""IPython's verbose traceback (what Jupyter, Colab and VS Code notebooks show) as the traceback reader
(sources/traceback.py) sees it: the frame lines, the line that ran (IPython's arrow) and the source lines around it.

The shapes are IPython's (IPython/core/ultratb.py ``_format_filename`` and ``VerboseTB.format_record`` in 8.5-8.x,
IPython/core/tbtools.py ``_tokens_filename`` in 9.16) and two renderers': Colab's (IPython 7, the path a markdown link)
and VS Code's notebook renderer (extensions/notebook-renderers/src/stackTraceHelper.ts ``linkifyStack``), whose links
a copy of its output keeps as markdown.
"""
from __future__ import annotations

from .. import lazyre

# a line number as a renderer may link it: "592", or VS Code's "[592](vscode-notebook-cell:?execution_count=6&line=592)"
# and "[1090](https://...vscode-cdn.net/workspace/x/utils.py:1090)"
_NUMBER = r"(?:(\d+)|\[(\d+)\]\([^)\s]*\))"
# a file's frame: "File ~/env/.../trainer.py:2316, in Trainer.train(self, ...)" (the name "File " name ":" lineno, then
# ", in " and the call unless the frame is a module's top level); a VS Code notebook's output may come with the place
# linked too (a real copy, ROCm/ROCm#3132: "File [~/.../torch/optim/optimizer.py:391](https://file+.vscode-resource
# .vscode-cdn.net/...optimizer.py:391), in Optimizer.profile_hook_step.<locals>.wrapper(*args, **kwargs)")
FILE_FRAME = lazyre.compile(r"^\s*File\s+\[?(\S+?\.pyx?):(\d+)(?:\]\([^)\s]*\))?(?:,\s+in\s+([\w.<>]+)|\s*$)")
# a notebook cell's frame: "Cell In[6], line 592" (IPython >= 8.7: compilerop.format_code_name gives the label "Cell"
# and the name "In[6]"; 8.5-8.6 printed "Cell In [6], line 592"), then ", in func(args)" unless the frame is the cell's
# top level (VerboseTB.format_record: no call for "<module>"). VS Code's renderer links
# "line 592" and drops the rest of the line (cellRegex ends in ".*" and the line is replaced by the prefix and the link):
# "Cell In[6], [line 592](vscode-notebook-cell:?execution_count=6&line=592)" tells no function
CELL_FRAME = lazyre.compile(r"^Cell In\s?\[(\d+)\], (\[?)line (\d+)\]?(?:\([^)\s]*\))?(?:, in ([\w.<>]+))?")
CELL_WORD = "Cell In"  # the scanner's gate word for those frame lines (doctor/engine/state.py STATE_WORDS)
# Colab's rendering of an IPython 7 frame (IPython/core/ultratb.py VerboseTB, the path made a markdown link):
# "[/usr/local/lib/python3.12/dist-packages/x/y.py](https://localhost:8080/#) in <module>" or "... in train(self, ...)";
# the line number comes only with the arrow line "--> 107     from transformers.processing_utils import Unpack"
COLAB_FRAME = lazyre.compile(r"^\[([^\]\s]+?\.pyx?)\]\([^)\s]*\)\s+in\s+([\w.<>]+)")
COLAB_WORD = ".py]("  # the scanner's gate word for those frame lines (doctor/engine/state.py STATE_WORDS)
# the line that ran: "--> 2316 code" (ultratb _format_traceback_lines: the arrow, then the number)
_ARROW = lazyre.compile(r"^-+>\s*" + _NUMBER + r"\s(.*)$")
# the source lines printed around it ("    106 try:", "   (...)     12 code": a gap in the lines shown)
_SHOWN = lazyre.compile(r"^" + _NUMBER + r"(?:\s(.*))?$")
NO_LINE = -1  # a Colab frame before its arrow line gave the line number


def file_frame(stripped: str) -> tuple[str, int, str] | None:
    """(path, line, function) of a file's frame line."""
    m = FILE_FRAME.match(stripped)
    if m is None:
        return None
    return m.group(1), int(m.group(2)), _func(m.group(3)) if m.group(3) else "<module>"


def cell_frame(stripped: str) -> tuple[str, int, str] | None:
    """(cell name, line, function) of a notebook cell's frame line: the function it names, else ``<module>`` (IPython
    names none for a cell's top level), else ``<cell N>`` when a renderer took the rest of the line off."""
    m = CELL_FRAME.match(stripped)
    if m is None:
        return None
    func = _func(m.group(4)) if m.group(4) else (f"<cell {m.group(1)}>" if m.group(2) else "<module>")
    return f"In[{m.group(1)}]", int(m.group(3)), func


def colab_frame(stripped: str) -> tuple[str, int, str] | None:
    m = COLAB_FRAME.match(stripped)
    return None if m is None else (m.group(1), NO_LINE, _func(m.group(2)))


def arrow(stripped: str) -> tuple[int, str] | None:
    """(line number, code) of the line that ran."""
    m = _ARROW.match(stripped)
    return None if m is None else (int(m.group(1) or m.group(2)), m.group(3).strip())


def shown(stripped: str) -> str | None:
    """The code of a source line printed around the one that ran ('' for a gap "(...)" alone); None: not one."""
    if stripped.startswith("(...)"):
        rest = stripped[5:].strip()
        return (shown(rest) or "") if rest else ""
    m = _SHOWN.match(stripped)
    return None if m is None else (m.group(3) or "").strip()


def _func(name: str) -> str:
    """A qualified name's last part ("Trainer.train" -> "train"; one whose "<locals>" a markdown view ate ends in a
    dot: the part before it)."""
    return name.rstrip(".").rsplit(".", 1)[-1] or name
