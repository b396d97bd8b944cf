"""The one place output is made safe. Every renderer passes input-derived strings (log text, file names, argv,
exception messages, values decoded by ``ast.literal_eval``) through here before they reach a terminal, a GitHub
issue or a CI dashboard.

- ``clean``: control characters (C0 but tab, DEL, C1 such as U+009B CSI and U+009D OSC), bidi controls
  (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C), line/paragraph separators and lone surrogates (bytes of a
  non-UTF-8 file name decoded with surrogateescape) are shown escaped: ``\\x1b``, ``\\u202e``, ``\\xff``.
- Markdown: ``md_text`` backslash-escapes what could become markup, ``md_code`` makes a code span whose fence
  is longer than any backtick run inside, ``md_message`` keeps the tool's own code spans and escapes the rest.
- Invisible characters (zero-width space/joiners, word joiner, BOM, soft hyphen, Unicode tags U+E0000-E007F,
  variation selectors supplement, Hangul fillers) are shown escaped by ``clean`` as well: text hidden in them (tag
  "ASCII smuggling") would otherwise pass unseen into every format. ``\\u200b``; astral ones ``\\U000e0041``.
- GitHub @mentions (``@user``, ``@org/team``) from the input are made inert where text may be pasted into GitHub:
  markdown puts each in a code span (`` `@user` ``; every other backtick is escaped, so none can pair with it),
  ``html.py`` in ``<code>``: GitHub links and notifies mentions in text nodes only, never inside code or pre
  elements. Plain text (the text report, workflow annotations) has no markup to scope a span with, so
  ``unmention`` writes the '@' as U+FF20 (``＠user``), which GitHub never links. The name stays exact and readable
  everywhere; a backslash or ``&#64;`` would not help (both are gone before GitHub looks for mentions) and an
  inserted zero-width character is what the previous point removes.
- JSON: ``json_dumps`` keeps values faithful (JSON escapes) but writes C1/bidi/DEL/invisible characters as
  ``\\uXXXX``, lone surrogates as ``\\xNN`` text and non-finite numbers as the strings ``"nan"``, ``"inf"``,
  ``"-inf"``. Mentions stay as they are there: JSON is data for programs, not rendered by GitHub.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from .. import lazyre

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
# invisible: they render as nothing (or as a blank) and can carry hidden text
_INVISIBLE = ("\u00ad\u034f\u115f\u1160\u180e\u200b-\u200d\u2060-\u2064\u206a-\u206f\u3164\ufeff\uffa0"
              "\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef")
# invisible characters that str.isprintable() lets through (Lo fillers, Mn joiners and selectors)
_PRINTABLE_HIDDEN = lazyre.compile("[\u034f\u115f\u1160\u3164\uffa0\U000e0100-\U000e01ef]")
_UNSAFE = lazyre.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}\ud800-\udfff]")
# what JSON leaves raw with ensure_ascii=False (C0 controls it escapes itself)
_JSON_RAW = lazyre.compile(f"[\x7f-\x9f{_BIDI}{_INVISIBLE}]")


def _esc(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{c - 0xDC00:02x}"
    if c > 0xFFFF:  # \\uXXXX would read as four hex digits and a separate character
        return f"\\U{c:08x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def _json_esc(m: re.Match) -> str:
    """A JSON escape: astral characters as their UTF-16 surrogate pair (the only form JSON has)."""
    c = ord(m.group())
    if c <= 0xFFFF:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


# GitHub's mention: '@' after the start or a non-word ASCII character, then a login (letters, digits, '-') and
# for a team '/slug'. Wider than GitHub's own pattern on purpose (a decorator such as @dataclass is wrapped too):
# a code span more than needed costs nothing, one too few notifies a stranger.
_MENTION = lazyre.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_-])?)?")


def wrap_mentions(text: str, open_: str, close: str) -> str:
    """Every mention of ``text`` between ``open_`` and ``close`` (markup of the caller's format)."""
    if "@" not in text:
        return text
    return _MENTION.sub(lambda m: open_ + m.group() + close, text)


def unmention(text: str) -> str:
    """Plain text (the text report, workflow annotations) with its mentions inert once pasted into GitHub: the '@'
    of each becomes U+FF20 FULLWIDTH COMMERCIAL AT. Plain text has no markup to scope a code span with: a stray
    backtick from the log pairs with a wrapper's backtick and leaves the name live; GitHub links only the ASCII '@',
    whatever surrounds it, and the name stays exact and readable."""
    if "@" not in text:
        return text
    return _MENTION.sub(lambda m: "\uff20" + m.group()[1:], text)


def clean(text: Any) -> str:
    """``text`` as a string with no control, bidi, invisible or surrogate character left (shown escaped)."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and (s.isascii() or not _PRINTABLE_HIDDEN.search(s)):  # the common case: C-level passes
        return s
    return _UNSAFE.sub(_esc, s)


def unsafe(text: str) -> bool:
    """True when ``text`` still holds a character ``clean`` would escape (tests and the fuzzer)."""
    return _UNSAFE.search(text) is not None


# ----------------------------------------------------------------------------------------------------- markdown

_MD_SPECIAL = lazyre.compile(r"([\\`*\[\]<>!|~#&{}])")
_MD_UNDERSCORE = lazyre.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # intraword '_' never opens emphasis
_MD_LEAD = lazyre.compile(r"^(\s*)([-+=>]|\d+[.)])")


def md_text(text: Any, lead: bool = False) -> str:
    """Input-derived text as markdown that renders as that text and never as markup. ``lead``: the text starts a
    line (a leading ``-``, ``+``, ``>``, ``=`` or ``1.`` is escaped too)."""
    s = _MD_SPECIAL.sub(r"\\\1", clean(text))
    # every backtick is escaped by now (no span to skip): a plain code span per mention
    s = wrap_mentions(_MD_UNDERSCORE.sub(r"\\_", s), "`", "`")
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


_SPAN = lazyre.compile(r"(`+)(.+?)\1(?!`)", re.DOTALL)


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
_CODEY = lazyre.compile(r"(?<![\w`<-])(--[A-Za-z][\w.-]*(?:=[^\s`,;)]+)?|<[A-Za-z_][\w.:/-]{0,40}>)")


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


_SURROGATE = lazyre.compile("[\ud800-\udfff]")


def json_value(obj: Any) -> Any:
    """``obj`` with non-finite floats as "nan"/"inf"/"-inf" and lone surrogates as ``\\xNN`` text."""
    return _finite(obj)


def json_dumps(obj: Any, **kw: Any) -> str:
    """Valid JSON whatever the values (see the module doc); C1, DEL and bidi characters as ``\\uXXXX``."""
    text = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, default=lambda o: clean(o), **kw)
    return _JSON_RAW.sub(_json_esc, text)
