"""GD990-GD994, GD996, GD997 and GD249 (vLLM version, in its family; GD995 is watch's exit rule): an exception no signature rule claims, classified from its structure (which component raised
it, its type, the frames it went through) by doctor/data/structure.toml. One rule per category: each takes
the session's verdict when the verdict's category is its own. GD999 steps aside when a verdict exists."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from ... import lazyre
from ...classify.component import possessive, rel, user_frames
from ...classify.structure import SITE_LINE, Verdict, first_failure, pins_branch
from ...classify.wrappers import unwrap
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import ExceptionInfo, LogLine
from .exceptions import stackless_words, unexplained
from .named import embedded_exceptions, named_above_stack, notebook_exceptions, raised_statements


def unwrapped(ctx: RunState, exc: ExceptionInfo) -> ExceptionInfo:
    """The exception a wrapper (hydra's InstantiationException...) holds in its message (classify/wrappers.py)."""
    tail = ctx.tails.get(exc.where.path) or ()
    return unwrap(exc, [l for l in tail if exc.where.line < l.where.line <= exc.where.line + 3])


def outer_of(ctx: RunState, exc: ExceptionInfo) -> ExceptionInfo | None:
    """The parsed wrapper an unwrapped exception came from, or None."""
    return next((e for e in ctx.exceptions if e.seq == exc.seq and e is not exc and e.type != exc.type), None)


def verdict_of(ctx: RunState) -> Verdict | None:
    """The structural verdict for this run, or None (a cause is already named, or nothing points anywhere)."""
    if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
        return None
    excs = [unwrapped(ctx, e) for e in unexplained(ctx, ctx.exceptions)]
    if not excs and not ctx.open_tracebacks and not any(f.severity >= Severity.warning for f in ctx.findings):
        excs = embedded_exceptions(ctx)
    elif not excs and not ctx.exceptions:
        # a cut notebook traceback: its header's type with its stack; when that names nothing, the stack alone
        v = first_failure(notebook_exceptions(ctx), list(ctx.open_tracebacks or ())) or \
            first_failure(raised_statements(ctx), list(ctx.open_tracebacks or ())) or \
            first_failure(named_above_stack(ctx), list(ctx.open_tracebacks or ()))
        if v is not None:
            return v
    return first_failure(excs, list(ctx.open_tracebacks or ()),
                         run_facts_of(ctx) if excs or ctx.open_tracebacks else None)


def run_facts_of(ctx: RunState) -> dict[str, str]:
    """What the run shows around its exceptions (classify/run_context.py), from its arguments and kept lines."""
    from ...classify.run_context import run_facts
    from .advice import framework_of
    lines = sorted((line for tail in ctx.tails.values() for line in tail), key=lambda line: line.seq)
    return run_facts(ctx.run.args, lines, framework_of(ctx))


_FACT_WORDS = {"deepspeed": "DeepSpeed", "zero3": "ZeRO stage 3", "checkpoint-load": "a checkpoint being loaded",
               "zero3-only": "ZeRO-2 running where ZeRO-3 fails",
               "unsloth": "an unsloth run", "dataset-map": "the dataset being mapped",
               "lora-adapter": "a LoRA adapter"}


def _context(v: Verdict) -> str:
    """The run's facts that placed an exception the entry reads by them (its own frames do not show them)."""
    if not v.context:
        return ""
    said = "; ".join(f"{_FACT_WORDS.get(fact, fact)} {'at' if where.startswith('line ') else 'in'} {where}"
                     for fact, where in v.context)
    return f" The run around it shows {said} (its traceback does not)."


def _ranked_sites(exc: ExceptionInfo, ctx: RunState) -> list:
    """The raise sites of this wording (the raise-site index), ranked as the finding's ``raised_by``
    (doctor/classify/site_rank.py); a message that goes on over the lines after its exception line (a multi-line
    f-string: "Unrecognized configuration class ... for this kind of AutoModel: X." then "Model type should be one
    of ...") is looked up whole when its first line alone finds no site."""
    try:
        from ...classify.raise_sites import best_sites
        frames = [f.path for f in exc.frames]
        got = best_sites(f"{exc.type}: {exc.message}", 0.8, frames=frames, known=ctx.run.versions)
        rest = [] if got else message_lines_after(exc, ctx)
        if rest:
            got = best_sites(" ".join([f"{exc.type}: {exc.message}", *rest])[:1000], 0.8, frames=frames,
                             known=ctx.run.versions)
        return got
    except (OSError, ValueError):
        return []


# a line that cannot be the rest of an exception's message: a frame, a traceback header, a log record, a rank or
# launcher prefix, another exception, a progress bar
_NOT_MESSAGE = lazyre.compile(r"^\s*(?:File \"|Traceback \(|During handling|The above exception|\[rank\d|\(\w+ pid=|"
                              r"[\w.]*(?:Error|Exception|Warning)\b|\d{4}-\d\d-\d\d|\[?(?:INFO|WARNING|ERROR|DEBUG)\b|"
                              r".*\d+%\|)")


def message_lines_after(exc: ExceptionInfo, ctx: RunState, most: int = 3) -> list[str]:
    """The lines right after the exception's line that carry on its message (Python prints a message's own newlines
    as lines of their own after `Type: first line`), up to ``most``; none past a blank line or a line of another
    kind."""
    out: list[str] = []
    for n, ln in enumerate(ctx.lines_after(exc.where.path, exc.seq, most), exc.where.line + 1):
        text = ln.text.strip()
        if ln.where.line != n or not text or _NOT_MESSAGE.match(text):
            break
        out.append(text)
    return out


def _best_site(exc: ExceptionInfo, ctx: RunState) -> tuple[object | None, list[str]]:
    """(the site to name, the packages it stays tied with): the best site, unless several packages hold copies of it
    that no evidence tells apart (site_rank.TIE); then the one package the message or the run names (the message's
    dotted module `transformers.modeling_utils`, a version the log printed, the framework), else the first with the
    list of tied packages."""
    from ...classify.site_rank import TIE
    sites = _ranked_sites(exc, ctx)
    if not sites:
        return None, []
    best = sites[0][0][:TIE]
    tied = [m for key, m in sites if key[:TIE] == best]
    packages = list(dict.fromkeys(m.package for m in tied))
    if len(packages) == 1:
        return sites[0][1], packages
    framework = ctx.framework()[0]
    named = [p for p in packages if p in ctx.run.versions or p == framework or p.replace("ms-", "") == framework
             or re.search(rf"(?<![\w.]){re.escape(p.replace('ms-', '').replace('-', '_'))}\.\w", exc.message)]
    if len(named) == 1:
        return next(m for m in tied if m.package == named[0]), named
    return sites[0][1], packages


_RAISE_STATEMENT = lazyre.compile(r"\b(?:raise|assert)\b")


def _raised_by_its_line(exc: ExceptionInfo, site: Any) -> bool:
    """The innermost frame's printed line raised it without a raise or assert (a builtin: `int(args.x)` of None, a
    lookup), in a file that is not the indexed site's: the words are the interpreter's, whatever package also raises
    them (vLLM's own `int()` wording is not what a user's `int(args.output_length)` ran)."""
    if not exc.frames:
        return False
    last = exc.frames[-1]
    if not last.code or _RAISE_STATEMENT.search(last.code):
        return False
    return not any(f.path.replace("\\", "/").endswith(site.module) for f in exc.frames)


def where_raised(exc: ExceptionInfo, ctx: RunState, line_read: bool, owner: bool = False) -> tuple[str, str | None]:
    """(" <the test that leads to this wording's raise site, with the values the log shows for it>", the fix that
    test gives or None); ("", None) when no indexed site has the wording, or its site has no test.
    ``line_read``: the failing source line was read (an assert's printed line already says what was false);
    ``owner``: say whose wording it is when nothing else is said (a finding without a category)."""
    s, tied = _best_site(exc, ctx)
    if s is None or _raised_by_its_line(exc, s):
        return "", None
    if len(tied) > 1:
        # copies of one check in several packages, and nothing in the log (a frame, a version, the framework) says
        # which of them ran: name them all rather than the first by name
        return (f" This wording is raised by {', '.join(tied[:-1])} and {tied[-1]} alike (copies of one check); "
                f"nothing in the log tells which of them ran.", None)
    if s.condition and not (line_read and exc.short_type == "AssertionError"):
        from ...classify.raise_condition import read
        checked = read(s, ctx.run.args, ctx.run.provenance)
        if checked is not None:
            return " " + checked.sentence(), checked.fix()
    # where it is raised is in the report's raised-by line (and the JSON's raised_by, with its releases); a finding
    # that names no category (``owner``) says whose words they are
    return (f" The wording is {possessive(s.package)} ({s.where.rsplit('.', 1)[-1]}).", None) if owner else ("", None)


# what a line printed just before a traceback says when it announces the failure: concurrent.futures'
# `... raised AssertionError>`, asyncio's `exception=Exception('...')`, vLLM's `Invocation of X method failed`
_NOTICE = lazyre.compile(r"raised [A-Z]\w*|exception=[A-Z]\w*\(|method failed|[A-Z]\w*(?:Error|Exception)\b")


def _notice_before(ctx: RunState, last: LogLine) -> LogLine | None:
    """The line right before the `Traceback (most recent call last)` header of a cut traceback, when it
    announces the failure (the traceback's own exception line is the part that was cut)."""
    tail = ctx.tails.get(last.where.path) or ()
    lines = [l for l in tail if l.seq <= last.seq]
    for i in range(len(lines) - 1, 0, -1):
        if "Traceback (most recent call last)" in lines[i].text:
            prev = lines[i - 1]
            return prev if _NOTICE.search(prev.text) else None
    return None


_SHAPE = lazyre.compile(r"shape '\[(-?\d+), (\d+)\]' is invalid for input of size (\d+)")


# an assert's message with both numbers: "Batch size (30) is not a multiple of shards (4)"
_MULTIPLE_NUMBERS = lazyre.compile(r"\((\d{1,12})\)[^()]{0,60}?(?:multiple of|divisible by)[^()]{0,40}?\((\d{1,12})\)")
_DIVIDES = lazyre.compile(r"\bassert\s+\(?(?P<a>[^%#]{1,80}?)\s*%\s*(?P<b>[\w.\[\]()]{1,60}?)\)?\s*==\s*0")


# the fields pydantic refuses, one per line under its header, each followed by its reason (v1 and v2 wordings)
_REFUSED_FIELD = lazyre.compile(r"^(?:\[rank\d+\]:\s*)?([a-z_][\w.]*)\s*$")
# DeepSpeedFP16Config's loss-scaling fields (runtime/precision_config.py): bf16 has no loss scaling
_FP16_KEYS = frozenset({"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale",
                        "consecutive_hysteresis", "auto_cast"})


def _refused_keys(v: Verdict, ctx: RunState) -> str:
    """The keys a DeepSpeed config model refused, read from the lines under pydantic's header, and what they are."""
    if v.entry.id not in ("deepspeed-config-model", "deepspeed-trainer-mismatch") or v.exc is None:
        return ""
    after = ctx.lines_after(v.exc.where.path, v.exc.seq, 40)
    if v.entry.id == "deepspeed-trainer-mismatch":
        pairs = [ln.text.strip()[2:] for ln in after[:20] if ln.text.strip().startswith("- ds ")]
        return f" The values that differ: {'; '.join(pairs[:6])}." if pairs else ""
    keys = []
    for ln, nxt in zip(after, after[1:]):
        m = _REFUSED_FIELD.match(ln.text.strip())
        if m and "not permitted" in nxt.text:
            keys.append(m.group(1))
    if not keys:
        return ""
    model = v.exc.message.rsplit(" for ", 1)[-1].split()[0]
    out = f" Refused by {model}: {', '.join(keys[:12])}."
    if model == "DeepSpeedBF16Config" and set(keys) <= _FP16_KEYS:
        out += (" These are the fp16 section's loss-scaling keys: bf16 has no loss scaling, so they belong under fp16 "
                "or nowhere.")
    elif all(k.startswith(("zero_hpz_", "zero_quantized_")) for k in keys):
        out += (" These are ZeRO++ keys, which DeepSpeed releases after 0.9.5 declare: the installed DeepSpeed is older "
                "than the config.")
    return out


# pydantic v2's line under a refused field: "Input should be a valid integer, got a number with a fractional part
# [type=int_from_float, input_value=15099494.4, input_type=float]"
_VALUE_ERROR = lazyre.compile(r"\[type=(?P<type>\w+), input_value=(?P<value>[^,\]]{1,80}), input_type=(?P<itype>\w+)\]")
_SIZE_FILLED = ("stage3_prefetch_bucket_size", "reduce_bucket_size", "stage3_param_persistence_threshold")


def refused_values(v: Verdict, ctx: RunState) -> tuple[str, str] | None:
    """(sentence, fix) when DeepSpeed's config model refused a value of the wrong type rather than a key (pydantic's
    `type=` is not `extra_forbidden`), read from the lines under its header; None otherwise."""
    if v.entry.id != "deepspeed-config-model" or v.exc is None:
        return None
    after = ctx.lines_after(v.exc.where.path, v.exc.seq, 40)
    found = []
    for ln, nxt in zip(after, after[1:]):
        m = _REFUSED_FIELD.match(ln.text.strip())
        e = _VALUE_ERROR.search(nxt.text)
        if m and e and e.group("type") != "extra_forbidden":
            found.append((m.group(1), e.group("value"), e.group("type"), e.group("itype")))
    if not found:
        return None
    shown = "; ".join(f"{k} = {val} ({t}, a {it})" for k, val, t, it in found[:6])
    why = (f"DeepSpeed's config model refused a value, not a key: {shown}. The section is right; the value is of "
           f"another type than the field declares.")
    fix = "Write the value as the field's type (an integer for the bucket sizes and thresholds)."
    if any(k.rsplit(".", 1)[-1] in _SIZE_FILLED and t == "int_from_float" for k, _, t, _ in found):
        why += (" transformers fills ZeRO-3's `auto` sizes from the model (integrations/deepspeed.py "
                "trainer_config_finalize: stage3_prefetch_bucket_size = 0.9 x hidden_size x hidden_size, a float), "
                "and the DeepSpeed releases whose pydantic model checks integers strictly refuse the fraction.")
        fix = ("Replace `auto` for that size with an integer in the DeepSpeed config (e.g. the value printed, rounded "
               "down), or install a transformers release that rounds it, or the DeepSpeed release the config worked "
               "with.")
    return why, fix


def _server_in_args(v: Verdict, ctx: RunState) -> str:
    """For a failure while ms-swift parses a GRPO run's arguments with a rollout server configured: the argument setup
    itself connects to that server (RLHFArguments.__post_init__ -> _init_external_vllm: VLLMClient, then its
    communicator), so the flags are not the only candidate. '' otherwise."""
    if v.entry.id not in ("argument-parsing-phase", "argument-validation") or not any(
            "hf_argparser.py" in f.path or f.func in ("_parse_args", "__post_init__") for f in v.frames):
        return ""
    if not ctx.run.vllm_server():
        return ""
    return ("The run failed while ms-swift set up its arguments, and with a rollout server configured that setup "
            "connects to the server: RLHFArguments.__post_init__ runs _init_external_vllm, which builds the VLLMClient "
            "(an HTTP check of the server) and its weight-sync communicator (an NCCL group with the server). A refused "
            "flag, a server that does not answer and a communicator that cannot form all fail here; the exception line "
            "says which.")


def _detail(v: Verdict) -> str:
    """What the numbers of the message (or the failed assertion) say, where the entry knows how to read them."""
    if v.entry.category != "batch-divisibility" or v.exc is None:
        return ""
    m = _SHAPE.search(v.exc.message)
    if m is None:
        d = next((d for f in reversed(v.frames) if f.code and (d := _DIVIDES.search(f.code))), None)
        # the check itself divided by zero: the failing line's reading (classify/failing_line.py) names the operand
        if d is None or v.exc.short_type == "ZeroDivisionError":
            return ""
        a, b = d.group('a').strip(), d.group('b')
        said = f" The failed assertion wants `{a}` to be a multiple of `{b}`"
        nums = _MULTIPLE_NUMBERS.search(v.exc.message)
        if nums is not None and int(nums.group(2)) > 0:
            have, of = int(nums.group(1)), int(nums.group(2))
            low, high = have - have % of, have - have % of + of
            said += (f"; the message gives {have} and {of} ({have} % {of} = {have % of}): the nearest multiples are "
                     + (f"{low} and {high}" if low else f"{high}") + ". Change")
        else:
            said += ": change"
        return said + " the setting behind the first, or the one behind the second."
    k, n = int(m.group(2)), int(m.group(3))
    return f" Here {n} values cannot be split into groups of {k} ({n} % {k} = {n % k})."


# where an exception was raised, from its type, message and frames: an import, argument parsing, a constructor call
_IMPORT_MSG = lazyre.compile(r"cannot import name|No module named|partially initialized module")
_PARSE_FUNCS = frozenset({"parse_args", "_parse_args", "__post_init__", "parse_args_into_dataclasses", "_parse_known_args",
                          "parse_known_args", "parse_dict", "parse_yaml_file", "parse_json_file", "_check_value", "error"})
_PARSE_MSG = lazyre.compile(r"unrecognized arguments|error: argument|invalid choice|the following arguments are required")
_CTOR_MSG = lazyre.compile(r"\b([A-Z]\w*)\.(?:__init__|init)\(\)")


_INNERMOST = "The innermost library frame is"


def _first_sentence(message: str, limit: int = 90) -> str:
    """The message's first sentence, or its first words up to ``limit`` characters followed by '...'."""
    one = message.split(". ", 1)[0].strip()
    if len(one) <= limit:
        return one
    return one[:limit].rsplit(" ", 1)[0] + " ..."


def raise_verify(rule_id: str, v: Verdict, framework: str | None) -> str | None:
    """The verify of GD993 (version clash) and GD990 (argument error) by where this exception was raised: the rule's
    own line ("the imports succeed", "argument parsing passes") is met by a run that failed later, in a constructor,
    an engine's start or a training step. None: the rule's own line fits."""
    exc = v.exc
    if exc is None or rule_id not in ("GD990", "GD993"):
        return None
    frames = [f for f in exc.frames or v.frames if f.lineno != SITE_LINE]
    funcs = {f.func for f in frames}
    if rule_id == "GD993" and (exc.short_type in ("ImportError", "ModuleNotFoundError")
                               or _IMPORT_MSG.search(exc.message) or (frames and frames[-1].func == "<module>")):
        return None
    if rule_id == "GD990" and (funcs & _PARSE_FUNCS or _PARSE_MSG.search(exc.message)
                               or any("argparse" in f.path for f in frames)):
        dump = " (ms-swift's `args:` dump)" if framework == "ms-swift" else ""
        return f"argument parsing passes: the log shows the parsed arguments{dump} and reaches model loading"
    shown = f"`{exc.short_type}: {_first_sentence(exc.message)}`" if exc.message else f"`{exc.short_type}`"
    ctor = _CTOR_MSG.search(exc.message)
    if ctor is not None:
        return (f"`{ctor.group(1)}` is built: the log passes its construction with no {shown} line and reaches the "
                f"first step" + (", with the library versions that belong together" if rule_id == "GD993" else ""))
    from ...classify.hints import phase_of
    phase = phase_of(frames)
    site = f" ({v.frames[-1].func})" if v.frames and v.frames[-1].func and v.frames[-1].func != "<module>" else ""
    past = f"{phase} ({v.component})" if phase else (f"the point where {v.component} raised it{site}" if v.frames
                                                      else "the point where it was raised")
    return (f"the next run's log has no {shown} line and goes on past {past}"
            + (", with the library versions that belong together" if rule_id == "GD993" else ""))


class Structural(Rule):
    kinds = frozenset()

    def share(self, pool: dict[str, Any]) -> None:
        self._pool = pool

    def finish(self, ctx: RunState) -> list[Finding]:
        pool = getattr(self, "_pool", {})
        memo = pool.get("structural-verdict")
        # one verdict for the structural rules of one finish: the same state and the findings list that finish
        # handed the fallbacks. watch finishes the same state again every few seconds as the run goes on, and a
        # verdict from before the traceback arrived must not stand for the one after
        if memo is None or memo[0] is not ctx or memo[1] is not ctx.findings:
            memo = (ctx, ctx.findings, verdict_of(ctx))
            pool["structural-verdict"] = memo
        v: Verdict | None = memo[2]
        if v is None or v.entry.category != self.meta.category:
            return []
        found = self._finding(v, ctx)
        from .advice import framework_of  # here: as _finding's imports, only once a verdict stands
        verify = v.entry.verify or raise_verify(self.meta.id, v, framework_of(ctx))
        return [dataclasses.replace(found, verify=verify) if verify else found]

    def _finding(self, v: Verdict, ctx: RunState) -> Finding:
        # imported at the first verdict: a run without a traceback never needs them, and watch pays every import
        from ...classify.failing_line import explain as explain_line
        from .advice import advise, context_before, cut_message, framework_of, meta_fix
        exc = v.exc
        if exc is not None:  # runs appended to one log: the configuration of the run that raised it
            ctx = ctx.at(exc.where)
        where = f" at {rel(v.where)}" if v.where is not None else ""
        user = user_frames(v.frames)
        if exc is not None:
            context = exc.message + "\n" + context_before(ctx, exc.where.path, exc.seq)
        else:
            context = context_before(ctx, ctx.open_tracebacks[0][0].where.path, ctx.open_tracebacks[0][0].seq)
        advice = advise(v, ctx, exc, context)
        extra, first, drop = advice.why, advice.first, advice.drop
        if exc is None:
            cut_why, cut_fix = cut_message(v.frames)
            extra, first = (f"{cut_why} {extra}".strip(), cut_fix + first)
        meta = [m for m in (list(v.entry.fix) or meta_fix(self.meta, framework_of(ctx))) if not any(d in m for d in drop)]
        if first and not v.entry.fix and self.meta.options.get("fix_when_alone"):
            meta = []  # a generic way to read the refusal adds nothing to the run's own fix
        fix: list[str] = first + meta
        # a refused config or a broken install is fixed in the config or the environment, not at the user's call
        if user and v.entry.category not in ("deepspeed-config-error", "import-or-dependency-error"):
            fix.append(f"The last frame outside the installed packages (the script's or the project's own code) is "
                       f"{rel(user[-1])}: start there.")
        doc = " ".join(v.entry.doc.split())
        if doc.startswith(_INNERMOST) and (not v.frames or all(f.lineno == SITE_LINE for f in v.frames)):
            # placed by its raise site, not by frames: no frame of it was read
            doc = "The code that raises it is" + doc[len(_INNERMOST):]
        if v.entry.cases and not advice.own_reading:
            doc += " " + " ".join(v.entry.cases.split())
        server = _server_in_args(v, ctx)
        if server:
            doc = server
        if exc is not None:
            text = f"{exc.type}: {exc.message}" if exc.message else exc.type
            if v.frames and all(f.lineno == SITE_LINE for f in v.frames):
                where_txt = (f" {stackless_words(ctx)}; the message is {possessive(v.component)}, raised in "
                             f"{v.frames[-1].path.split('/', 1)[-1]} ({v.frames[-1].func}).")
            elif exc.frames and exc not in ctx.exceptions and exc.raw.startswith(("raise ", "assert ")):
                where_txt = (f" The traceback is cut before its exception line; its last frame's source line is the "
                             f"statement that raised it, `{exc.raw[:160]}`. The stack runs through {v.component}{where}.")
            elif exc.frames and exc not in ctx.exceptions:
                where_txt = (f" The notebook's traceback header names the exception; its message (printed last by "
                             f"IPython) is not in the paste. The stack runs through {v.component}{where}.")
            elif v.frames and not exc.frames:
                where_txt = (f" The exception was printed without its stack; the traceback beside it runs through "
                             f"{v.component}{where}.")
            elif v.frames:
                where_txt = f" Raised in {v.component}{where}."
            else:
                where_txt = f" {stackless_words(ctx)}."
            outer = outer_of(ctx, exc)
            if outer is not None:
                where_txt += (f" It was wrapped in `{outer.short_type}` (`{outer.message[:120]}`), which only reports "
                              f"that the call failed.")
            values = refused_values(v, ctx)
            if values is not None:  # the entry's doc is about refused keys; this run's refusal is a value's type
                doc = values[0]
                fix[:] = [values[1]] + [x for x in fix if not x.startswith("Move each refused key")]
            # an exception printed above its stack: the failing line is the last line of the stack beside it
            read = explain_line(exc if exc.frames or not v.frames else dataclasses.replace(exc, frames=v.frames))
            raised, told = where_raised(exc, ctx, bool(read))
            if told:
                fix.append(told)
            msg = (f"`{text}`.{where_txt} {doc}{_detail(v)}{_refused_keys(v, ctx)}{raised}"
                   + (f" {extra}" if extra else "") + _context(v))
            if read:
                msg += " " + " ".join(read)
            same = [e for e in ctx.exceptions if e.type == exc.type and e.message == exc.message]
            ranks = tuple(sorted({e.rank for e in same if e.rank is not None}))
            if ctx.other_ranks_than(ranks):  # said only where other ranks' lines are shown
                fix.append(f"Raised on rank(s) {', '.join(map(str, ranks))}; the other ranks' errors and timeouts "
                           f"after it are consequences.")
            # named in a summary line, not a traceback (a notebook header with its cut stack is a traceback)
            embedded = exc not in ctx.exceptions and outer is None and not exc.frames
            if embedded:
                msg += (" (The exception is named on a line of its own, without its traceback, so where it was raised "
                        "is not shown.)" if exc.short_type in exc.raw else
                        f" (The log shows Python's {exc.short_type} message without the type's name or its traceback, "
                        f"so where it was raised is not shown.)")
                same = [exc]
            ev = [Evidence(exc.where.path, exc.where.line, exc.raw)]
            if exc.frames and exc not in ctx.exceptions:  # a notebook header: the last frame line shows the failure
                last = next((l for l, f in ctx.open_tracebacks if f == exc.frames), None)
                if last is not None:
                    ev.append(Evidence(last.where.path, last.where.line, last.raw))
            if outer is not None and (outer.where.path, outer.where.line) != (exc.where.path, exc.where.line):
                ev.insert(0, Evidence(outer.where.path, outer.where.line, outer.raw))
            found = self.make(message=msg, fix=fix, evidence=ev, count=max(len(same), 1), ranks=ranks, seq=exc.seq,
                             severity=Severity.warning if embedded else None,
                             # named outside a traceback, or placed by the run around it rather than its frames
                             confidence="possible" if embedded or (v.context and not exc.frames) else None,
                             alternatives=v.runners_up,
                             title=(v.entry.title if v.entry.title else
                                    f"{self.meta.title}: {exc.short_type}" + (f" in {v.component}" if v.frames else "")))
            return found if pins_branch(v.entry) else dataclasses.replace(found, branch_known=False)
        line, _ = next(((l, f) for l, f in ctx.open_tracebacks if f == v.frames), ctx.open_tracebacks[0])
        evidence = [Evidence(line.where.path, line.where.line, line.raw)]
        notice = _notice_before(ctx, line)
        if notice is not None:
            evidence.insert(0, Evidence(notice.where.path, notice.where.line, notice.raw))
        msg = (f"The log ends inside a traceback before its exception line (cut); its stack runs through "
               f"{v.component}{where}. {doc}" + (f" {extra}" if extra else "") + " Judged from the stack alone: "
               "find the exception line in the full log to confirm.")
        from .cut_stage_text import read as read_stage
        staged = read_stage(ctx, line, v.frames)
        if staged is not None:  # the stage of the deepest frames: what fails there, what to check first
            msg += f" It is {staged.stage.stage} that failed. {staged.why}"
            fix[:0] = list(staged.stage.fix)
        alternatives = v.runners_up
        if server:  # the server's connection is as likely as a flag: said so, and what to check first
            fix[:0] = ["Check the rollout server before the flags: `swift rollout` running and answering at "
                       "vllm_server_host:vllm_server_port (`curl http://<host>:<port>/health/`), its group port "
                       "reachable from the trainer, and the same ms-swift and vLLM versions on both sides."]
            alternatives = tuple(dict.fromkeys((*v.runners_up, "vllm-engine-error", "nccl-timeout")))
        found = self.make(message=msg, fix=fix, evidence=evidence, seq=line.seq, severity=Severity.warning,
                          title=f"{v.entry.title or self.meta.title} (traceback cut, from its stack)",
                          alternatives=alternatives, confidence="possible" if server else None)
        if staged is not None and staged.category and staged.category != found.category and not server:
            # a stage where every failure the library raises is of one category (or a line before the stack leaves
            # one) names it better than the component: vLLM's KV cache sizing fails for memory, whatever engine entry
            # the frames matched
            found = dataclasses.replace(found, category=staged.category, alternatives=tuple(dict.fromkeys(
                (found.category, *found.alternatives))), title=f"Failure in {staged.stage.stage} (traceback cut, "
                f"from its stack)")
        return found
