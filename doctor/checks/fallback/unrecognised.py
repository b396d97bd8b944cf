"""GD999, the answer of last resort: a log that ends in a failure no rule knows still gets a finding that
quotes the first real exception and where it was raised. Never silence."""
from __future__ import annotations

import re
from dataclasses import replace

from ... import lazyre
from ...classify.component import component, deepest_library, user_frames
from ...classify.wrappers import CATEGORY_OF_TYPE
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import ExceptionInfo, LogLine
from ...swift.framework import issues_of
from ..hang.endings import plain
from ..hang.prose import of_vllm_run
from ..memory._facts import zero_stage
from .cut_wording import CutReading, read_cut
from .exceptions import (
    describe_frame,
    first_real,
    is_library,
    log_shows_frames,
    message_above,
    notebook_header,
    ray_header,
    tail_before,
    unexplained,
)
from .named import embedded_exceptions
from .structural import run_facts_of, verdict_of, where_raised
from .wrapped_model import wrapped_attribute

_KEY = lazyre.compile(r"\[\s*['\"](\w+)['\"]\s*\]")
_MEDIA = {"image", "images", "video", "videos", "audio", "audios", "pixel_values"}
_SIZE0 = lazyre.compile(r"\bwith size 0\b|\bof size 0\b|numel\(\) == 0|\bsize of tensor [ab] \(0\)")

# how to take a phase out of the run while its failure is fixed, by framework (flag names of ms-swift 3.x-4.x and of
# transformers TrainingArguments / trl GRPOConfig)
_PHASE_OFF = {
    "logging the step's metrics": {"ms-swift": "--log_completions false (and --report_to none) to confirm",
                                   None: "log_completions=False (and report_to=\"none\") in GRPOConfig to confirm"},
    "evaluation": {"ms-swift": "--eval_strategy no to confirm", None: "eval_strategy=\"no\" to confirm"},
    "checkpoint save": {"ms-swift": "--save_only_model true, or another --output_dir on a disk with room",
                        None: "save_only_model=True, or another output_dir on a disk with room"},
}


def _phase_fix(phase: str | None, framework: str | None) -> list[str]:
    alt = _PHASE_OFF.get(phase or "")
    if alt is None:
        return []
    how = alt.get(framework) or alt[None]   # a framework not told: the neutral spelling, never ms-swift's by default
    return [f"The failure is in {phase}: {how}, then upgrade the trainer (a release that fixes this path) or fix "
            f"the setting that path reads."]


def _zero3_told(exc: ExceptionInfo, ctx: RunState) -> bool:
    """DeepSpeed in the stack, or ZeRO-3 in the run's arguments or log lines (classify/run_context.py): a size-0
    dimension may be a partitioned weight."""
    return any("deepspeed" in f.path for f in exc.frames) or "zero3" in run_facts_of(ctx)


# a progress bar of evaluation (transformers' "Evaluating", Megatron-SWIFT's "Evaluate:", tqdm's "eval"): the phase the
# run was in when the exception came, for frames that name none
_EVAL_BAR = lazyre.compile(r"\b(?:Evaluat\w*|eval(?:uation)?)\b[^|\n]{0,30}\d+%\|", re.I)
# torch.compile (dynamo) tracing on fake tensors: torch/_dynamo/utils.py get_fake_value raises TorchRuntimeError
# "Failed running call_function <fn>(*(args), **{}):" with the real error on the next line
_FAKE = lazyre.compile(r"Failed running (?:call_function|call_method|call_module)")
# a trace pasted as prose: "Trace:" then "A.method" / "-> B" lines
_TRACE_HEAD = lazyre.compile(r"^\s*(?:Trace|Traceback|Stack|Call stack)\s*:?\s*$", re.I)
_TRACE_STEP = lazyre.compile(r"^\s*(?:->|=>|→)?\s*(?P<s>(?:return |[\w.]+\(|[\w.]+$).{0,160})$")


def _bar_phase(exc: ExceptionInfo, ctx: RunState) -> str | None:
    """"evaluation" when the last progress bar printed before the exception (in the same log) is an evaluation bar."""
    for t in reversed(tail_before(ctx.tails, exc)[-8:]):
        if "%|" in t.text:
            return "evaluation" if _EVAL_BAR.search(t.text) else None
    return None


def _prose_trace(after: list) -> list[str]:
    """The steps of a trace pasted as prose under the exception ("Trace:", then "A.f", "-> g", "-> return ..."."""
    steps: list[str] = []
    started = False
    for t in after:
        text = t.text.strip()
        if not text:
            if steps:
                break
            continue
        if not started and _TRACE_HEAD.match(text):
            started = True
            continue
        if not started:
            break
        m = _TRACE_STEP.match(text)
        if m is None:
            break
        steps.append(m.group("s").strip())
    return steps if len(steps) >= 2 else []


def _what_it_shows(exc: ExceptionInfo, read: list[str], phase: str | None, after: list) -> list[str]:
    """[sentence for the message, fix lines...] from what the log shows of this exception beyond its message: an
    operand that was None (failing_line), torch.compile's reason line, a trace pasted as prose; [] when none."""
    none = next((r for r in read if r.endswith("was None.") and "`" in r), None)
    if none is not None:
        operand = none.rsplit("`", 2)[-2]
        where = f" at the start of {phase}" if phase else ""
        fix = [f"`{operand}` was None{where}: find where the code builds it (a function that returned None, or a "
               f"setting that leaves it unset) before this line runs."]
        if phase == "evaluation":
            fix[0] += (" An evaluation whose data was never built (no validation set or split, or one left empty "
                       "after filtering) leaves its data iterator None: give the run a validation set, or turn "
                       "evaluation off.")
        return [""] + fix
    if _FAKE.search(exc.message):
        reason = next((t.text.strip() for t in after if t.text.strip() and not t.text.startswith((" ", "\t"))
                       and not t.text.strip().startswith((")", "FakeTensor", "GradTrackingTensor", "requires_grad"))
                       and "from user code" not in t.text), None)
        said = ("torch.compile (dynamo) failed while tracing compiled code on fake tensors"
                + (f"; the reason printed under it: `{reason[:200].rstrip('.')}`." if reason else "."))
        return [said, "Run once with TORCHDYNAMO_DISABLE=1 (torch.compile off): the same operation then fails with "
                      "its plain error and full stack, or passes (a compile-only problem); the frames under "
                      "'from user code:' name the compiled function: when it is a library's (a patched trainer or "
                      "model, its compiled cache), upgrade that library and clear the cache."]
    trace = _prose_trace(after)
    if trace:
        chain = " -> ".join(f"`{x}`" if " " in x or "(" in x else x for x in trace[:6])
        return [f"The trace pasted under it runs {chain} (no file/line frames).",
                f"The failing step is {trace[-1][:120]!s} in {trace[0]}: compare the shapes of the tensors that line "
                f"combines; inside a library's own method (not your code), upgrade that library or pin the release "
                f"pair your recipe names."]
    return []


class Unrecognised(Rule):
    kinds = frozenset({ExceptionInfo})

    def finish(self, ctx: RunState) -> list[Finding]:
        # consequences (NCCL timeouts, ChildFailedError...) do not explain the first real error
        if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
            return []
        if verdict_of(ctx) is not None:
            return []  # the structural rules (GD990-GD996) name a category
        exc = first_real(unexplained(ctx, ctx.exceptions))
        if exc is not None:  # with runs appended to one log, the configuration of the run that raised it
            return [self._for_exception(exc, ctx.at(exc.where))]
        if not ctx.open_tracebacks and not any(f.severity >= Severity.warning for f in ctx.findings):
            named = embedded_exceptions(ctx)
            if named:  # a pytest summary, a notebook header, markdown: the exception without its traceback
                f = self._for_exception(named[0], ctx)
                return [replace(f, severity=Severity.warning, message=f.message + " It is named in a line that is "
                                "not a traceback (a title, a sentence, a test summary, a notebook header, markdown): share the full "
                                "traceback for a surer diagnosis.")]
        if ctx.open_tracebacks:
            from ...classify.hints import phase_of  # here: most runs end in no traceback
            from .advice import cut_message
            # the traceback the log ends in: the one whose last frame comes last (a first frame that lost its rank
            # prefix starts a traceback of its own, before the real one)
            line, frames = max(ctx.open_tracebacks, key=lambda t: (t[0].seq, len(t[1])))
            if any(f.severity >= Severity.warning and any(e.path == line.where.path and e.line == line.where.line
                                                          for e in f.evidence) for f in ctx.findings):
                return []  # a rule before this one read the stack (its frames prove what the cut line was)
            last = frames[-1]
            from .cut_stage_text import error_record_before, failed_warning_before
            from .cut_stage_text import read as read_stage
            staged = read_stage(ctx, line, frames)
            msg = (f"{staged.title}: the log" if staged else "The log") + (
                " ends inside a Python traceback, before its exception line (the paste or the file was cut). The last "
                f"frame is {describe_frame(last)}")
            msg += f", at `{last.code.strip()[:160]}`." if last.code else "."
            if staged:
                msg += " " + staged.why
            cut_why, cut_fix = cut_message(frames)
            if cut_why:
                msg += " " + cut_why
            key = _KEY.search(last.code or "")
            if key:
                msg += (f" The statement reads the key '{key.group(1)}': a KeyError for it is the likely exception, "
                        f"the dict has no '{key.group(1)}' entry on this run")
                msg += (" (a text-only run never fills an image/video/audio entry)." if key.group(1) in _MEDIA
                        else ".")
            phase = phase_of(frames)
            if phase:
                msg += f" Its traceback places the failure in {phase}."
            if phase in ("logging the step's metrics", "evaluation", "checkpoint save"):
                msg += (f" The training computation itself got through: the failure is in {phase}, so the options "
                        f"that turn {phase} off or change it avoid it while the cause is fixed.")
            user = user_frames(frames)
            fix = staged.fix if staged else [
                "Find the line after this traceback in the full log (the `SomeError: message` line) and run "
                "grpo-doctor on the whole file."]
            head = notebook_header(ctx.tails, line)
            ray = ray_header(ctx.tails, line) if head is None else None
            above = message_above(ctx.tails, head[0], head[1]) if head is not None else None
            if above is not None:
                msg += (f" The notebook header names the exception: {head[1]}; its message, printed last by IPython, "
                        f"is cut from the paste, and the words above it give it: `{head[1]}: {above[0]}` (line "
                        f"{above[1].where.line}: `{plain(above[1].text)[:160]}`).")
            elif head is not None:
                msg += (f" The notebook header names the exception: {head[1]} (its message, printed last by "
                        f"IPython, is not in the paste).")
            elif ray is not None:
                msg += (f" Ray's RayTaskError line above these frames names the exception: {ray[1]}, raised in the "
                        f"remote task whose frames these are (its message, printed after them, is not in the paste).")
            fix[:0] = cut_fix + ([] if staged else _phase_fix(phase, ctx.framework()[0]))  # a stage has its own
            if user:
                fix.append(f"The last frame outside the installed packages (the script's or the project's own code) is {describe_frame(user[-1])}.")
            ev = [Evidence(line.where.path, line.where.line, line.raw)]
            # the last frame's source line under its header: the statement that was running when the paste stops
            code = next(iter(ctx.lines_after(line.where.path, line.seq, 1)), None)
            if code is not None and code.text.strip() and not code.text.lstrip().startswith(("File ", "Traceback")):
                ev.append(Evidence(code.where.path, code.where.line, code.raw))
            record = error_record_before(ctx, line) if head is None and ray is None else None
            warned = failed_warning_before(ctx, line) if head is None and ray is None and record is None else None
            if warned is not None:
                msg += (f" The warning printed just before the traceback says what failed first: "
                        f"`{plain(warned.text).strip()[:200]}`; code that logs such a warning goes on without what it "
                        f"could not load, and the stack is where the run then failed on its absence.")
                fix.insert(0, "Start from the warning before the traceback: make what it could not load loadable "
                              "(the name or path it gives, from the directory the run starts in), then rerun.")
                ev.insert(0, Evidence(warned.where.path, warned.where.line, warned.raw))
            if record is not None:
                msg += (f" The log's error record printed just before the traceback, most likely what the code that "
                        f"caught this exception logged: `{plain(record.text).strip()[:240]}`.")
                fix.insert(0, "Start from the error record before the traceback: it is the failure the cut stack "
                              "ends in (its own exception line is not in the paste).")
                ev.insert(0, Evidence(record.where.path, record.where.line, record.raw))
            if head is not None:
                ev.insert(0, Evidence(head[0].where.path, head[0].where.line, head[0].raw))
                if above is not None:
                    ev.insert(1, Evidence(above[1].where.path, above[1].where.line, above[1].raw))
            elif ray is not None:
                ev.insert(0, Evidence(ray[0].where.path, ray[0].where.line, ray[0].raw))
            if staged and staged.bar is not None:
                ev.append(Evidence(staged.bar.where.path, staged.bar.where.line, staged.bar.raw))
            category = staged.category if staged else None
            # a header that names the cut stack's exception (Ray's `RayTaskError(ImportError)`, a notebook's): its type
            # alone places some failures
            typed = CATEGORY_OF_TYPE.get(ray[1] if ray is not None else head[1] if head is not None else "")
            if typed and not category:
                category = typed
                msg += (" An import that fails inside a framework's own code most often means an installed package's "
                        "release lacks a name the framework imports (vLLM, transformers, flash-attn or the framework "
                        "itself newer or older than the set it was tested with).")
                fix[:0] = ["Paste the ImportError's own line (it names the module and the missing name); meanwhile "
                           "compare the installed releases (`pip list | grep -iE 'vllm|torch|transformers|flash'`) with "
                           "the ones the framework release pins (its requirements or setup.py) and install that set."]
            named = None if head is not None or ray is not None else _exception_above(ctx, line, frames)
            if named is not None and category and named[1] is not None and named[1].entry.category != category:
                named = None  # the stage read from the frames and the title's exception disagree: the frames decide
            if named is not None and named[1] is not None:  # a title above the stack names the exception cut below
                exc_above, verdict = named
                category = verdict.entry.category
                what = verdict.entry.title or " ".join(verdict.entry.doc.split())[:200]
                msg += (f" The line above the stack names an exception, `{exc_above.type}: {exc_above.message[:160]}`: "
                        f"{what}. The stack below it stops before its own exception line, so that they belong "
                        f"together is the reading, not shown.")
                ev.insert(0, Evidence(exc_above.where.path, exc_above.where.line, exc_above.raw))
                fix[:0] = [x for x in verdict.entry.fix[:1]]
            elif named is not None:  # named, and no entry places it: what its raise site says, if the index knows it
                exc_above = named[0]
                raised, told = where_raised(exc_above, ctx, False, owner=True)
                msg += (f" The line above the stack names an exception, `{exc_above.type}: "
                        f"{exc_above.message[:160]}`, most likely the one this stack ends in (the stack stops before "
                        f"its own exception line, so that they belong together is the reading, not shown).{raised}")
                ev.insert(0, Evidence(exc_above.where.path, exc_above.where.line, exc_above.raw))
                if told:
                    fix.insert(0, told)
            said = None if category or head is not None or ray is not None or named is not None \
                else _words_above(ctx, line)
            if said is not None:  # an issue's title or the author's sentence above the stack names the failure
                category = of_vllm_run(said[0], ctx)
                msg += (f" The words above the stack say {said[1]} (`{plain(said[2].text)[:160]}`): that is the "
                        f"reading, from the description, until the exception line confirms it.")
                ev.insert(0, Evidence(said[2].where.path, said[2].where.line, said[2].raw))
                if category == "cuda-oom":
                    fix.extend(_memory_levers(ctx))
            title = staged.title if staged else "A traceback cut before its exception line"
            if named is not None and (named[1] is not None or not staged):  # a stage read from the frames says more
                above_is = "The title" if named[0].where.line == 1 else "A line above the traceback"
                title = f"{above_is} names {named[0].short_type}; the traceback below it is cut before its exception line"
            if typed and category == typed and staged is None:
                title = (f"{'Ray' if ray is not None else 'The notebook'} names the exception {(ray or head)[1]}; "
                         f"the traceback is cut before its message")
            if said is not None:
                title = f"The description says {said[1]}; the traceback below it is cut before its exception"
            f = self.make(message=msg, fix=fix, evidence=ev, seq=line.seq, severity=Severity.warning, title=title,
                          alternatives=staged.alternatives if staged else ())
            return [replace(f, category=category) if category else f]
        return []

    def _for_exception(self, exc: ExceptionInfo, ctx: RunState) -> Finding:
        # imported at the first exception: a run without one never needs them, and watch pays every import
        from ...classify.failing_line import explain as explain_line
        from ...classify.failing_line import unset_option
        from ...classify.hints import message_hints, phase_of, sample_shape
        cut = read_cut(exc)
        if cut is not None:
            return self._for_cut(exc, cut)
        same = [e for e in ctx.exceptions if e.type == exc.type and e.message == exc.message]
        ranks = tuple(sorted({e.rank for e in same if e.rank is not None}))
        where = exc.raised_at
        text = f"{exc.type}: {exc.message}" if exc.message else exc.type
        msg = f"The run failed with `{text}`"
        stackless = (" (the traceback frames in the log do not lead to this line)."
                     if log_shows_frames(ctx) else " (the log shows no traceback for it).")
        below = None if where else next((line for line, _ in ctx.open_tracebacks or ()
                                         if line.where.path == exc.where.path and line.seq > exc.seq), None)
        if where:
            msg += f", raised at {describe_frame(where)}."
        elif below is not None:
            # the error pasted above its stack (an issue's title): the stack below is cut before its own exception
            # line, so it shows where the run was, not where this was raised
            msg += (f" (its line has no stack of its own; the stack that follows (last frame at line {below.where.line}) "
                    f"stops before any exception line).")
        else:
            msg += stackless
        lib = deepest_library(exc.frames)
        if lib is not None:
            msg += f" The innermost library frame is in {component(lib.path)} ({describe_frame(lib)})."
        read = explain_line(exc)
        raised, told = where_raised(exc, ctx, bool(read), owner=True)
        msg += raised
        fix = [told] if told else []
        unset = unset_option(exc)
        if unset:
            fix.append(f"Give the option `{unset}` a value (`--{unset} ...` on the command line, or in the config file "
                       f"the script reads), then run the same command again.")
        if read:
            msg += " " + " ".join(read)
        wrapped = wrapped_attribute(exc.message) if exc.short_type == "AttributeError" else None
        if wrapped is not None:
            msg += " " + wrapped[0]
            fix.insert(0, wrapped[1])
        user = user_frames(exc.frames)
        if user and user[-1] is not where:
            fix.append(f"The last frame outside the installed packages (the script's or the project's own code) is {describe_frame(user[-1])}: start there.")
        elif where is not None and not is_library(where.path):
            fix.append(f"It was raised outside the installed packages, in the script's or the project's own code ({describe_frame(where)}): start there.")
        if ctx.other_ranks_than(ranks):  # said only where other ranks' lines are shown
            fix.append(f"Raised on rank(s) {', '.join(map(str, ranks))}; other ranks' errors after it are consequences.")
        fw = ctx.framework()[0]
        code = exc.frames[-1].code if exc.frames else ""
        if _SIZE0.search(exc.message) and ".nonzero()" in code:
            # the failing line indexes what nonzero() found: it found nothing
            msg += (f" The failing line `{code.strip()[:160]}` indexes the positions nonzero() found, and it found "
                    f"none" + (": the row compared with pad_token_id is all padding, an empty response (the model "
                               "generated only padding or stopped at once)." if "pad_token_id" in code else "."))
            fix.insert(0, "Guard the empty case before indexing (a row with no such position), and look at the "
                          "generation settings that give empty responses (max_new_tokens, an EOS or pad token "
                          "generated first, a pad token equal to EOS).")
        elif _SIZE0.search(exc.message):
            # with no sign of DeepSpeed in the log the ZeRO-3 reading is one possibility, said as one
            ds, told = ctx.run.args.get("deepspeed"), _zero3_told(exc, ctx)
            stage = zero_stage(ds)[0]
            # a config file's name need not say its stage: an unread stage is not "not ZeRO-3"
            lead = (" A dimension of size 0 is what" if told else
                    f" The run's DeepSpeed config ({ds}) is ZeRO-{stage}, not ZeRO-3; under ZeRO-3 a dimension of "
                    f"size 0 is what" if ds and stage is not None else
                    f" The run uses DeepSpeed ({ds}; its stage is not in the log); if it is ZeRO-3, a dimension of "
                    f"size 0 is what" if ds else
                    " The log shows no DeepSpeed; if the run uses ZeRO-3, a dimension of size 0 is what")
            msg += (lead + " a parameter partitioned by DeepSpeed ZeRO-3 looks like outside its gather (deepspeed/"
                    "runtime/zero/partition_parameters.py keeps an empty tensor on each rank): a weight read by code "
                    "that ZeRO-3's hooks do not cover (a model class the trainer does not recognise, a custom "
                    "forward); otherwise an empty tensor from the data.")
            if told or not ds or stage is None:  # a run on ZeRO-2 or below has nothing to rerun without
                fix.insert(0, "Rerun without ZeRO-3 (ZeRO-2) to confirm; with a fine-tuned checkpoint, make sure the "
                              "trainer recognises its architecture (model_type in config.json; ms-swift "
                              "--model_type/--template).")
        phase = phase_of(exc.frames)
        if phase:
            msg += f" Its traceback places the failure in {phase}."
        shape = sample_shape(exc.message)
        if shape:
            msg += " " + shape
            if lib is not None and lib.path.replace(chr(92), "/").endswith("transformers/trainer.py"):
                msg += (" The frame is transformers' base Trainer, which received the GRPO trainer's batch: a "
                        "base-class path this GRPO trainer version does not override (evaluation's prediction_step "
                        "is the usual one).")
                fix.insert(0, "Turn evaluation off to confirm (eval_strategy=\"no\"; ms-swift --eval_strategy no), "
                              "then upgrade the trainer to a release whose GRPO trainer implements that path.")
        fix[:0] = [f"The message itself says how: \"{h}\"" for h in message_hints(exc.message, exc_type=exc.type)]
        after = ctx.lines_after(exc.where.path, exc.seq, 12)
        bar = _bar_phase(exc, ctx)
        if bar and not phase:
            phase = bar
            msg += f" The last progress bar before it is an {bar} bar." if bar[0] in "aeiou" else \
                f" The last progress bar before it is a {bar} bar."
        reading = _what_it_shows(exc, read, phase, after)
        if reading:
            if reading[0]:
                msg = msg.replace(stackless, ".") + " " + reading[0]
            fix[:0] = reading[1:]
        fix[len(fix):] = _phase_fix(phase, fw)
        # the caller's own frame (trainer.train()) and the ranks say nothing of the cause: not a reading
        if not [x for x in fix if not x.startswith(("Raised on rank(s)", "The last frame outside the installed packages"))]:
            # the last resort: nothing in the log says more than the message itself
            who = issues_of(fw)
            raiser = component(lib.path) if lib is not None else ""
            # the package that raised it, when it is neither the framework nor torch under everything: its tracker
            # holds the reports of its own message
            if raiser and raiser not in ("torch", "the script's code") and raiser.lower() != who.lower():
                who = f"{raiser} issues (the package that raised it)"
            else:
                who += " issues"
            if exc.message:
                fix.append(f"Search the {who} for the message: \"{exc.message[:120]}\".")
            elif lib is not None:  # a type alone finds every report of it: the function narrows it to this check
                fix.append(f"Search the {who} for `{exc.type}` with the function that raised it ({lib.func}).")
            else:
                fix.append(f"Read the lines just above `{exc.type}` in the log: an exception printed without a message "
                           f"is usually explained by the statement that raised it (an assert or a check) or by an error printed "
                           f"before it.")
        story = _version_story(ctx) if not exc.frames else None
        if story is not None:  # no stack to place it; the author's words say a release change broke it
            msg += (f" The paste's words say {story[1]} (`{plain(story[2].text)[:160]}`): with no stack to place the "
                    f"exception, that is the reading.")
            fix.insert(0, "Install the releases the paste names as working together (or the newest of the package and "
                          "the versions it pins for its dependencies), then rerun the same command.")
        # the vLLM engine died after it (GD220's engine-death lines follow the exception): the engine's failure
        died = next((f for f in ctx.findings if f.rule_id == "GD220" and f.first_seq > exc.seq), None) \
            if story is None else None
        if died is not None:
            msg += (f" The vLLM engine died after it (line {died.evidence[0].line if died.evidence else '?'}): the "
                    f"exception is most likely the engine's own failure, and the engine's death its consequence.")
        found = self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                          count=len(same), ranks=ranks, seq=exc.seq,
                          title=f"Failed with {exc.short_type}" if story is None else
                          f"{exc.short_type} after a release change the paste describes")
        if died is not None:
            return replace(found, category=died.category)
        if unset and story is None:  # the code's own reading of an option nobody gave: an argument error
            return replace(found, category="argument-error-other")
        return replace(found, category=story[0]) if story is not None else found

    def _for_cut(self, exc: ExceptionInfo, cut: CutReading) -> Finding:
        """A message cut by the paste, read by the one library template its start belongs to."""
        from ...registry import find_rule
        meta = find_rule(cut.rule_id)
        shown = exc.message[-80:]
        msg = (f"The exception message is cut in the paste (it ends `...{shown}`). Its start is the wording of "
               f"{cut.where} (`{cut.template[:200]}`), which rule {cut.rule_id} reads: {cut.title}. The values after "
               f"the cut are not in the paste, so no fix is computed from them.")
        fix = [line for line in (meta.fix if meta else ()) if "{" not in line]
        fix.append("Paste the whole exception line (and the launch command) for the fix computed from the run's "
                   "numbers.")
        f = self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)], seq=exc.seq,
                      title=f"{cut.title} (read from a cut message)", action=meta.action if meta else None)
        return replace(f, category=cut.category, confidence="likely", verify=meta.verify if meta else f.verify)


def _version_story(ctx: RunState) -> tuple[str, str, LogLine] | None:
    """(category, what the words say, the line) when a paste's words say a library release broke the run ("X 1.2
    works, 1.3 fails", "sensitive to the versions of trl"); None otherwise."""
    from ..hang.prose import symptom_of_run
    got = symptom_of_run(ctx)
    return got[0] if got is not None and got[0][0] == "import-or-dependency-error" else None


def _lines_above_stack(ctx: RunState, line: LogLine) -> list[LogLine]:
    """The kept lines before the cut stack that ends at ``line``: above its Traceback header, or, for a stack pasted
    from its first frame without the header, above that frame."""
    tail = tail_before(ctx.tails, line)
    header = next((i for i, t in enumerate(reversed(tail)) if "Traceback" in t.text), None)
    if header is not None:
        return tail[:len(tail) - 1 - header]
    return tail[:next((i for i, t in enumerate(tail) if plain(t.text).startswith('File "')), 0)]


def _exception_above(ctx: RunState, line: LogLine, frames: list | tuple = ()):
    """(the exception, its structural verdict) when a line above a cut stack (an issue's title, a sentence) names an
    exception with its message that the structure table places without frames; (the first such exception, None)
    when the table places none; None when no line above names one."""
    from ...classify.structure import classify
    from .named import bare_exception, exception_named_in
    facts = None
    first = None
    for ln in _lines_above_stack(ctx, line)[:12]:
        exc = exception_named_in(ln)
        if exc is None or not exc.message:  # a type alone (a notebook header) places nothing: CPython's wording may
            exc = bare_exception(ln)
        if exc is None:
            exc = _message_of_last_call(ln, frames)
        if exc is None:
            continue
        first = first or exc
        facts = facts if facts is not None else run_facts_of(ctx)
        verdict = classify(exc, (), facts=facts)
        if verdict is not None:
            return exc, verdict
    return (first, None) if first is not None else None


def _message_of_last_call(ln: LogLine, frames: list | tuple) -> ExceptionInfo | None:
    """A message printed without its type above a cut stack ("CUDA_HOME does not exist, unable to compile CUDA op(s)")
    that the raise-site index places in the very function the stack's last frames call (DeepSpeed's
    installed_cuda_version, called by `sys_cuda_major, _ = installed_cuda_version()`): the stack's own exception,
    typed as the index says."""
    text = plain(ln.text).strip()
    if not frames or not 20 <= len(text) <= 300:
        return None
    from ...classify.raise_sites import best_sites
    try:
        sites = best_sites(text, 0.8)
    except (OSError, ValueError):
        return None
    if not sites:
        return None
    site = sites[0][1]
    func = site.where.rsplit(".", 1)[-1]
    if not any(fr.func == func or f"{func}(" in (fr.code or "") for fr in list(frames)[-3:]):
        return None
    return ExceptionInfo(site.kind, text, (), ln.where, ln.rank, ln.seq, ln.raw)


def _words_above(ctx: RunState, line: LogLine) -> tuple[str, str, LogLine] | None:
    """(category, what the words say, the line) when a person's sentence before a cut stack (an issue's title, "I
    get an out of memory error:") names a symptom other than a stop; None otherwise."""
    from ..hang.prose import symptom_in
    got = symptom_in([_lines_above_stack(ctx, line)])
    return got[0] if got is not None and not got[0][0].startswith("hang") else None


def _memory_levers(ctx: RunState) -> list[str]:
    """The training levers the run's own settings leave (doctor/checks/memory/_ladders.py), for an out-of-memory
    read from the words above a cut stack: the first three, computed from the command the paste shows."""
    if not ctx.run.args:
        return []
    from ..memory._facts import facts_of
    from ..memory._ladders import training_ladder
    facts = facts_of(ctx.run)
    facts.trainer = facts.trainer or ctx.trainer_kind().kind
    levers = training_ladder(facts, {})[:3]
    return [f"Meanwhile, if the exception is the out-of-memory the words say: {levers[0]}", *levers[1:]] if levers else []

