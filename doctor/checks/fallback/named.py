"""Exceptions a paste names outside a traceback the parser completed: a title's or a sentence's `Type: message`,
CPython's own wording without its type (retyped loosely too), a library's whole message without its type (the
raise-site index), a cut notebook stack's header type with the message a line above retypes, and the raise or assert
statement a cut stack's last frame prints. Read by the structural classifier and GD999; pure (a RunState in, parsed
ExceptionInfo out)."""
from __future__ import annotations

from ... import lazyre
from ...classify.slips import one_slip
from ...classify.structure import site_matches
from ...engine.state import RunState
from ...signals import ExceptionInfo, LogLine
from .exceptions import message_above, notebook_header, retyped_message

# an exception named inside a line the traceback parser does not read: a pytest summary (`FAILED node - Type:
# msg`), a notebook header (`TypeError    Traceback (most recent call last)`), markdown (`**Type: msg**`), a sentence
# of Chinese or Japanese prose with the error pasted into it without a space (`微调显示ValueError: ...`: a CJK
# character is a word character to `re`, so only "not ASCII" separates it from the type's first letter), a title's
# "help!!!RuntimeError: ..." glued behind punctuation; a sentence that retypes the error may follow the type with a
# full-width colon or a semicolon (`一直报错误:ValieError;DeepSpeed ...`)
_EMBEDDED = lazyre.compile(r"(?:^|[\s*>|(!?,;:\uff1a]|[^\x00-\x7f])((?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception))"
                       r"(?::\s+(.+?)|\s?[;\uff1a]\s*([A-Z].+?)|\s{2,}Traceback \(most recent call last\))\**\s*$")
# the built-in exceptions a sentence retypes, to put a typing slip right (`ValieError` is ValueError)
_BUILTIN_TYPES = ("ValueError", "TypeError", "KeyError", "RuntimeError", "AttributeError", "ImportError", "IndexError",
                  "AssertionError", "NotImplementedError", "FileNotFoundError", "ModuleNotFoundError", "OSError")


def builtin_type(typed: str) -> str:
    """The built-in exception a retyped name stands for (the name itself when it is not one slip from one)."""
    if typed in _BUILTIN_TYPES or "." in typed:
        return typed
    return next((name for name in _BUILTIN_TYPES if one_slip(typed, name)), typed)


_QUOTED_THEN_PROSE = lazyre.compile(r"""^('[^']{1,200}'|"[^"]{1,200}")[.,;]?\s+[A-Z][a-z]""")


# CPython's wordings that name their exception type by themselves: Objects/object.c (AttributeError), Python/import.c
# (ModuleNotFoundError), Python/ceval.c import_from (ImportError)
_BARE = ((" object has no attribute '", "AttributeError", lazyre.compile(r"'[A-Za-z_][\w.]*' object has no attribute '\w+'")),
         ("No module named '", "ModuleNotFoundError", lazyre.compile(r"No module named '[\w.]+'")),
         ("cannot import name '", "ImportError", lazyre.compile(r"cannot import name '\w+' from '[\w.]+'")),
         # a call's arguments refused by the interpreter (Python/ceval.c, Python/getargs.c)
         (" got an unexpected keyword argument '", "TypeError",
          lazyre.compile(r"[\w.]+\(\) got an unexpected keyword argument '\w+'")),
         (" required positional argument", "TypeError",
          lazyre.compile(r"[\w.]+\(\) missing \d+ required positional arguments?: '\w+'(?:(?:,| and) '\w+')*")),
         ("unsupported operand type(s) for ", "TypeError",
          lazyre.compile(r"unsupported operand type\(s\) for [^:\s]{1,3}: '\w+' and '\w+'")),
         # Python/ceval.c's NameError ("name 'x' is not defined"), also retyped without "name" and its quotes for a
         # snake_case name ("guided_decoding is not defined when using GRPOTrainer"): the name is the message
         (" is not defined", "NameError",
          lazyre.compile(r"\bname '\w+' is not defined|(?<![\w.'`])`?[a-z]\w*_\w+`? is not defined\b")),
         # pickle's refusals (Lib/pickle.py save_global; _pickle.c): an object a process pool could not send
         ("Can't pickle ", "PicklingError",
          lazyre.compile(r"Can't pickle (?:local object )?(?:<[^>]{1,120}>|'[^']{1,120}')(?::[^,]{1,160})?")))


def bare_wording(text: str) -> tuple[str, str] | None:
    """(type, message) of a CPython exception wording in a line that does not name its type."""
    for word, etype, rx in _BARE:
        if word in text:
            m = rx.search(text)
            if m:
                return etype, m.group(0)
    # retyped loosely (quotes or "object" dropped): read as CPython words it
    for word, etype in (("has no attribute", "AttributeError"), ("No module named", "ModuleNotFoundError"),
                        ("cannot import name", "ImportError")):
        if word in text:
            found = retyped_message(etype, text)
            if found:
                return etype, found
    return None


def bare_exception(line: LogLine) -> ExceptionInfo | None:
    """The exception CPython's own wording in this line stands for (``bare_wording``), without frames; else None."""
    bare = bare_wording(line.text)
    return ExceptionInfo(bare[0], bare[1], (), line.where, line.rank, line.seq, line.raw) if bare else None


# an assert statement quoted on a line of its own or after a label ("Training Script: assert config.data.train_batch_size
# >= config.actor_rollout_ref.actor.ppo_mini_batch_size"): the AssertionError it raises, its expression the message
_ASSERT_LINE = lazyre.compile(r"^(?:[\w ]{1,40}:\s*)?`?assert\s+(?P<expr>[\w.()\[\]'\"]+\s*(?:>=|<=|==|!=|>|<|\bin\b|\bis\b)"
                              r"\s*[^,`]+?)`?\s*(?:,.*)?$")


# a built-in exception's name written as words ("value error: Target modules ... not found", "runtime error：..."), the
# message after its colon: a sentence retyping what the program printed
_SPOKEN_TYPES = {"value": "ValueError", "type": "TypeError", "key": "KeyError", "runtime": "RuntimeError",
                 "attribute": "AttributeError", "import": "ImportError", "index": "IndexError",
                 "assertion": "AssertionError", "notimplemented": "NotImplementedError",
                 "modulenotfound": "ModuleNotFoundError", "filenotfound": "FileNotFoundError"}
# (written joined in lower case too, "keyerror \"messages\"": then a quoted key or name may follow without a colon)
_SPOKEN = lazyre.compile(r"(?i)(?<![a-z])(value|type|key|runtime|attribute|import|index|assertion|not[ _]?implemented|"
                         r"module[ _]?not[ _]?found|file[ _]?not[ _]?found)[ _]?error(?:\s*[:\uff1a]\s*(\S.{11,})$|"
                         r"\s*[:\uff1a]?\s*[\"'\u201c\u2018`](?P<quoted>[\w.\-/]{1,80})[\"'\u201d\u2019`]\s*$)")


def exception_named_in(line: LogLine) -> ExceptionInfo | None:
    """The exception a line names outside a traceback (a title, a summary, a sentence): ``Type: message`` (a warning
    class is none), a notebook header's type, an assert statement quoted alone, or CPython's own wording without its
    type; None otherwise."""
    if "assert " in line.text:
        a = _ASSERT_LINE.match(line.text.strip())
        if a is not None:
            return ExceptionInfo("AssertionError", f"assert {a.group('expr').strip()}", (), line.where, line.rank,
                                 line.seq, line.raw)
    if "Error" not in line.text and "Exception" not in line.text:
        spoken = _SPOKEN.search(line.text) if "rror" in line.text else None
        if spoken is not None:  # "value error: Target modules ... not found": the type as words, then the message
            etype = _SPOKEN_TYPES[spoken.group(1).lower().replace(" ", "").replace("_", "")]
            msg = f"'{spoken.group('quoted')}'" if spoken.group("quoted") else spoken.group(2).strip()[:600]
            return ExceptionInfo(etype, msg, (), line.where, line.rank, line.seq, line.raw)
        return bare_exception(line)  # CPython's own wording of the exception in a title or a sentence, no type
    m = _EMBEDDED.search(line.text)
    if m is None:
        # "[Error] Task failed: Can't pickle ...": an error word that names no exception type, then CPython's wording
        return bare_exception(line)
    if m.group(1).endswith("Warning"):
        return None
    msg = (m.group(2) or m.group(3) or "").strip()
    key = _QUOTED_THEN_PROSE.match(msg)
    if key:  # "KeyError: 'input_ids'. Interestingly, ...": the message is the quoted key, prose follows
        msg = key.group(1)
    return ExceptionInfo(builtin_type(m.group(1)), msg[:600], (), line.where, line.rank, line.seq, line.raw)


def named_above_stack(ctx: RunState) -> list[ExceptionInfo]:
    """Exceptions named in the lines before a cut traceback's first frame (an issue's title over a stack cut before
    its exception line): the stack beside them is theirs (classify/component.py stack_for)."""
    if ctx.exceptions or not ctx.open_tracebacks:
        return []
    first = ctx.open_tracebacks[0][0]
    # not the stack's own lines: its frame lines and the source lines under them (`assert ...`, `raise X(...)`)
    return [exc for line in ctx.tails.get(first.where.path, ()) if line.seq < first.seq
            and line.seq not in ctx.reporter_lines and not line.text[:1].isspace() and 'File "' not in line.text
            and "Traceback (most recent call last)" not in line.text
            and (exc := exception_named_in(line)) is not None][:3]


def embedded_exceptions(ctx: RunState) -> list[ExceptionInfo]:
    """Exceptions named in the last lines of a log where no exception and no traceback was parsed."""
    if ctx.exceptions or ctx.open_tracebacks:
        return []
    out = [exc for tail in ctx.tails.values() for line in tail
           if line.seq not in ctx.reporter_lines and (exc := exception_named_in(line)) is not None]
    if not out:
        # a program's own log prints the type of what it raises: only a paste's lines are read, or its title (the
        # first line above a pasted command, which makes the rest read as a launched program's)
        launched = ctx.launch_in_log()
        if not launched or not ctx.metrics_steps:  # a launched run that logs its steps has no pasted title to read
            out = indexed_wordings(ctx, title_only=launched)
    return out


# the words of a library's refusal; a line holding none is not looked up in the raise-site index
_REFUSAL = lazyre.compile(r"(?i)\b(?:can't|cannot|can not|not found|unable to|failed to|invalid|unsupported|not supported|"
                          r"must be|should be|does not|doesn't|no such|not allowed|expected|mismatch|incompatible|"
                          r"please correct)\b")


def indexed_wordings(ctx: RunState, title_only: bool = False) -> list[ExceptionInfo]:
    """A pasted excerpt's lines that hold, whole, a message some library raises (the raise-site index, score >= 0.95)
    without its type: "Can't find 'adapter_config.json' at '...'" is peft's ValueError whoever pasted it. Only for
    pastes (a program's own log prints the type), only lines with a refusal's words or a long first line that reads as a
    title; ``title_only``: only a log's first line."""
    out = []
    for tail in ctx.tails.values():
        for line in tail:
            if title_only and line.where.line != 1:
                continue
            if not _REFUSAL.search(line.text) and not (line.where.line == 1 and _title_like(line.text)):
                continue
            try:
                best = next(iter(site_matches(line.text)), None)
            except (OSError, ValueError):
                return []
            if best is not None and best.kind.endswith(("Error", "Exception")) and (
                    best.score >= 0.95 or _head_of(line.text, best.template) or _long_head(line.text, best.template)):
                out.append(ExceptionInfo(best.kind, line.text.strip()[:600], (), line.where, line.rank, line.seq,
                                         line.raw))
                continue
            quoted = _quoted_message(line.text)
            if quoted is not None:
                out.append(ExceptionInfo(quoted[0], quoted[1][:600], (), line.where, line.rank, line.seq, line.raw))
    return out[:3]


# a message a sentence quotes: a code span, a markdown link's text (a forum post's title linked), a quotation
_QUOTED = lazyre.compile(r"`\[?([^`\n]{30,}?)\]?(?:\([^)\s]*\))?`|\[([^\]\n]{30,})\]\(|[\"\u201c]([^\"\u201d\n]{30,})[\"\u201d]")
_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _quoted_message(text: str) -> tuple[str, str] | None:
    """(type, message) of a library message a sentence quotes without its type ("I get an error which says `Unable
    to create tensor, you should probably ...`"): the quotation's start is the message's (the raise-site index's
    fixed text, or the message of a structural entry that reads one type), typographic quotes made plain."""
    from ...classify.structure import load
    for m in _QUOTED.finditer(text):
        span = next(g for g in m.groups() if g).strip().translate(_CURLY)
        try:
            best = next(iter(site_matches(span)), None)
        except (OSError, ValueError):
            return None
        if best is not None and best.kind.endswith(("Error", "Exception")) and (
                best.score >= 0.95 or _long_head(span, best.template)):
            return best.kind, span
        for entry in load():
            if entry.message is not None and len(entry.types) == 1 and entry.message.match(span):
                return next(iter(entry.types)), span
    return None


# a line this long that begins with as much of a message's fixed text is that message, cut (an issue title's length
# limit, an excerpt's end), whatever its words
_LONG_HEAD = 60


def _title_like(text: str) -> bool:
    """A first line that may be a title quoting a message: long, and no command line (flags), log record (a bracket,
    a timestamp) or metrics row."""
    head = text.lstrip()
    return len(head) >= _LONG_HEAD and " --" not in head and head[:1] not in "[{(<|" and not head[:1].isdigit()


def _long_head(text: str, template: str) -> bool:
    """The line begins with the first _LONG_HEAD characters or more of the template's fixed text (up to its first
    hole): "Some tensors share memory, this will lead to duplicate memory on disk and ..." is safetensors' message."""
    head = text.strip()
    fixed = template.split("{", 1)[0]
    n = min(len(head), len(fixed))
    return n >= _LONG_HEAD and head[:n] == fixed[:n]


def _head_of(text: str, template: str) -> bool:
    """The line is the whole first line of a message that goes on over the next lines (it ends with a colon, the
    template's literal text up to its first hole): "Please correct the following DeepSpeed config values that mismatch
    TrainingArguments values:" above its list of values."""
    head = text.strip()
    return len(head) >= 40 and head.endswith(":") and template.startswith(head)


def notebook_exceptions(ctx: RunState) -> list[ExceptionInfo]:
    """A traceback cut before its exception line whose IPython header names the exception (``ImportError    Traceback
    (most recent call last)``, IPython/core/ultratb.py): the exception, with the header's type, no message and the cut
    stack's frames."""
    out = []
    for last, frames in ctx.open_tracebacks:
        head = notebook_header(ctx.tails, last)
        if head is not None:
            line = head[0]
            above = message_above(ctx.tails, line, head[1])
            out.append(ExceptionInfo(head[1], above[0] if above else "", frames, line.where, line.rank, line.seq,
                                     line.raw))
    return out


# the raise statement a cut traceback's last frame prints as its source line: `raise RuntimeError("Cannot find ...")`
_RAISE = lazyre.compile(r"""^raise\s+(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception))\(\s*[fr]?(?P<q>["'])(?P<msg>.+?)(?P=q)""")
# or an assert statement with its message (`assert load_valuehead_params(...), "Reward model is not correctly loaded."`)
_ASSERT = lazyre.compile(r"""^assert\s+.+?,\s*[fr]?(?P<q>["'])(?P<msg>.+?)(?P=q)\s*$""")


def raised_statements(ctx: RunState) -> list[ExceptionInfo]:
    """A traceback cut before its exception line whose last frame's source line is the raise statement itself: the
    exception that statement raises (its type and its message's literal text), with the cut stack's frames."""
    out = []
    for last, frames in ctx.open_tracebacks:
        code = frames[-1].code.strip() if frames and frames[-1].code else ""
        m = _RAISE.match(code)
        if m is not None:
            out.append(ExceptionInfo(m.group("type"), m.group("msg"), tuple(frames), last.where, last.rank, last.seq,
                                     code))
            continue
        a = _ASSERT.match(code)
        if a is not None:
            out.append(ExceptionInfo("AssertionError", a.group("msg"), tuple(frames), last.where, last.rank, last.seq,
                                     code))
    return out
