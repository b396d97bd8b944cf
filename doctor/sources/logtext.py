"""Turn log bytes into clean ``LogLine`` records, streaming, in flat memory.

Real logs are hostile: ANSI colours, tqdm ``\\r`` redraws with the next message glued onto the bar,
``[rankN]:`` prefixes, vLLM engine prefixes, markdown fences from a paste, GBK or broken UTF-8,
NUL bytes and single lines of many megabytes. This module never holds more than one chunk and one
(capped) line in memory.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import BinaryIO

from .. import lazyre
from ..signals import LogLine, Where
from .paste import DictJoiner, needs_unwrap, unbold, unwrap
from .traceback import BARE_WORDS, EXC_TYPE, NB_TB_WORD, bare_message

CHUNK = 1 << 20          # bytes read at a time
MAX_LINE = 64 * 1024     # longer physical lines are cut here (the rest is skipped, not stored)
EVIDENCE_MAX = 400       # characters of a line kept as evidence text

_ANSI = lazyre.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHM]")
# (a bare "[m" only after an escape's stand-in: "[multiproc_executor.py:511]" is vLLM's logger tag)
_ANSI_TEXT = lazyre.compile(r"(?:ESC|\^\[|␛|\ufffd)\[(?:\d{1,3}(?:;\d{1,3})*)?m|\[\d{1,3}(?:;\d{1,3})*m")
_CTRL = lazyre.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A tqdm bar ends with "...it/s]" or "...s/it]" (or "?it/s]"); text glued after it is a new message.
_MID_WORDS = ("Error", "Exception", "Traceback", ", line ")
# a "[rankN]:" prefix in mid-line, after text (and the spaces a terminal padded that text's line with), or after a
# launcher's label and its one space ("worker-1: [rank0]: ..."); not after a log viewer's "host >> " prefix
_RANK_MID = lazyre.compile(r"(?<=[^\s>])(?:[ \t]{2,})?(?=\[rank\d+\]:)|(?<=:)[ \t](?=\[rank\d+\]:)")
# a whole rank's traceback pasted onto one line (a comment box that joined its lines with one space): every
# "[rankN]:" that opens a frame, its source line or its exception starts a line of its own, also after one space;
# only where the line holds two such tags and a frame, so that a sentence naming a rank stays whole
_RANK_ONE_SPACE = lazyre.compile(r"(?<=\S)[ \t](?=\[rank\d+\]:)")
_TQDM_END = lazyre.compile(r"(?:\?it/s|[\d.]+\s?(?:it/s|s/it|[kMG]?B/s)|(?:\?|[\d.]+) examples/s)\]")
# a traceback's source line with its exception glued on (the newline lost in a paste): an indented code line, or a
# `raise`/`assert` statement, then `Type: message` right after a closing bracket, a quote, a caret, or the identifier
# after `from` (`raise X(msg) from ehydra.errors.InstantiationException: ...`: the glued type keeps a junk prefix, its
# short name is whole)
_GLUED_EXC = lazyre.compile(r"^(?P<code>(?:\s{2,}|\s*(?:raise|assert)\b).*?(?:[()\]'\"^~}>]|\bfrom \w+?))\s*"
                        r"(?P<exc>" + EXC_TYPE + r"(?::\s.*)?)$")
# a bare type raised ("raise NotImplementedError"), then the exception line printed right after it with no newline
_GLUED_RAISE = lazyre.compile(r"^(?P<code>\s*raise\s+" + EXC_TYPE + r")(?P<exc>" + EXC_TYPE + r"(?::\s.*)?)$")
_RANK = lazyre.compile(r"^\[rank(\d+)\]:\s?")
# "(VllmWorker rank=1 pid=123)", "(VllmWorker PP0_TP1 pid=9)" (vLLM's parallel ranks in the name), "(EngineCore_0
# pid=42)", "(RayWorkerWrapper pid=7, ip=10.0.0.1)"
# and Ray's task prefix without an actor name "(pid=123)", "(pid=123, ip=10.0.0.1)"
# (one space after it: Ray prints the process's own line after "(name pid=N) ", its indentation included)
_ORIGIN = lazyre.compile(r"^\((?:(\w+?)(?:_\d+)?(?: rank=(\d+)|[ _](?:DP\d+_)?(?:PP\d+_)?TP\d+(?:_EP\d+)?)?(?: pid=\d+)?|pid=\d+)"
                         r"(?:, ip=[\d.]+)?\)(?: |\t|$)")
# vLLM-Omni labels each stage of its pipeline before vLLM's own logger head: "[Stage-1] ERROR 01-19 04:24:05 [...]"
# (vllm_omni's stage workers, also after a worker prefix: "(Worker pid=48884) [Stage-1] ERROR ...")
_OMNI_STAGE = lazyre.compile(r"^\[Stage-\d+\] (?=(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d)")
# Ray's driver shows its cluster events with the component and the time since the job started (ray/_private/
# worker.py print_to_stdstream for the autoscaler's and scheduler's event summaries; "(raylet)" for the raylet's own
# warnings): "(autoscaler +8m46s) Error: ...", "(scheduler +2m2s) Warning: ...", "(raylet) There are tasks ..."
_RAY_EVENT = lazyre.compile(r"^\((?:autoscaler|scheduler|raylet|gcs_server|monitor)(?: \+[\dhms.]+)?(?:, ip=[\d.]+)?\) ")
# vLLM's processes by the names their prefixes carry (the origin _ORIGIN reads): the engine core ("(EngineCore_0 pid=N)",
# "(EngineCore_DP0 pid=N)": vllm/v1/engine, a process per data-parallel rank), the multiprocess workers ("(VllmWorker
# rank=1 pid=N)": vllm/v1/executor/multiproc_executor.py), the Ray workers ("(RayWorkerWrapper pid=N)":
# vllm/executor/ray_utils.py RayWorkerWrapper) and the OpenAI server ("(APIServer pid=N)"). One list for the hang and
# native-crash rules (checks/hang/_progress.py VLLM_ORIGINS) and the framework detection (swift/framework.py)
VLLM_PROCESSES = ("VllmWorker", "EngineCore", "EngineCore_DP0", "RayWorkerWrapper", "APIServer")
# vLLM's logger: "ERROR 09-20 19:54:33 [core.py:398] " (optionally with ".123" ms)
# vLLM before 0.8 printed the place without the opening bracket: "ERROR 06-12 15:44:15 worker_base.py:148] "
# the closing bracket as a markdown escape turned it in some pastes: "[async_llm.py:485[]", "[core.py:1229\\]"
_VLLM_LOG = lazyre.compile(r"^(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+"
                       r"(?:\]|\[\]|\\\]) ?")
# a collector's timestamp in front of the line: `docker logs -t` / `kubectl logs --timestamps`
# ("2024-06-28T06:11:52.685300953Z "), Buildkite ("[2025-03-10T15:07:20Z] "): ISO 8601 with its T and a zone, and the
# one space the collector writes after it (the process's own indentation follows: a traceback's frame and code lines)
# "[2026-03-11 17:47:54] " before a traceback's lines (a job wrapper's or a cluster console's stamp): taken off only
# before a traceback line, where the rules read the line itself; elsewhere the stamp stays for the rules that read time
_BRACKET_TS = lazyre.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\] ")
# a logger record's head before a traceback line it re-logs: "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] "
# (date, level, pid, [file:line]: a serving platform's format around vLLM's engine), taken off the same way
# (and a desktop app's record of a child process's output: "2026-06-09 14:01:52.982 [Error] (Process) ")
_RECORD_HEAD = lazyre.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? (?:(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) "
                              r"\d+ \[[\w./-]+\.py:\d+\] |\[(?i:error|warning|warn|info|debug|trace|critical)\] "
                              r"\(\w+\) )")
# Python logging's common format ("%(asctime)s - %(name)s - %(levelname)s - %(message)s") around a child's output it
# relays ("2025-08-13 04:39:39,838 - __main__ - INFO - ERROR 08-13 04:39:39 engine.py:400] ..."): taken off when what it
# relays is a program's own record (vLLM's logger head, a traceback's line), whose level is the one that counts
_PY_LOG_HEAD = lazyre.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? - [\w.<>-]+ - "
                              r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")
# a pipe-separated logger record's head: fastchat's "2024-02-20 21:46:23 | ERROR | stderr | " and loguru's default
# "2024-02-20 21:46:23.123 | ERROR    | module:function:12 - ", whose message may be a traceback's line
_PIPE_RECORD = lazyre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\s*\|\s*(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|"
                              r"ERROR|CRITICAL)\s*\|\s*(?:[\w.<>-]+\s\|\s|[\w.<>-]+:[\w.<>-]+:\d+ - )?")
# docker compose's service prefix, the name padded to the longest service's and a pipe: "qanything-container-local  | "
# (two spaces or more before the pipe, or compose v2's numbered "name-1 | ": a table's first cell has neither)
_COMPOSE = lazyre.compile(r"^[A-Za-z0-9][\w.-]{0,63}(?:\s{2,}|-\d{1,3}\s+)\| ")
_COLLECTOR_TS = lazyre.compile(r"^\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\]?(?: |\t|$)")
_FENCE = lazyre.compile(r"^\s*```[\w+-]*\s*$")


def decode(data: bytes) -> str:
    """Decode one line: UTF-8, else GB18030 (Chinese Windows consoles), else UTF-8 with U+FFFD."""
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if data.isascii() or ("\u00e2" not in text and "\u00c3" not in text):
            return text
        return unmangle(text)
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def unmangle(text: str) -> str:
    """UTF-8 text that was once read as Windows-1252 or Latin-1 and written out again (a browser or an editor copying a
    log): "â”‚ ValueError â”‚" is "│ ValueError │". Put back only when the whole line turns back into UTF-8."""
    for enc in ("cp1252", "latin-1"):
        try:
            return text.encode(enc).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    if "\u00e2\u201d" in text or "\u00e2\u2022" in text:
        # box drawing ("â”" and "â•" open U+2500-U+257F) through Windows-1252, which has no character for some of its
        # bytes (0x81: "━" lost its last byte): the bars and letters come back, a lost byte becomes U+FFFD
        return text.encode("cp1252", errors="ignore").decode("utf-8", errors="replace")
    return text


class LineSplitter:
    """Incremental newline splitter: feed byte chunks as they arrive (a file read or a live pipe), get
    complete physical lines back, each capped at ``max_line`` bytes (the rest of an over-long line is
    skipped, not stored). ``close`` returns the last, unterminated line if any."""

    __slots__ = ("max_line", "lineno", "pending", "skipping")

    def __init__(self, max_line: int = MAX_LINE):
        self.max_line = max_line
        self.lineno = 0
        self.pending = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        pending, max_line = self.pending, self.max_line
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not self.skipping:
                    room = max_line - len(pending)
                    pending += chunk[start:start + room] if room > 0 else b""
                    if len(chunk) - start > room:
                        self.skipping = True
                break
            if not self.skipping:
                room = max_line - len(pending)
                if room > 0:
                    pending += chunk[start:min(nl, start + room)]
            self.lineno += 1
            out.append((self.lineno, bytes(pending)))
            pending.clear()
            self.skipping = False
            start = nl + 1
        return out

    def partial(self) -> bytes:
        """The bytes of the line being received (not yet terminated)."""
        return bytes(self.pending)

    def close(self) -> list[tuple[int, bytes]]:
        if self.pending or self.skipping:
            self.lineno += 1
            data = bytes(self.pending)
            self.pending.clear()
            self.skipping = False
            return [(self.lineno, data)]
        return []


def physical_lines(stream: BinaryIO, max_line: int = MAX_LINE, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, bytes without the newline), each capped at ``max_line`` bytes; ``end``: a seekable
    stream is read up to that offset only (the chunk scanner's tail: a log still being written may have grown)."""
    splitter = LineSplitter(max_line)
    # read1: one read of the underlying file per chunk, so that a terminal's single Ctrl-D ends the input (read(n)
    # keeps reading until n bytes or an end, and a terminal gives its end once: a second read would wait again)
    read = getattr(stream, "read1", stream.read) if end is None else stream.read
    while True:
        if end is not None and (left := end - stream.tell()) < CHUNK:
            chunk = read(left) if left > 0 else b""
        else:
            chunk = read(CHUNK)
        if not chunk:
            break
        yield from splitter.feed(chunk)
    yield from splitter.close()


def clean(text: str) -> str:
    """Remove ANSI escapes and control characters other than tab and carriage return; also colour codes a paste
    turned into text (``ESC[36m``, ``^[[0m``) or whose escape byte it lost (``[36m(RayWorkerWrapper ...)[0m``, the
    byte decoded as U+FFFD: ``\ufffd[1;36m(VllmWorker rank=3 pid=4867)\ufffd[0;0m``)."""
    if text.isprintable():  # the common case: no control character at all (one C-level pass)
        if "[0m" in text or "ESC[" in text or "\ufffd[" in text:
            return _ANSI_TEXT.sub("", text)
        return text
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return _CTRL.sub("", text)


# one entry of a notebook error output's "traceback" array (nbformat v4, an .ipynb opened as text): a JSON string
# of IPython's formatted traceback, ANSI colours escaped as \u001b[...m and its lines joined by \n
_NB_TB_ITEM = lazyre.compile(r'^\s*"((?:[^"\\]|\\.)*)",?\s*$')
# its colour codes once decoded: SGR sequences, or the bare escape a line-level pass left when it already removed
# the "[0;31m" text behind it (clean()'s _ANSI would read "ESC=" or "ESC(p" as sequences and eat the "=" or "(p")
_NB_COLOUR = lazyre.compile(r"\x1b(?:\[[0-9;]*m)?")


def _notebook_traceback_lines(text: str) -> list[str] | None:
    """The lines of one JSON-escaped traceback entry, decoded and without colours; None when ``text`` is not one."""
    m = _NB_TB_ITEM.match(text)
    if m is None:
        return None
    try:
        decoded = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    return [ln for ln in _NB_COLOUR.sub("", decoded).split("\n") if ln.strip()] or None


# the list that traceback.format_exception / format_exc().splitlines(True) return, printed whole (Megatron-Core's
# megatron/core/utils.py logs it so on a failed step): one quoted string a line, each ending in an escaped newline
LIST_TB_WORD = "['Traceback (most recent call last):\\n'"
_LIST_ITEM = lazyre.compile(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*[,\]]?""")


def _listed_traceback_lines(text: str) -> list[str] | None:
    """The lines of a traceback printed as a Python list of strings (cut or whole); None when it is not one. Each
    item is decoded as a string literal (ast.literal_eval of one quoted token: nothing is evaluated)."""
    start = text.find(LIST_TB_WORD)
    if start < 0:
        return None
    out = [text[:start]] if text[:start].strip() else []
    pos = start + 1
    items = 0
    while pos < len(text):
        m = _LIST_ITEM.match(text, pos)
        if m is None:
            break
        try:
            item = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            break
        out.extend(ln for ln in str(item).split("\n") if ln.strip())
        items += 1
        pos = m.end()
    return out if items > 1 else None


# an exception named inside a person's sentence: glued to Chinese or Japanese prose ("我运行时出现这个错误ModuleNotFoundError:
# No module named 'x'，请问是什么问题？": a CJK character is a word character to `re`, only "not ASCII" separates it), or
# quoted ("errors such as "omegaconf.errors.ConfigAttributeError: Key 'x' is not in struct." Many keys..."): the
# exception becomes a line of its own, up to the sentence's full-width punctuation or the closing quote, so that every
# reader of exception lines sees it
_PROSE_GLUED = lazyre.compile(r"(?<=[^\x00-\x7f])((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: |\uff1a ?)\S[^\uff0c\u3002\uff1f\uff01\u201d\u300d\u300f]*)")
# an exception ending an English sentence after a comma, a colon or a semicolon ("qwen3_vl.py has a problem with the
# 8b model, KeyError: 'blocks.0.mlp.gate_proj.weight'"), in a line that is no code (it starts in the first column)
_PROSE_TAIL = lazyre.compile(r"(?<=[,;:] )((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S.*)$")
_PROSE_QUOTED = lazyre.compile(r"""(["`\u201c])((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): [^"`\u201d]+?)(?:\1|\u201d)""")
# in single quotes only where the quote opens after a space or a parenthesis and closes before one or a punctuation
# mark: an apostrophe inside a word ("can't") or a quoted key inside the message ("KeyError: 'x'") does neither
_PROSE_SINGLE = lazyre.compile(r"""(?:(?<=[\s(])|^)'((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): .+?)'(?=[\s.,;:)!?]|$)""")
# an exception named and then quoted in a sentence ("I encountered a TypeError with the message: X. It seems ..."): the
# type and the message, up to the sentence's end
_PROSE_NAMED = lazyre.compile(r"\b(?:an?|the)\s+((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\s+with (?:the )?(?:error )?"
                              r"message\s*:?\s+(\S.*?)(?=\.\s+[A-Z]|\.?\s*$)")
# words before a quoted exception that say it did not happen (the author avoided it, or did something instead)
_AVOIDED = lazyre.compile(r"(?i)\b(?:avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|instead of|rather than|without)\s+"
                          r"(?:(?:an?|the|this|that)\s+)?[`'\"\u201c]?$")
# where a message glued to a Chinese or Japanese sentence may start: after a non-ASCII character
_CJK_THEN_ASCII = lazyre.compile(r"[^\x00-\x7f](?=[A-Z'])")
# words of a sentence before an exception: three words of letters in a row, or text in a script without spaces
_SENTENCE = lazyre.compile(r"[A-Za-z]{2,}[^\W\d_]*\s+[A-Za-z]\w*\s+[A-Za-z]\w*|[^\x00-\x7f]")
_TB_HEADER = "Traceback (most recent call last):"
_STARTS_EXC = lazyre.compile(r"^\s*(?:\[rank\d+\]:\s*)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning)\b")


def _prose_exception(part: str) -> list[str] | None:
    """The pieces of a sentence that names an exception inside it, the exception a piece of its own; None otherwise."""
    inner = part.strip()
    if len(inner) > 2 and inner[0] == inner[-1] and inner[0] in "\"'`" and _STARTS_EXC.match(inner[1:-1]):
        return [inner[1:-1]]   # the whole line is one quoted exception line
    if _STARTS_EXC.match(part) or ", line " in part:
        return None   # an exception line or a frame: its message may quote anything
    m = None if part.isascii() else _PROSE_GLUED.search(part)
    if m is None and not part.isascii():
        # a message torch prints without a type (BARE_WORDS), after a sentence's colon ("报错：Expected all tensors")
        for colon in ("\uff1a", ": "):
            head, sep, rest = part.partition(colon)
            if sep and rest.strip() and not head.isascii() and bare_message(rest.strip()):
                return [head + sep, rest.strip()]
        # or glued to the sentence ("在zero-stage 3下训练报错，显示The size of tensor a (0) must match ...")
        for glued in _CJK_THEN_ASCII.finditer(part):
            if bare_message(part[glued.end():]):
                return [part[:glued.end()], part[glued.end():].strip()]
    if m is None and part.isascii() and part[:1] not in (" ", "\t"):
        # ... or after an English sentence's colon ("PPO on multi-GPU but get Error: Expected all tensors to be ...")
        head, sep, rest = part.partition(": ")
        if sep and rest.strip() and _SENTENCE.search(head) and bare_message(rest.strip()):
            return [head + sep, rest.strip()]
    if m is None and part[:1] not in (" ", "\t"):
        m = _PROSE_TAIL.search(part)
        # a line prefix before the exception (a rank tag, a worker label, a stamp, a quote mark) is no sentence: the
        # line is the exception's own, read whole with its prefix so that its rank joins the rank's traceback
        if m is not None and not _SENTENCE.search(part[:m.start()]):
            m = None
    named = _PROSE_NAMED.search(part) if m is None and part.isascii() and " message" in part else None
    if m is not None:
        start, end, exc = m.start(1), m.end(1), m.group(1)
        exc = re.sub(r"^([\w.]+(?:Error|Exception))\uff1a ?", r"\1: ", exc)  # a full-width colon after the type
    elif named is not None:
        start, end, exc = named.start(1), named.end(2), f"{named.group(1)}: {named.group(2)}"
    else:
        q = _PROSE_QUOTED.search(part) if ('"' in part or "`" in part or "\u201c" in part) else None
        if q is not None:
            start, end, exc = q.start(), q.end(), q.group(2)
        else:
            q = _PROSE_SINGLE.search(part) if "'" in part else None
            if q is None:
                return None
            start, end, exc = q.start(), q.end(), q.group(1)
    if _AVOIDED.search(part[:start]):
        return None  # "in order to avoid a `ValueError: ...`": named as what did not happen
    return [p for p in (part[:start], exc.strip(), part[end:]) if p.strip()]


def split_segments(text: str) -> list[str]:
    """Split a physical line into the messages it holds (tqdm \\r redraws, text glued on a bar, the lines of a
    notebook's JSON-escaped traceback entry)."""
    if NB_TB_WORD in text:
        lines = _notebook_traceback_lines(text)
        if lines is not None:
            return lines
    if LIST_TB_WORD in text:
        lines = _listed_traceback_lines(text)
        if lines is not None:
            return lines
    parts = text.split("\r") if "\r" in text else [text]
    out: list[str] = []
    for part in parts:
        while "/s]" in part or "/it]" in part:  # every tqdm rate ends so: skip the regex otherwise
            m = _TQDM_END.search(part)
            if not m:
                break
            rest = part[m.end():]
            stripped = rest.strip()
            if not stripped:
                break
            out.append(part[:m.end()])
            part = stripped
        # a traceback's header with the exception (or its first frame) glued after it, the newline lost in the paste
        if "most recent call last):" in part:
            at = part.find(_TB_HEADER)
            rest = part[at + len(_TB_HEADER):] if at >= 0 else ""
            if rest.strip() and (_STARTS_EXC.match(rest) or rest.lstrip().startswith('File "')):
                out.append(part[:at + len(_TB_HEADER)])
                part = rest if rest.lstrip().startswith('File "') else rest.strip()
        # two ranks' writes on one physical line, the second an error or a frame that lost its newline; only then,
        # so that the line holds a word of the engine's gate (STATE_WORDS) and the chunk scanner, which counts a line
        # without one as one segment, feeds it and counts the same
        if part.find("[rank", 1) > 0 and any(w in part for w in _MID_WORDS):
            pieces = _RANK_MID.split(part)
            if len(pieces) < 3 and part.count("[rank") > 2 and 'File "' in part:
                pieces = [p for piece in pieces for p in _RANK_ONE_SPACE.split(piece)]
            for piece in pieces[:-1]:
                if piece.strip():
                    out.append(piece)
            part = pieces[-1]
        if ("Error" in part or "Exception" in part) and part[:1].isspace() or part.lstrip().startswith(("raise", "assert")):
            g = _GLUED_EXC.match(part) or _GLUED_RAISE.match(part)
            if g is not None and g.group("code").strip():
                out.append(g.group("code"))
                part = g.group("exc")
        if ("Error: " in part or "Exception: " in part or "\uff1a" in part or " message" in part
                or (not part.isascii() and any(w in part for w in BARE_WORDS))) and \
                (prose := _prose_exception(part)) is not None:
            out.extend(prose[:-1])
            part = prose[-1]
        if part.strip() or not out:
            if not out or out[-1] != part:  # identical consecutive redraws carry nothing new
                out.append(part)
    return out


# "[repeated 15x across cluster]": Ray's driver folds identical lines of several workers into one and says how many
_RAY_REPEATED = lazyre.compile(r"\s*\[repeated \d+x across cluster\]$")


# a line-number gutter (`cat -n`, CI log viewers, editors): digits right-aligned in a few columns, then a tab
_GUTTER = lazyre.compile(r"[ ]{0,6}\d{1,7}\t")


# an issue title's tag before the message ("[Bug]RuntimeError: ...", "[BUG]: ..."): the tracker's, not the run's
_ISSUE_TAG = lazyre.compile(r"^\[(?i:bug|feature|question|usage|help|issue)\]:?\s*")


# a logger's source location printed before a vLLM process prefix ("start.py:1395 (EngineCore pid=1713) ValueError:")
_SOURCE_BEFORE_ORIGIN = lazyre.compile(r"^[\w.-]+\.py:\d+ (?=\((?:\w+ )?(?:rank=\d+ )?pid=\d+)")


def _unquote(text: str) -> str:
    """A line a paste put in backticks (markdown inline code around the whole line, or what is left of it) without
    them; a line whose own backticks are balanced keeps them ("... in `peft_config`" is the message's own quoting)."""
    ticks = text.count("`")
    if text[:1] == "`" and text[-1:] == "`":
        inner = text.strip("`")
        return inner if inner.count("`") % 2 == 0 else text.lstrip("`")
    if ticks % 2 == 0:
        return text
    return text.lstrip("`") if text[:1] == "`" else text.rstrip("`")


def strip_prefixes(text: str) -> tuple[str, int | None, str]:
    """Remove rank, worker and vLLM logger prefixes and a line-number gutter. Returns (text, rank, origin)."""
    rank: int | None = None
    origin = ""
    for _ in range(4):
        if "\t" in text[:14]:
            g = _GUTTER.match(text)
            if g is not None:
                text = text[g.end():]
                continue
        if text.startswith("[rank"):
            m = _RANK.match(text)
            if m:
                rank = int(m.group(1))
                text = text[m.end():]
                continue
        if text.startswith("[Stage-"):
            m = _OMNI_STAGE.match(text)
            if m:
                text = text[m.end():]
                continue
        if text[:1].isalpha() and ".py:" in text[:48]:
            m = _SOURCE_BEFORE_ORIGIN.match(text)
            if m:  # a logger's "file.py:LINE " in front of a vLLM process prefix: the prefix is read next
                text = text[m.end():]
                continue
        if text.startswith("("):
            m = _RAY_EVENT.match(text)
            if m:
                origin = origin or "ray"
                text = text[m.end():]
                continue
            m = _ORIGIN.match(text)
            if m:
                origin = m.group(1) or "ray"
                if m.group(2) is not None and rank is None:
                    rank = int(m.group(2))
                text = text[m.end():]
                continue
        if text[:1] in "[0123456789" and text.find("T", 0, 30) >= 0:
            m = _COLLECTOR_TS.match(text)
            if m:
                text = text[m.end():]
                continue
        if text[:2] == "[2" and "] " in text[19:32] or text[:1] == "2" and text[4:5] == "-" and " [" in text[20:44]:
            m = _BRACKET_TS.match(text) or _RECORD_HEAD.match(text)
            if m:
                rest = text[m.end():]
                # (or a process prefix, which the next turn reads: "(EngineCore pid=42521) ERROR ...")
                if rest[:7] == '  File ' or rest[:4] == "    " or rest[:9] == "Traceback" or _STARTS_EXC.match(rest) \
                        or _ORIGIN.match(rest):
                    text = rest
                    continue
        if text[:1] == "2" and text[4:5] == "-" and " - " in text[19:40]:
            m = _PY_LOG_HEAD.match(text)
            if m:
                rest = text[m.end():]
                if _VLLM_LOG.match(rest) or rest[:7] == '  File ' or rest[:9] == "Traceback" or _STARTS_EXC.match(rest):
                    text = rest
                    continue
        if text[:1].isalnum() and " | " in text[:90]:
            m = _PIPE_RECORD.match(text) if text[4:5] == "-" else None
            m = m or _COMPOSE.match(text)
            if m:
                text = text[m.end():]
                continue
        if text[:1] in "EWIDC":
            m = _VLLM_LOG.match(text)
            if m:
                origin = origin or "vllm"
                text = text[m.end():]
                continue
        break
    if text[:1] == "[" and text[1:2] in "BbFfQqUuHhIi":
        tag = _ISSUE_TAG.match(text)
        if tag:
            text = text[tag.end():]
    if text[:1] == "`" or text[-1:] == "`":
        text = _unquote(text)
    if text.endswith(" across cluster]"):  # Ray's log deduplication (ray/_private/ray_logging.py, Ray >= 2.5)
        m = _RAY_REPEATED.search(text)
        if m:
            text = text[:m.start()]
    return text, rank, origin


class LineReader:
    """Reads one input into LogLines. ``seq`` is shared across inputs through ``counter``.

    ``lines`` reads a whole stream; ``line`` turns one physical line into its LogLines and serves the
    live path (``watch``), so a replayed file and a live pipe give the same records."""

    def __init__(self, display_path: str, counter: list[int]):
        self.path = display_path
        self.counter = counter
        self.dicts = DictJoiner()
        self.dict_start: tuple[Where, int | None] | None = None

    def lines(self, stream: BinaryIO) -> Iterator[LogLine]:
        for lineno, data in physical_lines(stream):
            yield from self.line(lineno, data)

    def line(self, lineno: int, data: bytes) -> list[LogLine]:
        """The LogLines of one physical line (``data`` without its newline, already capped)."""
        out: list[LogLine] = []
        where = Where(self.path, lineno)
        counter = self.counter
        for body, raw, rank, origin in segments(data):
            counter[0] += 1
            out.append(LogLine(body, raw, where, rank, counter[0], origin))
            if body[:1] == "{" or self.dicts.parts is not None or '"epoch"' in body[:16]:
                self._join_dict(body, where, rank, out)
        return out

    def _join_dict(self, body: str, where: Where, rank: int | None, out: list[LogLine]) -> None:
        """A metrics dict pretty-printed over several lines (sources/paste.py DictJoiner): once it closes, one more
        LogLine holds it joined, at the line where it opened (the physical lines stay as they were)."""
        was_open = self.dicts.parts is not None
        joined = self.dicts.feed(body)
        if self.dicts.parts is not None and (not was_open or len(self.dicts.parts) == 1):
            self.dict_start = (where, rank)
        if joined is not None and self.dict_start is not None:
            # the closing line's seq: the counters stay those of the physical lines (scan.py rebuilds tails by them)
            start, r = self.dict_start
            raw = joined if len(joined) <= EVIDENCE_MAX else joined[:EVIDENCE_MAX] + "…"
            out.append(LogLine(joined, raw, start, r, self.counter[0], ""))


def segments(data: bytes) -> list[tuple[str, str, int | None, str]]:
    """(text, raw, rank, origin) of each message in one physical line; none for a markdown fence."""
    text = clean(decode(data))
    if "```" in text and _FENCE.match(text):
        return []
    out = []
    for seg in split_segments(text):
        seg_text = seg.rstrip()
        if needs_unwrap(seg_text):  # a paste wrapper: quote, table row, viewer timestamp, bold (sources/paste.py)
            seg_text = unwrap(seg_text)
        body, rank, origin = strip_prefixes(seg_text)
        if body[:1].isdigit() and needs_unwrap(body):
            # a wrapper inside a worker's prefix: a logger that redirects stderr, around Ray's "(pid=N)", around the
            # same logger again in the worker
            inner, inner_rank, inner_origin = strip_prefixes(unwrap(body))
            body, rank, origin = inner, rank if rank is not None else inner_rank, origin or inner_origin
        if rank is not None and body.startswith("**"):
            body = unbold(body)
        raw = seg.strip()
        if len(raw) > EVIDENCE_MAX:
            raw = raw[:EVIDENCE_MAX] + "…"
        out.append((body, raw, rank, origin))
    return out
