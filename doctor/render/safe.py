"""The one place output is made safe. Every renderer passes input-derived strings (log text, file names, argv,
exception messages, values decoded by ``ast.literal_eval``) through here before they reach a terminal, a GitHub
issue or a CI dashboard.

- ``clean``: control characters (C0 but tab, DEL, C1 such as U+009B CSI and U+009D OSC), bidi controls
  (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C), line/paragraph separators and lone surrogates (bytes of a
  non-UTF-8 file name decoded with surrogateescape) are shown escaped: ``\\x1b``, ``\\u202e``, ``\\xff``.
- Markdown: ``md_text`` backslash-escapes what could become markup, ``md_code`` makes a code span whose fence
  is longer than any backtick run inside, ``md_message`` keeps the tool's own code spans and escapes the rest.
- JSON: ``json_dumps`` keeps values faithful (JSON escapes) but writes C1/bidi/DEL as ``\\uXXXX``, lone
  surrogates as ``\\xNN`` text and non-finite numbers as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
# what JSON leaves raw with ensure_ascii=False (C0 controls it escapes itself)
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _esc(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(text: Any) -> str:
    """``text`` as a string with no control, bidi or surrogate character left (they are shown escaped)."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # no Cc/Cf/Cs/Zl/Zp at all: the common case, one C-level pass
        return s
    return _UNSAFE.sub(_esc, s)


def unsafe(text: str) -> bool:
    """True when ``text`` still holds a character ``clean`` would escape (tests and the fuzzer)."""
    return _UNSAFE.search(text) is not None


# ----------------------------------------------------------------------------------------------------- markdown

_MD_SPECIAL = re.compile(r"([\\`*\[\]<>!|~#&{}])")
_MD_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # intraword '_' never opens emphasis
_MD_LEAD = re.compile(r"^(\s*)([-+=>]|\d+[.)])")


def md_text(text: Any, lead: bool = False) -> str:
    """Input-derived text as markdown that renders as that text and never as markup. ``lead``: the text starts a
    line (a leading ``-``, ``+``, ``>``, ``=`` or ``1.`` is escaped too)."""
    s = _MD_SPECIAL.sub(r"\\\1", clean(text))
    s = _MD_UNDERSCORE.sub(r"\\_", s)
    return _MD_LEAD.sub(lambda m: m.group(1) + "\\" + m.group(2), s) if lead else s


def _longest_run(s: str, ch: str = "`") -> int:
    runs = re.findall(f"{re.escape(ch)}+", s)
    return max((len(r) for r in runs), default=0)


def md_code(text: Any) -> str:
    """A code span holding ``text`` verbatim (cleaned): the fence is longer than any backtick run inside."""
    s = clean(text)
    if not s:
        return "` `"
    fence = "`" * (_longest_run(s) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


_SPAN = re.compile(r"(`+)(.+?)\1(?!`)", re.DOTALL)


def md_message(text: Any) -> str:
    """A message of the tool (plain text with `code` spans around values): each span becomes a safe code span,
    the rest is escaped text. A backtick from the input can at worst change where a span ends: every piece is
    still either escaped text or a properly fenced span."""
    s = clean(text)
    out: list[str] = []
    pos = 0
    for m in _SPAN.finditer(s):
        out.append(_md_plain(s[pos:m.start()], lead=not pos))
        out.append(md_code(m.group(2)))
        pos = m.end()
    out.append(_md_plain(s[pos:], lead=not pos))
    return "".join(out)


# what reads as code in a message: a flag (--num_generations, --flag=value) or a placeholder (<host>, <port>)
_CODEY = re.compile(r"(?<![\w`<-])(--[A-Za-z][\w.-]*(?:=[^\s`,;)]+)?|<[A-Za-z_][\w.:/-]{0,40}>)")


def _md_plain(text: str, lead: bool) -> str:
    """Message text outside the tool's spans: flags and placeholders become code spans, the rest escaped text."""
    out: list[str] = []
    pos = 0
    for m in _CODEY.finditer(text):
        out.append(md_text(text[pos:m.start()], lead=lead and not pos))
        out.append(md_code(m.group(1).rstrip(".")) + ("." if m.group(1).endswith(".") else ""))
        pos = m.end()
    out.append(md_text(text[pos:], lead=lead and not pos))
    return "".join(out)


def md_fence(lines: list[str]) -> list[str]:
    """A fenced code block around ``lines`` (cleaned); the fence is longer than any backtick run inside."""
    body = [clean(x) for x in lines]
    fence = "`" * max(3, max((_longest_run(x) for x in body), default=0) + 1)
    return [fence, *body, fence]


# ---------------------------------------------------------------------------------------------------------- JSON

MAX_DEPTH = 64  # a value nested deeper (a hostile args.json) is cut here: json.dumps would recurse past Python's limit


def _finite(obj: Any, depth: int = 0) -> Any:
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, str):
        return _SURROGATE.sub(_esc, obj) if not obj.isprintable() else obj
    if isinstance(obj, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return "(nested too deep: cut)"
    if isinstance(obj, dict):
        return {(_finite(k) if isinstance(k, str) else k): _finite(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, depth + 1) for v in obj]
    return obj


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_value(obj: Any) -> Any:
    """``obj`` with non-finite floats as "nan"/"inf"/"-inf" and lone surrogates as ``\\xNN`` text."""
    return _finite(obj)


def json_dumps(obj: Any, **kw: Any) -> str:
    """Valid JSON whatever the values (see the module doc); C1, DEL and bidi characters as ``\\uXXXX``."""
    text = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, default=lambda o: clean(o), **kw)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
