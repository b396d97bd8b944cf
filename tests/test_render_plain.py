"""doctor/render/plain.py prints what rich prints on the console text.render uses without wrapping or colour: compared
on the text report of every analyze golden case and on hostile text (markup look-alikes, backslashes, emoji codes,
control characters, long lines with trailing whitespace)."""
from __future__ import annotations

import io
import os

import pytest
from golden import FIXTURES, cases
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape as rich_escape

from doctor.render import plain, text


def _rich(report) -> str:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, no_color=True, width=text.NO_WRAP, highlight=False, soft_wrap=True)
    return text._render(report, con, False, False, buf)


@pytest.mark.parametrize("case", cases())
def test_every_golden_report_reads_alike(case):
    from doctor.analyze import analyze
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        report = analyze([case])
    finally:
        os.chdir(old)
    assert text.render(report) == _rich(report)


HOSTILE = [
    "", "plain", "[rank0]: x", "a [bold]b[/bold] c", "\\[not a tag]", "\\\\[bold]x[/bold]", "\\\\\\[bold]x",
    "ends with \\", "ends with \\\\", "a :warning: b", ":smile-emoji: and :smile-text:", "12:05:33 :not_an_emoji:",
    "C:\\path:x:", "bell\x07back\x08vt\x0bff\x0ccr\rend", "multi\nline\n\nend\n", "\nleading", "x" * 450 + "   ",
    "y" * 398 + " " * 10, "z" * 401 + "\u3000\xa0 ", "[/]", "[dim]a[/] b", "[@click]x[/]", "[#ff0000]red[/]",
    "wide 中文 [b]x[/b] ✓", "[link=https://x.y]l[/link]", "[[bold]]", "a [ b ] c [1] [x=y]",
]


@pytest.mark.parametrize("s", HOSTILE)
def test_hostile_text_reads_alike(s):
    for markup in (s, rich_escape(s), f"[dim]{rich_escape(s)}[/dim] " + rich_escape(s)):
        assert plain.escape(s) == rich_escape(s)
        buf = io.StringIO()
        try:
            Console(file=buf, force_terminal=False, no_color=True, width=text.NO_WRAP, highlight=False,
                    soft_wrap=True).print(markup)
        except MarkupError:   # unbalanced raw markup: text.render escapes every text it did not write itself
            continue
        con = plain.Console()
        try:
            con.print(markup)
        except plain.NeedsRich:
            continue
        assert con.getvalue() == buf.getvalue(), markup


def test_a_tab_is_left_to_rich():
    with pytest.raises(plain.NeedsRich):
        plain.plain("a\tb")
