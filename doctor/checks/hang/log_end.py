"""GD323, GD324, GD326, GD328, GD329: the answer when no other rule has one and the log's end still shows a failure: a
bar short of its total, a wait loop, a stack dump, a phase marker last, NCCL debug lines last, an error-level line with
no traceback; or, in a pasted excerpt with none of these, the last warning its author saw, else its last line that
names a failure in words. These rules run last, after the fallback rules (doctor/engine/session.py, ``last_resort``),
so a failure log is never left with "No problem found."; what each ending advises is in log_end_advice.py."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from ... import lazyre
from ...classify.structure import CONSEQUENCES
from ...confidence import METRIC_CATEGORIES
from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule, evidence_of
from ...signals import LogLine
from ...sources.prose_text import form_or_reply
from ...values import as_float
from ._progress import PROGRESS_BAR, SIGNAL_SENDERS, death_signal
from .endings import TB_HEAD, Ending, ending_of, plain
from .log_end_advice import PASTE_NEXT, fix_for, paste_key
from .prose import SETTING_LINE, cut_before_error, error_said, program_lines, runs_on, slow_said

# an error-level line a library or launcher printed without a Python traceback: logging's ERROR/CRITICAL level
# names, glog's "E1128 12:00:00" lines (torch elastic, NCCL), "error:" leaders, a kernel kill, a non-zero exit
# (a program's own report of an exception it caught: "Error computing per_token_logps: pop from an empty deque",
# "Error while loading x: ...", "Error in worker: ...")
_ERROR_LINE = lazyre.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b|^E\d{4} \d\d:\d\d|"
                         r"^(?:error|Error|ERROR)(?: (?:in|while|during|when|on|\w+ing)\b[^:]{0,80})?\s*:|\bKilled\b|"
                         r"(?:exit(?:ed)?(?: with)? (?:code|status)|exitcode|returned non-zero exit status)[:=\s]+-?[1-9]")
# a warning-level line: logging's WARNING/WARN level names, glog's "W1128 12:00:00" (torch, NCCL: "[W1128 ..."),
# Python's warnings ("UserWarning: ", "RuntimeWarning: ") and "NCCL WARN"; deprecation notices say what a later
# release will change, not what went wrong in this run
_WARNING_LINE = lazyre.compile(r"\b(?:WARNING|WARN)\b|^\[?W\d{4} \d\d:\d\d|\b(?:User|Runtime|Resource)Warning\b\s*:")
# failure words anywhere in a line (no level, no "Type: message" at its start): an exception's class named inside a
# sentence ("User exception type <class 'x.ValidationError'>"), "failed", "cannot", "not found"...
_FAILURE_WORDS = lazyre.compile(r"\b\w*(?:Error|Exception)\b|\b(?:error|errors|failed|failure|fatal|killed|aborted|refused|"
                            r"cannot|can't|unable to|not found|no such|denied|invalid|crash(?:ed)?|segfault)\b|"
                            # no word edges in Chinese: "存在nccl错误", "出现了如下报错"
                            r"报错|错误|出错|失败|异常|崩溃|挂掉", re.I)
_CUT_FRAME = lazyre.compile(r'^\s*(?:\[rank\d+\]:)?\s*File(?: "[^"]*)?$')
# (a shell assignment names a setting, not a failure: "export HYDRA_FULL_ERROR=1", "NCCL_ASYNC_ERROR_HANDLING=1")
_NOT_A_FAILURE = lazyre.compile(r"(?i)^\s*- [\w .()/-]{2,40}:\s|^\W*not an error\b|"
                                r"^\s*(?:export\s+)?[a-z_][a-z0-9_]*=\S*\s*(?:#.*)?$|"
                                r"\b(?:can|could|would) you (?:please )?(?:paste|share|post|provide|send|add)\b|"
                                r"\bplease (?:paste|share|post|provide)\b|(?:能否|可以|麻烦|请)(?:再)?提供")
_INFO_LEVEL = lazyre.compile(r"\b(?:INFO|DEBUG)\b|^\[?I\d{4} \d\d:\d\d")
_NOT_WARNING = lazyre.compile(r"\b(?:Future|Deprecation|PendingDeprecation)Warning\b|\bdeprecated\b", re.I)


def _steps(pool: dict[str, Any], ctx: RunState) -> int:
    p = pool.get("hang-progress")
    return max(getattr(p, "max_step", 0) or 0, ctx.metrics_steps)


def _error_after(ctx: RunState, seq: int) -> bool:
    """An exception, or a traceback cut before its exception line, comes after this line."""
    return any(x.seq > seq for x in ctx.exceptions) or any(line.seq > seq for line, _ in ctx.open_tracebacks or ())


def _starts_in_training(ctx: RunState) -> bool:
    """The log (its whole text kept) opens on a training bar past step 0 or a metrics row: an excerpt copied from the
    middle of a run, whatever command file came with it."""
    tail = ctx.last_tail()
    if not tail or tail[0].where.line > 3:
        return False
    first = next((ln for ln in tail if plain(ln.text)), None)
    if first is None:
        return False
    text = plain(first.text)
    m = PROGRESS_BAR.match(text)
    return bool(m and int(m.group("k")) > 0) or text.startswith(("{'loss'", '{"loss"'))


class LogEnd(Rule):
    """One class for GD323, GD324 and GD326: each catalog entry keeps the endings of its own category (options.want)."""

    kinds: frozenset[type] = frozenset()

    def __init__(self, meta: Any) -> None:
        super().__init__(meta)
        self.want = str(meta.options.get("want", meta.category))
        self.pool: dict[str, Any] = {}

    def share(self, pool: dict[str, Any]) -> None:
        self.pool = pool

    def finish(self, ctx: RunState) -> list[Finding]:
        errors = [f for f in ctx.findings if f.severity == Severity.error and f.role.value != "consequence"]
        # errors read from the metric rows say how training went, not how the log ended: an error line after the
        # rows they quote is still the end to report
        rows_only = bool(errors) and self.want == "other" and all(f.category in METRIC_CATEGORIES for f in errors)
        if ctx.ended or (errors and not rows_only) or \
                any(f.category in ("hang-at-start", "hang-mid-training") for f in ctx.findings):
            return []  # an error explains the log, or the trainer's own hang rules (GD320-GD322) placed the stop
        # another warning explains the log: only a training bar stopped short of its total still speaks (the run
        # did not finish, whatever else was seen on the way)
        warned = any(f.severity >= Severity.warning for f in ctx.findings)
        # what a few metric rows say does not explain how the log ends (a crash after them)
        warned_beyond_rows = any(f.severity >= Severity.warning and f.category not in METRIC_CATEGORIES
                                 for f in ctx.findings)
        steps = _steps(self.pool, ctx)
        # the log that ends last decides; the others are side logs
        lines = program_lines(ctx.last_tail())
        if not lines:
            return []
        e = None
        if self.want in ("hang-at-start", "hang-mid-training"):
            e = ending_of(lines, steps)
            if e is None or (self.want == "hang-at-start") != e.before_training:
                return []
            if not ctx.whole_log() and runs_on(ctx.last_tail()) is not None:
                return []  # the paste's author says the run goes on: where the excerpt stops is where they cut it
            if cut_before_error(ctx):
                return []  # ... or that an error follows: the excerpt is cut before it
            if not e.before_training and slow_said(ctx):
                return []  # ... or that it runs slowly: a run going on, not one that stopped
            # a pasted excerpt ends where its author stopped copying: beside another warning, its last bar says nothing
            if warned and not (e.kind == "bar" and e.phase == "training" and ctx.whole_log()
                               and not _starts_in_training(ctx)):
                return []
            # (over every line: a program's own "Error computing x: ..." reads like a sentence to the prose filter)
            if _error_after(ctx, e.line.seq) or any(ln.seq > e.line.seq and (_ERROR_LINE.search(plain(ln.text))
                                                                              or TB_HEAD in ln.text)
                                                     for ln in ctx.last_tail()):
                return []  # the log goes on to an exception, an error line or a traceback's (cut) header: a crash
        elif self.want == "other" and (not warned_beyond_rows or rows_only) and not ctx.open_tracebacks and \
                all(x.short_type in CONSEQUENCES for x in ctx.exceptions):
            # exceptions that only follow a stop (torch elastic's SignalException, ChildFailedError): the signal line
            # is what the log shows; every line for the error line ("Error computing x: ..." reads like a sentence)
            e = self._signal_line(lines) or (None if ctx.exceptions else self._crash_header(lines, steps) or
                                             self._error_line(lines) or self._error_line(ctx.last_tail()))
            if e is not None and rows_only and e.line.seq <= max(f.first_seq for f in errors):
                e = None
        elif self.want in ("warnings", "words") and not warned and not ctx.exceptions and not ctx.open_tracebacks \
                and not ((ctx.printed_launch() and error_said(ctx.last_tail()) is None)
                         or self._signal_line(lines)
                         or self._error_line(lines)):
            # an excerpt with no signal or error line: its last warning (GD329), else words that name a failure (GD328);
            # a launch command given beside it (command.txt) does not make it a whole log: launcher lines would
            warning = self._warning_line(lines)
            # the words may be a sentence of the paste itself ("但是出现了如下报错：", a title naming the error)
            e = warning if self.want == "warnings" else None if warning else (
                self._failure_words(ctx.last_tail()) or self._trouble_said(ctx.last_tail()))
        if e is None:
            return []
        found = self._finding(e, ctx, lines, steps)
        if e.kind == "crash-header":
            # the process died after the rows: that is what the log shows last, above what a few rows said
            rows = [f.priority for f in ctx.findings if f.category in METRIC_CATEGORIES]
            if rows:
                found = dataclasses.replace(found, priority=max(found.priority, max(rows) + 1))
            if e.phase == "dataset preprocessing":
                # what runs there reads the rows and applies the template (the cut-stage table's dataset-prep stage
                # decides the same); a worker the host killed is the other reading
                found = dataclasses.replace(found, category="dataset-or-template-error",
                                            alternatives=("host-oom-killed",))
        return [found]

    @staticmethod
    def _signal_line(lines: list[LogLine]) -> Ending | None:
        """torch elastic's agent shutting its workers down on a signal it received: the run was stopped from
        outside (a kill, a scheduler's time limit or preemption, a Ctrl-C), not by an error of its own."""
        for ln in reversed(lines):
            sig = death_signal(ln.text)
            if sig:
                return Ending("signal", "a stop by a signal from outside", ln, False, [f"the launcher received {sig}"],
                              detail=sig)
        return None

    @staticmethod
    def _crash_header(lines: list[LogLine], steps: int) -> Ending | None:
        """A log whose last line is a traceback's header (cut before its first frame): the process crashed right
        after what the lines before it show (a training bar, a phase marker); the traceback is not in the log."""
        shown = [ln for ln in lines if ln.text.strip()]
        # the header, or the header and its first frame cut inside the path (`File "/home/ubuntu/nai-llm`)
        if len(shown) >= 2 and TB_HEAD in shown[-2].text and _CUT_FRAME.search(shown[-1].text):
            shown = shown[:-1]
        if not shown or TB_HEAD not in shown[-1].text:
            return None
        before = ending_of(shown[:-1], steps)
        if before is None:
            return Ending("crash-header", "the run", shown[-1], steps == 0)
        return Ending("crash-header", before.phase, shown[-1], before.before_training, list(before.numbers),
                      detail=plain(before.line.text)[:160])

    @staticmethod
    def _error_line(lines: list[LogLine]) -> Ending | None:
        for ln in lines:
            text = plain(ln.text)
            if _ERROR_LINE.search(text) and "Warning" not in text and "warnings.warn" not in text:
                after = len([x for x in lines if x.seq > ln.seq])
                return Ending("error", "an error-level line with no Python traceback", ln, False,
                              [f"{after} line(s) after it in the log's end"])
        return None

    @staticmethod
    def _warning_line(lines: list[LogLine]) -> Ending | None:
        """The last warning-level line of a pasted excerpt that shows nothing else: what its author took for the
        failure."""
        for ln in reversed(lines):
            text = plain(ln.raw)  # the level as printed: the reader takes vLLM's logger prefix off the text
            if _WARNING_LINE.search(text) and not _NOT_WARNING.search(text):
                return Ending("warning", "a warning-level line", ln, False)
        return None

    @staticmethod
    def _failure_words(lines: list[LogLine]) -> Ending | None:
        """The last line of an excerpt whose words name a failure (an exception's class inside a sentence, "failed",
        "cannot"...) when nothing else in it is read: what its author pasted as the failure."""
        for ln in reversed(lines):
            text = plain(ln.text)
            # a line logged at INFO or DEBUG level reports what its program handled, not a failure; an environment
            # report's entry ("- Accelerate config: not found"), a request for the error ("can you paste the actual
            # error", "能否提供报错堆栈") and a line that says it is no error name none either
            if not text.startswith("{") and _FAILURE_WORDS.search(text) and not _INFO_LEVEL.search(plain(ln.raw)) \
                    and not _NOT_A_FAILURE.search(text) and not form_or_reply(text) and not SETTING_LINE.match(text):
                return Ending("words", "a line that names a failure", ln, False)
        return None

    @staticmethod
    def _trouble_said(lines: list[LogLine]) -> Ending | None:
        """A sentence of the paste that says the run is in trouble in milder words ("Having issues with vLLM",
        "ppo训练出现问题", "[Bug]") when no line names a failure outright."""
        said = error_said(lines)
        return Ending("words", "a line that names a failure", said, False) if said is not None else None

    def _finding(self, e: Ending, ctx: RunState, lines: list[LogLine], steps: int) -> Finding:
        shown = e.line.raw.strip() if e.kind in ("warning", "words") else plain(e.line.text)
        shown = shown if len(shown) <= 200 else shown[:199] + "…"
        if e.kind == "signal":
            msg = (f"torch's launcher received {e.detail} and shut its workers down: the run was stopped from outside "
                   f"({SIGNAL_SENDERS.get(e.detail, 'a kill, a job scheduler or a container runtime')}), not by an "
                   f"error of its own that this log shows. The line: `{shown}`.")
        elif e.kind == "warning":
            msg = (f"Nothing in this excerpt was read as an error, an exception, a stop or a failing metric; the last "
                   f"warning it shows is `{shown}`. A warning does not stop a run by itself: it explains the failure "
                   f"only if what went wrong follows from it.")
        elif e.kind == "words":
            msg = (f"Nothing in this excerpt was read as an exception, an error-level line, a stop or a failing metric, "
                   f"but its line `{shown}` says in words that the run failed: the excerpt "
                   f"is not a healthy run, and the failure itself was not read from it.")
        elif e.kind == "crash-header":
            msg = (f"The log ends with a Python traceback's header and nothing after it (`{shown}`): the process "
                   f"crashed in {e.phase}" + (f", right after `{e.detail}`" if e.detail else "") +
                   "; the traceback itself, with the exception that says why, is not in the log.")
        elif e.kind == "error":
            msg = (f"The log holds no Python traceback, and its first error-level line in the end of the log is not a "
                   f"known error message: `{shown}`.")
        else:
            what = {"bar": f"its progress bar short of the total ({e.detail or 'no description'})",
                    "loop": "the same line printed again and again" + (f" ({e.detail})" if e.detail else ""),
                    "faulthandler": "a faulthandler stack dump with no crash header (printed by a timeout or on request, "
                                    "not by a crash)",
                    "phase": f"the marker of {e.phase} as its last line",
                    "nccl": "NCCL debug lines and nothing after them",
                    "native": f"torch's C++ frames (`{e.detail}`), the error above them not in the excerpt",
                    "heartbeat": f"a server's idle polling; the run's last own line is `{e.detail}`"}[e.kind]
            where = f"in {e.phase}" if e.kind != "faulthandler" else "at a stack dump"
            msg = f"The log stops {where} and ends with {what}, without an exception or an end-of-run line."
            if e.kind == "faulthandler" and e.detail:
                msg += f" The dumped stack shows the process {e.detail}."
        facts = list(e.numbers)
        if e.kind == "bar" and e.phase == "training":
            pass  # the bar's own count is the step reached
        elif steps:
            facts.insert(0, f"{steps} training step(s) logged before it")
        elif e.kind not in ("error", "warning", "words"):
            facts.insert(0, "no training step logged")
        if facts:
            msg += " Read from the log: " + "; ".join(facts) + "."
        boundary = self._epoch_boundary(e)
        if boundary is not None:
            msg += " " + boundary[0]
        if e.kind in ("warning", "words"):
            msg += f" Paste next: {PASTE_NEXT['warning']}."
        elif not ctx.whole_log():
            msg += (" No launch command or argument dump was read from this log, so it may be an excerpt: it shows where the run "
                    f"stopped, not why. Paste next: {PASTE_NEXT[paste_key(e)]}.")
        if e.kind == "signal":
            fix = ["If nobody stopped it by hand: ask the job scheduler why it ended the job (Slurm: `sacct -j <job> -o "
                   "State,ExitCode,Elapsed,Timelimit`; Kubernetes: `kubectl describe pod`): a time limit, a preemption "
                   "or a memory limit sends SIGTERM before SIGKILL.",
                   "Resume from the last checkpoint (a save interval shorter than the job's time limit keeps the loss "
                   "small)."]
        elif e.kind == "error":
            fix = [f"Share {PASTE_NEXT['error']}: the cause is usually printed just before this line."]
        elif e.kind == "crash-header":
            fix = [f"Share {PASTE_NEXT['crash-header']}."]
        elif e.kind in ("warning", "words"):
            fix = list(self.meta.fix)
        else:
            fix = fix_for(e, ctx, lines)
        if boundary is not None:
            fix.insert(0, boundary[1])
        return self.make(message=msg, fix=fix, evidence=[evidence_of(e.line)], seq=e.line.seq,
                         title=self._title(e))

    def _epoch_boundary(self, e: Ending) -> tuple[str, str] | None:
        """(why, fix) when a training bar stopped exactly at the end of an epoch: its count a whole fraction of its
        total, and the last metric row's epoch just below that epoch's number."""
        if e.kind != "bar" or e.phase != "training":
            return None
        m = PROGRESS_BAR.match(plain(e.line.text))
        p = self.pool.get("hang-progress")
        epoch = as_float(getattr(p, "last_metrics", {}).get("epoch")) if p is not None else None
        if m is None or epoch is None:
            return None
        k, n = int(m.group("k")), int(m.group("n"))
        done = round(epoch)
        if k <= 0 or done < 1 or not done - 0.05 <= epoch <= done or k % done:
            return None
        per_epoch = k // done
        if n % per_epoch or not done < n // per_epoch <= 1000:
            return None
        epochs = n // per_epoch
        why = (f"The bar stopped at {k} of {n} steps, exactly {done}/{epochs} of the total, and the last metric row says "
               f"epoch {epoch:g}: the run stopped at the end of epoch {done} of {epochs} (computed), where every rank "
               f"does something together (an evaluation or a checkpoint save with a per-epoch strategy, the last and "
               f"possibly uneven batch of the epoch, the next epoch's sampler).")
        fix = ("Look at what this run does at an epoch's end: an evaluation or save with eval_strategy / save_strategy "
               "'epoch' that one rank never finishes, and ranks that get different numbers of batches "
               "(dataloader_drop_last=True evens them); take py-spy dumps of every rank while it waits.")
        return why, fix

    def _title(self, e: Ending) -> str:
        if e.kind == "signal":
            return f"The run was stopped by a signal from outside ({e.detail})"
        if e.kind == "error":
            return "The log ends in an error line that names no known failure"
        if e.kind == "crash-header":
            return f"The process crashed in {e.phase}; the traceback is not in the log"
        if e.kind == "warning":
            return "The excerpt shows only warnings"
        if e.kind == "words":
            return "The excerpt says in words that the run failed, without its error line"
        if e.kind == "faulthandler":
            return "The log ends in a stack dump" + (f": {e.detail}" if e.detail else "")
        return f"The log stops in {e.phase}"

