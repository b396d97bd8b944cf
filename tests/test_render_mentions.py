"""Issue 30 point 13: GitHub @mentions from log text and invisible characters (zero-width, Unicode tags) in every
output format. Pasting a markdown report (or text / workflow output) into an issue must not notify anyone; nothing
invisible may hide in the text. JSON keeps the data faithful: invisible characters are written as \\uXXXX escapes
(json.loads gives them back), mentions are left as they are (no JSON consumer renders them)."""
from __future__ import annotations

import json
import re

import pytest

from doctor.analyze import analyze
from doctor.render import github, html, jsonr, markdown, sarif, text
from doctor.render.safe import clean, md_text, unmention

markdown_it = pytest.importorskip("markdown_it")

INVISIBLE = "\u200b\u200c\u200d\u2060\u2062\ufeff\u00ad\u180e\U000e0001\U000e0041\U000e007f\U000e0100"
# the argv of GD401's message is decoded with ast.literal_eval: the escapes become the characters themselves
LOG = ("ValueError: remaining_argv: ['--foo', 'cc @octocat and @my-org/ml-team, see x\u200by\U000e0041z "
       "\u2060\ufeff\u00ad\u180e\U000e0001\U000e007f\U000e0100 and `@octocat`', 'a ` b @octocat']\n").encode()
PEOPLE = ("@octocat", "@my-org/ml-team")
RENDERERS = {"text": text.render, "markdown": markdown.render, "github": github.render,
             "html": lambda r: html.render(r, title="t @octocat"), "json": jsonr.render, "sarif": sarif.render}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    f = tmp_path_factory.mktemp("m") / "x.log"
    f.write_bytes(LOG)
    rep = analyze([str(f)])
    assert rep.findings
    return rep


def _invisible(out: str) -> list[str]:
    return [hex(ord(c)) for c in out if c in INVISIBLE or 0xE0000 <= ord(c) <= 0xE01EF]


def _live_in_html(doc: str) -> list[str]:
    """Mentions GitHub would link: its filter skips text inside code, pre and a elements."""
    doc = re.sub(r"<(code|pre|a|title|script|style)\b.*?</\1>", "", doc, flags=re.S)
    doc = re.sub(r"<[^>]*>", "", doc)
    return [p for p in PEOPLE if re.search(rf"(?<![A-Za-z0-9_]){re.escape(p)}", doc)]


def _live_in_plain(out: str) -> list[str]:
    """Pasted into an issue, plain text is markdown: a mention is neutral only inside a code span."""
    return _live_in_html(markdown_it.MarkdownIt("commonmark").render(out))


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_no_invisible_characters(report, fmt):
    out = RENDERERS[fmt](report)
    assert not _invisible(out), fmt
    if fmt == "json":
        assert "\\u200b" in out and "\\udb40\\udc41" in out  # kept, as escapes
        assert "x\u200by\U000e0041z" in json.dumps(json.loads(out), ensure_ascii=False)


@pytest.mark.parametrize("fmt", ["text", "markdown", "github", "html"])
def test_mentions_are_not_live(report, fmt):
    out = RENDERERS[fmt](report)
    assert "octocat" in out and "ml-team" in out, fmt  # still there, readable
    live = _live_in_html(out) if fmt == "html" else _live_in_plain(out)
    assert not live, (fmt, live)


def test_json_keeps_mentions_faithful(report):
    assert "@octocat" in jsonr.render(report)


def test_unmention_forms():
    assert unmention("cc @octocat, @my-org/ml-team.") == "cc \uff20octocat, \uff20my-org/ml-team."
    # not mentions on GitHub: an e-mail address, a word before the @
    assert unmention("mail a@b.example or x@octocat") == "mail a@b.example or x@octocat"
    assert clean("a\u200bb\U000e0041c") == "a\\u200bb\\U000e0041c"
    assert "`@octocat`" in md_text("hi @octocat") and "\\`" in md_text("a ` b @octocat")
