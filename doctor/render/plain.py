"""rich's ``Console.print`` for the one layout the text report prints without wrapping or colour (watch's console, a
piped ``analyze``), without importing rich: rich and the modules it loads cost ~170 M instructions (~45 ms of CPU),
a quarter of what watch spends on a failed run beyond its start. The text is what rich 15 gives for that console
(``soft_wrap``, width 400, no colour, no highlighting, markup and emoji codes on):

- markup tags dropped as rich.markup._parse reads them (``\\[`` a literal bracket, doubled backslashes halved);
- emoji codes (``:warning:``) replaced by rich's own function, imported only when a text holds such a code;
- the control codes rich strips (bell, backspace, vertical tab, form feed, carriage return) removed;
- nothing cropped or wrapped (``soft_wrap``: a line longer than the width is printed whole, trailing blanks kept).

A line holding a tab is not handled here (rich expands tabs by cell width): ``NeedsRich`` tells the caller to render
with rich. tests/test_render_plain.py compares both on every golden report and on hostile text.
"""
from __future__ import annotations

from .. import lazyre

# rich.markup.RE_TAGS, rich.markup.escape's pattern, rich._emoji_replace's pattern
_TAGS = lazyre.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_ESCAPE = lazyre.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_EMOJI = lazyre.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
_STRIP = {7: None, 8: None, 11: None, 12: None, 13: None}   # rich.control.STRIP_CONTROL_CODES


class NeedsRich(Exception):
    """The text has what only rich lays out (a tab)."""


def escape(markup: str) -> str:
    """rich.markup.escape: text that is not read as markup."""
    markup = _ESCAPE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


def _emoji(text: str) -> str:
    if ":" not in text or not _EMOJI.search(text):
        return text
    from rich._emoji_replace import _emoji_replace  # the emoji table: only for a text that holds a code
    return _emoji_replace(text)


def _pieces(markup: str):
    """The plain text pieces of ``markup`` (rich.markup._parse, tags left out)."""
    position = 0
    for m in _TAGS.finditer(markup):
        full, escapes, _ = m.groups()
        start, end = m.span()
        if start > position:
            yield markup[position:start].replace("\\[", "[")
        if escapes:
            backslashes, escaped = divmod(len(escapes), 2)
            if backslashes:
                yield "\\" * backslashes
            if escaped:
                yield full[len(escapes):].replace("\\[", "[")
                position = end
                continue
        position = end
    if position < len(markup):
        yield markup[position:].replace("\\[", "[")


def plain(markup: str) -> str:
    """What rich prints for ``markup`` on that console, without the final newline."""
    if "[" not in markup:
        text = _emoji(markup).translate(_STRIP)
    else:
        text = "".join(_emoji(p).translate(_STRIP) for p in _pieces(markup))
    if "\t" in text:
        raise NeedsRich
    return text


class Console:
    """The part of rich's Console that text.render uses without wrapping: ``print`` and the text printed."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def print(self, markup: str = "") -> None:
        self._parts.append(plain(markup) + "\n")

    def getvalue(self) -> str:
        return "".join(self._parts)
