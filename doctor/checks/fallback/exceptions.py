"""Which parsed exceptions explain a failure: the types raised only because something else failed first,
the first real exception, library frames and a frame's short description. Used by GD999 and by the rules
of other families that name the first real error."""
from __future__ import annotations

from ... import lazyre
from ...classify.component import rel
from ...classify.structure import CONSEQUENCES
from ...signals import ExceptionInfo, Frame, LogLine
from ...swift.framework import is_library_path

# Raised because something else failed first (or because the user stopped the run): one set, the structure table's
CONSEQUENCE_TYPES = CONSEQUENCES
# (pip's build tree, pip-install-<id>/: a package being installed from source, never the user's code)
_LIB_MARKERS = ("site-packages/", "dist-packages/", "/lib/python3", "\\Lib\\", "<frozen", "<string>", "pip-install-")


def is_library(path: str) -> bool:
    """Library code, also a framework's source checkout (never taken for the user's own frame: issue 15.5)."""
    return any(m in path for m in _LIB_MARKERS) or is_library_path(path)


def describe_frame(fr: Frame) -> str:
    return rel(fr)


def first_real(exceptions: list[ExceptionInfo]) -> ExceptionInfo | None:
    for exc in sorted(exceptions, key=lambda e: e.seq):
        if exc.short_type not in CONSEQUENCE_TYPES:
            return exc
    return None


def tail_before(tails: dict, last: LogLine | ExceptionInfo) -> list[LogLine]:
    """The kept lines (``RunState.tails``) of ``last``'s file up to ``last`` (a line, or an exception's line)."""
    return [t for t in tails.get(last.where.path) or () if t.seq <= last.seq]


def notebook_header(tails: dict, last: LogLine) -> tuple[LogLine, str] | None:
    """(line, exception type) of the IPython/Jupyter header (``TypeError    Traceback (most recent call last)``,
    IPython/core/ultratb.py) that opens the cut traceback ending at ``last``: the only line naming the exception
    when the paste stops before IPython's final ``Type: message`` line."""
    for line in reversed(tail_before(tails, last)):
        if "Traceback (most recent call last)" in line.text:
            head = line.text.strip().split(None, 1)[0] if line.text.strip() else ""
            if head.endswith(("Error", "Exception")) and head[:1].isupper():
                return line, head
            return None
    return None


# CPython's wordings of three exceptions as people retype them in a title or a sentence, quotes and "object" dropped
# ("Qwen2TokenizerFast has no attribute tokenizer"): Objects/object.c, Python/import.c, Python/ceval.c import_from.
# A CJK character may stand right before the name ("提示Qwen2TokenizerFast ..."), so the name's left edge is ASCII only
_EDGE = r"(?<![A-Za-z0-9_.'])"
_RETYPED = {
    "AttributeError": lazyre.compile(_EDGE + r"(?:(?P<module>module) )?'?(?P<obj>[A-Za-z_][\w.]*)'?\s+(?:object\s+)?"
                                     r"has no attribute\s+[`'\"]?(?P<attr>\w+)"),
    "ModuleNotFoundError": lazyre.compile(r"No module named\s+[`'\"]?(?P<mod>[\w.]*\w)"),
    "ImportError": lazyre.compile(r"cannot import name\s+[`'\"]?(?P<name>\w+)[`'\"]?\s+from\s+[`'\"]?(?P<mod>[\w.]*\w)"),
}
MAX_ABOVE = 12   # lines above a notebook header searched for its message (a title, a sentence or two)


def retyped_message(etype: str, text: str) -> str | None:
    """The message of an ``etype`` exception in CPython's own words, from a line that retypes it loosely; None when
    the line holds none."""
    rx = _RETYPED.get(etype)
    m = rx.search(text) if rx is not None else None
    if m is None:
        return None
    if etype == "AttributeError":
        if not m.group("module") and not m.group("obj")[:1].isupper():
            # a variable's name ("reward_model has no attribute 'modules'"): CPython names the object's type, which
            # the words do not give
            return None
        owner = f"module '{m.group('obj')}'" if m.group("module") else f"'{m.group('obj')}' object"
        return f"{owner} has no attribute '{m.group('attr')}'"
    if etype == "ModuleNotFoundError":
        return f"No module named '{m.group('mod')}'"
    return f"cannot import name '{m.group('name')}' from '{m.group('mod')}'"


def message_above(tails: dict, header: LogLine, etype: str) -> tuple[str, LogLine] | None:
    """(message, line) when a line above a notebook header (the issue's title, the author's sentence) retypes the
    message of the exception the header names, which the paste cut below the stack."""
    for line in reversed(tail_before(tails, header)[-MAX_ABOVE - 1:-1]):
        found = retyped_message(etype, line.text)
        if found:
            return found, line
    return None


_RAY_HEAD = lazyre.compile(r"\bRayTaskError\(([A-Za-z_][\w.]*)\): ray::")


def ray_header(tails: dict, last: LogLine) -> tuple[LogLine, str] | None:
    """(line, wrapped type) of Ray's ``RayTaskError(Type): ray::Task.method()`` line above the cut traceback ending at
    ``last``: Ray prints the remote task's own frames under that line (ray/exceptions.py RayTaskError), so it names
    the exception of a stack cut before its own ``Type: message`` line. Only frame lines may lie between the two."""
    tail = tail_before(tails, last)
    for line in reversed(tail):
        m = _RAY_HEAD.search(line.text)
        if m:
            return line, m.group(1)
        stripped = line.text.strip()
        if stripped and not stripped.startswith("File ") and line.text[:1] not in (" ", "\t"):
            return None
    return None


def unexplained(ctx, exceptions: list[ExceptionInfo]) -> list[ExceptionInfo]:
    """The exceptions no earlier finding quotes as evidence: the same line (an evidence text may be cut short), or
    the same text on another line (a rank's copy of it)."""
    at = {(e.path, e.line) for f in ctx.findings for e in f.evidence}
    texts = {e.text.split("]:", 1)[-1].strip() for f in ctx.findings for e in f.evidence}
    return [x for x in exceptions
            if (x.where.path, x.where.line) not in at and x.raw.split("]:", 1)[-1].strip() not in texts]


# a frame line of any traceback form (CPython's, an IPython cell's `File path:N, in f`, rich's box `path:N in f`)
_ANY_FRAME = lazyre.compile(r'\bFile "[^"]+", line \d+|\bFile [^\s"]+\.py:\d+|[\w./\\-]+\.py:\d+ in \w+')


def log_shows_frames(ctx) -> bool:
    """Whether the log shows a traceback frame anywhere: on a parsed exception, in a cut stack, or on a line of its
    kept end in any traceback form."""
    return any(e.frames for e in ctx.exceptions) or bool(ctx.open_tracebacks) or any(
        ("File" in ln.text or ".py:" in ln.text) and _ANY_FRAME.search(ln.text)
        for tail in ctx.tails.values() for ln in tail)


def stackless_words(ctx) -> str:
    """How to say that an exception was read without a stack: "The log shows no traceback for it" only when the
    log shows none anywhere; else the log's frames do not lead to this exception line (a frame written after it, a
    traceback in another form or cut elsewhere), which the report says instead of denying that they exist."""
    if log_shows_frames(ctx):
        return "The traceback frames in the log do not lead to this exception's line, so where it was raised is not shown"
    return "The log shows no traceback for it"
