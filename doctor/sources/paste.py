"""Text as people paste it (issue 15 point 3): the wrappers that a forum, a web log viewer or a chat put around a
log line, removed so that the signature rules and the traceback parser see the line as the program printed it.
The raw line is kept by the caller for evidence (``LogLine.raw``, with its own line number).

What is undone, each a standard format seen in real pastes (bench/ACCURACY-NOTES.md §3-4, mechanism A2):
- ``> `` quote prefixes (markdown and e-mail quoting; dev-log 069),
- markdown table rows and separator rows: ``File "...", line 149, in f |`` and ``| | text |`` from a web log
  viewer copied as a table (066), ``-- | --`` dropped,
- ``<timestamp> <host> >>`` prefixes of cluster log viewers (066), ``<timestamp> | <pod>/<container> | `` of log
  viewers' exports, and an ISO timestamp in front of ``[rankN]:``,
- ``**bold**`` around an exception line (070), and one exception line written by two processes at once
  (``AssertionErrorAssertionError: : msgmsg``),
- HTML ``<details>``/``<summary>``/``<pre>``/``<code>`` wrapper tags and ``<br>`` (GitHub issue forms), and the
  character entities of a log copied from an HTML page (``File &quot;/x.py&quot;, line 3``),
- user elisions (``...``, ``[... 8 similar lines ...]``, ``<truncated>``): a line holding only one becomes empty,
- the side borders of a box that rich draws around a traceback (``│ ValueError: x │``; one border alone on a frame line
  or on the line that ran, when the paste starts or stops inside the box: sources/rich_box.py), pytest's ``E   `` failure
  prefix (_pytest/_code/code.py), and loguru's default record prefix (``2024-05-01 10:00:00.123 | ERROR | mod:fn:42 -
  ``, loguru/_defaults.py LOGURU_FORMAT).

Cost: ordinary log lines pay one first-character test, one last-character test and two substring tests (``&`` and
``: : ``, ``needs_unwrap``); the regular expressions run only on lines that show a paste sign.
"""
from __future__ import annotations

import re

from .. import lazyre
from . import rich_box
from .prose_text import is_prose

_FIRST = frozenset(">|<*-.…│")      # first characters that may open a wrapper ("[" only with "...": "[rank0]:" is not)
_LAST = frozenset("|*>│")           # last characters that may close one
_PYTEST_E = lazyre.compile(r"^E {3,}(?=\S)")
_LOGURU = lazyre.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \| (?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\| "
                     r"[\w.<>-]+:[\w.<>-]+:\d+ - ")
# "2025-11-19 18:38:40.880773 master-0 >> " (a host name, then >>), or a bare ISO timestamp before "[rank"
_TS_HOST = lazyre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+(?:\S+\s+)?>>\s?")
# a log viewer's "time | source | message" export (Kubernetes log tools, Grafana/Loki: pod/container as the source)
# (a level name in that column is loguru's record, read by _LOGURU with its module:function:line)
_TS_SOURCE = lazyre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\s+\|\s+"
                        r"(?!(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s)[\w.\-]+(?:/[\w.\-]+)*\s+\|\s+")
# Python logging's "%(asctime)s | %(levelname)s | %(name)s | %(message)s" (FastChat's fastchat/utils.py build_logger,
# which also sends a process's stdout and stderr to loggers named "stdout" and "stderr"): the level is the logger's,
# every line of a redirected stream carries the same one
_TS_LEVEL_NAME = lazyre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)? \| "
                            r"(?:TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL)\s*\| [\w.\-]+ \| ")
_TS_RANK = lazyre.compile(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s+(?=\[rank\d+\]:)")
_TABLE_SEP = lazyre.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_HTML = lazyre.compile(r"</?(?:details|summary|pre|code|p|br|b|strong|em)\b[^>]*>", re.I)
# two processes writing the same exception line at once, their writes interleaved: "AssertionErrorAssertionError: :
# msgmsg" (each process's type, then both separators, then both messages)
_TWICE = lazyre.compile(r"^(?P<t>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))(?P=t): : (?P<m>.*)$")
_ENTITY = lazyre.compile(r"&(?:quot|#39|#x27|apos|lt|gt|amp);")
_ELISION = lazyre.compile(r"^\s*(?:\.{3,}|…|\[\s*\.{3}.*\.{3}\s*\]|\(\s*\.{3}.*\)|<truncated[^>]*>|\.\.\. \(\d+ .*\))\s*$")


def needs_unwrap(text: str) -> bool:
    """A cheap test: could this line carry a paste wrapper?"""
    if not text:
        return False
    c = text[0]
    if c in _FIRST or text[-1] in _LAST:
        return True
    if "&" in text and _ENTITY.search(text):
        return True
    if ": : " in text:
        return True
    if c == "[" or c == "(":
        return "..." in text  # "[... 8 similar lines ...]"
    if c == " ":
        return "|" in text  # an indented table row
    if c == "E":
        return text[1:4] == "   "  # pytest's failure lines
    return c.isdigit() and (" >> " in text or "[rank" in text[:48] or " | " in text[19:36])


def unwrap(text: str) -> str:
    """The line without its paste wrappers (unchanged when it has none)."""
    s = text.strip()
    orig = s
    for _ in range(4):  # wrappers nest: "> | 2025-.. host >> [rank1]: **Error: x** |"
        before = s
        if s.startswith(">") and not s.startswith(">>"):
            s = s[2:] if s[1:2] == " " else (s[1:] if s[1:2] in (">", "") else s)
        if "|" in s and _TABLE_SEP.match(s):
            return ""
        # a table row starts with its bar; a line that only ends with one and has more inside is a program's own
        # bar-separated record (Megatron's iteration line: "iteration 7/ 2174 | ... | grad norm: 0.016 |")
        if "|" in s and (s.startswith("|") or s.endswith("|") and s.count("|") == 1):
            cells = [c.strip() for c in s.strip("|").split("|")]
            cells = [c for c in cells if c]
            s = " ".join(cells) if len(cells) > 1 else (cells[0] if cells else "")
        if s[:1].isdigit():
            m = _TS_HOST.match(s) or _TS_RANK.match(s) or _TS_SOURCE.match(s)
            if m:
                s = s[m.end():]
            else:
                m = _TS_LEVEL_NAME.match(text.lstrip()) if s == orig else None
                if m:  # the process's own indentation after the prefix stays (a traceback's frame lines)
                    return text.lstrip()[m.end():]
        if ": : " in s:
            m = _TWICE.match(s)
            if m:
                msg = m.group("m")
                half = len(msg) // 2
                s = f"{m.group('t')}: {msg[:half] if msg[:half] == msg[half:] else msg}"
        if "&" in s and _ENTITY.search(s):
            import html  # here: its entity table costs every start ~8 M instructions, and few lines get here
            s = html.unescape(s).strip()
        if "<" in s and ">" in s:
            s = _HTML.sub("", s).strip()
        if s.startswith("**") and s.endswith("**") and len(s) > 4:
            s = s[2:-2].strip()
        if s[:1] == "│" and s[-1:] == "│" and len(s) > 2:
            s = s[1:-1].strip()
        elif s[:1] == "│" or s[-1:] == "│":
            s = rich_box.one_border(s) or s
        if s[:1] == "E":
            m = _PYTEST_E.match(s)
            if m:
                s = s[m.end():]
        if s[:1].isdigit():
            m = _LOGURU.match(s)
            if m:
                s = s[m.end():]
        if s == before:
            break
    if s and s[0] in ".[(<…" and _ELISION.match(s):
        return ""
    return text if s == orig else s


def unbold(text: str) -> str:
    """``**RuntimeError: x**`` after a ``[rankN]:`` prefix -> ``RuntimeError: x``."""
    if text.startswith("**") and text.endswith("**") and len(text) > 4:
        return text[2:-2].strip()
    return text


# A metrics dict pretty-printed over several lines (``pprint`` of the trainer's log dict, a notebook cell's
# output, a dict re-indented in an issue): ``{'loss': 0.0,`` / `` 'reward': 0.0,`` / `` 'epoch': 0.09}``.
# Rules read one line at a time, so the lines are joined into the one-line dict the trainer prints.
# The layout is CPython's: Lib/pprint.py PrettyPrinter._pprint_dict puts one key per line once the dict is wider
# than 80 columns (pprint.pprint(logs), IPython's display of a dict); real case: tulerfeng/Video-R1#86 (13 lines).
DICT_OPEN = lazyre.compile(r"""^\{\s*['"][^'"]{1,120}['"]\s*:""")
# a log_history entry of trainer_state.json pasted as the file holds it: transformers writes it with
# json.dumps(indent=2, sort_keys=True) (trainer_callback.py TrainerState.save_to_json), so each entry's first item is
# "epoch" alone on its line, under a "{" line; the entry closes with "}" or "},"
_ENTRY_OPEN = lazyre.compile(r'^"epoch"\s*:\s*-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?,$')
ENTRY_WORD = '"epoch": '  # the scanner's gate word for that line (doctor/engine/state.py STATE_WORDS)
DICT_ITEM = lazyre.compile(r"""^\s*['"][^'"]{1,120}['"]\s*:\s*\S""")
DICT_MAX_LINES = 64


class DictJoiner:
    """Feeds line texts; returns the joined one-line dict when a multi-line dict closes, else None."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] | None = None

    def feed(self, text: str) -> str | None:
        s = text.strip()
        if self.parts is None:
            if s[:1] == "{" and not s.endswith("}") and DICT_OPEN.match(s):
                self.parts = [s]
            elif s[:1] == '"' and _ENTRY_OPEN.match(s):
                self.parts = ["{", s]
            return None
        if s in ("}", "},"):  # a JSON object's closing brace on its own line
            joined, self.parts = " ".join(self.parts) + " }", None
            return joined
        if not DICT_ITEM.match(s) or len(self.parts) >= DICT_MAX_LINES:
            if not s or is_prose(s) and len(self.parts) < DICT_MAX_LINES:
                return None  # a sentence or a blank line pasted inside the dict: the dict goes on after it
            self.parts = None
            return self.feed(text)
        self.parts.append(s)
        if s.endswith("}") or s.endswith("},"):
            joined, self.parts = " ".join(self.parts).removesuffix(","), None
            return joined
        return None
