"""RunState: what the engine knows of the run, built from the signals, read by every rule's ``finish``.

The session routes and orders; this object is the only place where a log line becomes run facts: the
configuration (launch line, args dump), the exceptions of the traceback tracker, the console metric rows,
the normal end, the last lines of each log input and the checkpoints seen. Rules read it in ``finish(state)``
(``state.run``, ``state.exceptions``, ``state.tails``...); only the engine writes it.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .. import lazyre
from ..claim_facts import METRIC_KEYS, MetricFacts
from ..model import Evidence, Finding, RunRef
from ..signals import CheckpointInput, ExceptionInfo, Frame, LogLine, Metrics, Where
from ..sources import ipython_tb, rich_box
from ..sources import metrics as metrics_src
from ..sources.paste import DICT_ITEM, DICT_OPEN, ENTRY_WORD
from ..sources.swiftconfig import LITERALS as CONFIG_LITERALS
from ..sources.swiftconfig import STRENGTH, RunConfig
from ..sources.traceback import BARE_WORDS, TracebackTracker, named_only
from ..swift.trainer_kind import MetricMarks, TrainerKind
from .columns import Block, add_facts, first_of, load_numpy

TAIL = 60            # last lines kept per log input (hang phase, unrecognised endings)
HEAD = 40            # first lines kept per log input (a paste's title and description, for the paste readings)
MAX_EXCEPTIONS = 200  # exceptions kept for fallback rules; the rest are only routed
END_MARKERS = ("End time of running main", "last_model_checkpoint: ")  # ms-swift's own end-of-run lines
# a checkpoint written (transformers' save line, ms-swift's closing line): the report's vitals name the last one
SAVE_RE = lazyre.compile(r"(?:Saving model checkpoint to|last_model_checkpoint:) +(\S+)")
SAVE_WORD = "Saving model checkpoint to"
# the words of a line that the state's readers may need (configuration, metric rows, tracebacks, the end): a line
# holding none of them reaches the state only as an indented traceback code line (``read(line, gated=False)``)
STATE_WORDS: frozenset[str] = frozenset(
    set(CONFIG_LITERALS) | set(metrics_src.LITERALS) | set(END_MARKERS)
    | {SAVE_WORD, ", line ", "Traceback", "Error", "Exception", "Exit", "Interrupt", "Failure", "Timeout", "StopIteration",
       ipython_tb.COLAB_WORD, ipython_tb.CELL_WORD, ENTRY_WORD}
    | set(BARE_WORDS) | set(rich_box.WORDS))


def reporter_exception(exc: ExceptionInfo | None) -> bool:
    """Every frame of ``exc`` is an environment reporter's (torch/utils/collect_env.py, vLLM's collect_env.py, which
    issue templates ask people to run and paste): such a script failing on its own import is no failure of the run
    the paste is about."""
    return exc is not None and bool(exc.frames) and all(
        f.path.replace("\\", "/").endswith("/collect_env.py") or f.path == "collect_env.py" for f in exc.frames)


@dataclass
class RunState:
    """What the readers learnt of the run so far, shared by every rule of a session."""
    run: RunConfig = field(default_factory=RunConfig)
    preflight: bool = False                                       # no run yet: judging the command alone
    facts: dict = field(default_factory=dict)   # preflight inputs (model, GPU); watch: ended_by_signal (ckpt.py)
    console_metrics: bool = True                                  # metric rows read from console lines
    exceptions: list[ExceptionInfo] = field(default_factory=list)  # first exceptions seen (capped)
    # the lines of exceptions an environment reporter raised (``_of_the_run``): no reading takes them for the run's
    reporter_lines: set[int] = field(default_factory=set)
    tails: dict[str, deque[LogLine]] = field(default_factory=dict)  # last lines of each log input
    heads: dict[str, list[LogLine]] = field(default_factory=dict)   # first lines of each log input (HEAD)
    ended: bool = False                                           # the run reached its normal end
    crashed_after_end: bool = False   # ms-swift's end lines, then a traceback: the run failed (its finally path printed them)
    log_inputs: list[str] = field(default_factory=list)
    metrics_steps: int = 0                                        # training-step metric rows seen
    table_metrics: bool = False                                   # rows whose columns say nothing of reward functions (a pasted table, verl)
    checkpoints: list[tuple[str, int | None]] = field(default_factory=list)  # (path, step) of checkpoints seen
    saves: deque[str] = field(default_factory=lambda: deque(maxlen=8))  # checkpoint paths the log says were saved
    findings: list[Finding] = field(default_factory=list)         # for fallback rules: the earlier rules' findings
    tracker: TracebackTracker = field(default_factory=TracebackTracker)
    # facts the claims of messages and fixes are checked against (doctor/claims.py): the highest and lowest training
    # rank a line showed, whether the log printed a parameter count, and what the logged rows say of a few metric keys
    max_rank: int | None = None
    min_rank: int | None = None
    params_read: bool = False
    metric_facts: dict[str, MetricFacts] = field(default_factory=dict)
    # what the metric keys say of the trainer (GRPO's group keys, DPO's chosen/rejected), noted per row layout
    metric_marks: MetricMarks = field(default_factory=MetricMarks)
    _row_width: int = -1
    _layouts: set[tuple[str, ...]] = field(default_factory=set, repr=False, compare=False)   # noted already (_note_layout)
    _wrapped_dict: bool = False   # a metrics dict wrapped over lines is open (its pieces hold no row of their own)
    # the first training step whose row shows weights a checkpoint should not be resumed from: {category: step}, for
    # loss-nan-or-inf (loss or grad_norm not finite) and grad-norm-zero (grad_norm exactly 0 while reward_std > 0).
    # Read by doctor/verdict.py: a checkpoint saved at or after it holds the diverged or dead weights
    broken_at: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ read by rules
    @property
    def open_tracebacks(self) -> list[tuple[LogLine, tuple[Frame, ...]]]:
        """(last frame line, frames) of tracebacks cut before their exception line."""
        return self.tracker.open_tracebacks()

    @property
    def dumped_frames(self) -> list[tuple[LogLine, Frame]]:
        """(line, frame) of the stacks faulthandler dumped (a fatal signal's, a hang's dump), in log order."""
        return list(self.tracker.dumped)

    def framework(self, heads: Iterable[str] = ()) -> tuple[str | None, str | None, str | None, str]:
        """(framework, version, recipe, source) of the run, detected from what the state holds (the frames, the
        faulthandler frames, the launch commands, the last lines; ``heads``: the first lines of the logs when the
        caller read them): doctor/swift/framework.py ``of_run``."""
        from ..swift.framework import of_run
        return of_run(self.run, self.exceptions, self.open_tracebacks, self.tails, heads,
                      [f.path for _, f in self.tracker.dumped])

    def trainer_kind(self) -> TrainerKind:
        """GRPO, DPO, SFT, a server...: doctor/swift/trainer_kind.py over what the state holds."""
        from ..swift.trainer_kind import of_run
        # rows of a training step (a loss or a gradient norm: Megatron leaves a NaN loss out of its line)
        rows = max((f.logged for k, f in self.metric_facts.items() if k in ("loss", "grad_norm")), default=0)
        return of_run(self.run, self.exceptions, self.open_tracebacks, self.tails, self.metric_marks, rows)

    def whole_log(self) -> bool:
        """A log from its launch (a command, launcher lines or an argument dump was read), not a pasted excerpt."""
        run = self.run
        return bool(run.launches or run.command_texts or run.args or run.command)

    def printed_launch(self) -> bool:
        """The run's launch is known: a launch command given beside the log (command.txt) or printed by it, or
        arguments the program printed (an argument dump, args.json); not a YAML config alone, and not a command a
        person pasted among the lines of an excerpt."""
        run = self.run
        return any(launch not in run.pasted_launches for launch in run.launches) or self.launch_in_log()

    def launch_in_log(self) -> bool:
        """The log's own lines show its program starting (launcher lines, an argument dump, args.json); a command
        file given beside a pasted excerpt does not count."""
        run = self.run
        return run.launch_printed or any(STRENGTH.get(p, 0) > STRENGTH["command"] for p in run.provenance.values())

    def lines_after(self, path: str, seq: int, n: int) -> list[LogLine]:
        """The first ``n`` lines of the log ``path`` printed after the line (or exception) of sequence ``seq``, from
        its kept end (a message wrapped onto the next lines, the list pydantic or transformers print under it)."""
        return [t for t in self.tails.get(path) or () if t.seq > seq][:n]

    def complete_messages(self) -> None:
        """An exception printed with an empty message (``RuntimeError: `` alone: a message that starts with a newline,
        as bitsandbytes' triple-quoted CUDA-setup error does) takes the indented lines printed under it, from the
        log's kept end: CPython prints ``str(exc)`` verbatim after ``Type: ``."""
        for i, exc in enumerate(self.exceptions):
            if exc.message.strip():
                continue
            words: list[str] = []
            for ln in self.lines_after(exc.where.path, exc.seq, 12):
                text = ln.text
                if text.strip() and not text[:1].isspace():
                    break
                if text.strip():
                    words.append(text.strip())
            if words:
                self.exceptions[i] = replace(exc, message=" ".join(words)[:600])

    def at(self, where: Evidence | Where) -> RunState:
        """The state as the run holding this line (an evidence line, an exception's place) saw it: with several
        runs appended to one log (issue 17.16), that run's configuration instead of the last run's (``self``
        otherwise)."""
        if len(self.run.runs) < 2 or not where.line:
            return self
        run = self.run.at(Where(where.path, where.line))
        return self if run is self.run else replace(self, run=run)

    def place(self, findings: list[Finding]) -> list[Finding]:
        """Each finding marked with the run its first located evidence line belongs to, when the log holds
        several runs (issue 17.16): the report says which run (line range) a finding is about."""
        runs = self.run.runs
        if len(runs) < 2:
            return findings
        out = []
        for f in findings:
            ev = next((e for e in f.evidence if e.line), None)
            i = runs.index_of(Where(ev.path, ev.line)) if ev is not None else None
            if i is None:
                out.append(f)
                continue
            path, first, last = runs.span(i)
            out.append(replace(f, run=RunRef(i + 1, len(runs), path, first, last)))
        return out

    # ------------------------------------------------------------------ written by the engine
    def begin_log(self, path: str) -> None:
        self.log_inputs.append(path)
        self.tails[path] = deque(maxlen=TAIL)
        self.heads[path] = []

    def keep(self, line: LogLine) -> None:
        """The line joins its input's tail (blank lines do not, nor a pretty-printed dict joined into one line: it
        carries the seq of its closing line, which the tail holds, and the scanner's rebuilt tail has no such line)."""
        tail = self.tails.get(line.where.path)
        if tail is None:
            self.begin_log(line.where.path)
            tail = self.tails[line.where.path]
        if line.text.strip() and not (tail and tail[-1].seq == line.seq):
            tail.append(line)
            head = self.heads.setdefault(line.where.path, [])
            if len(head) < HEAD:
                head.append(line)
        if line.rank is not None and not line.origin:  # a [rankN]: prefix (a vLLM worker's rank=N is not a training rank)
            if self.max_rank is None or line.rank > self.max_rank:
                self.max_rank = line.rank
            if self.min_rank is None or line.rank < self.min_rank:
                self.min_rank = line.rank

    def other_ranks_than(self, ranks: tuple[int, ...]) -> bool:
        """Whether the log shows lines of a training rank outside ``ranks``."""
        return bool(ranks) and self.max_rank is not None and self.min_rank is not None and \
            (self.max_rank > max(ranks) or self.min_rank < min(ranks))

    def replace_head(self, path: str, lines: Iterable[LogLine]) -> None:
        """The chunk scanner rebuilds a head from the file's first lines (it skipped lines the head would hold)."""
        self.heads[path] = list(lines)[:HEAD]

    def paste_lines(self) -> list[LogLine]:
        """Each log input's first and last lines, once each, in order: where a paste's own sentences are read (its
        title and description at the top, replies and outcomes at the end)."""
        out: list[LogLine] = []
        for path, tail in self.tails.items():
            seen = {ln.seq for ln in tail}
            out += [ln for ln in self.heads.get(path, ()) if ln.seq not in seen] + list(tail)
        return out

    def replace_tail(self, path: str, lines: Iterable[LogLine]) -> None:
        """The chunk scanner rebuilds a tail from the file's last lines (it skipped lines the tail would hold)."""
        self.tails[path] = deque(lines, maxlen=TAIL)

    def last_tail(self) -> list[LogLine]:
        """The last lines of the log input that ends last (the others are side logs): where a run's end is read.
        watch's own hang reports (grpo-doctor-hang-N.txt: process states and stacks, read for their stacks) are no
        end of the run: their words describe the hang watch measured, which its report already gives."""
        tails = [t for path, t in self.tails.items() if not _own_hang_report(path)] or list(self.tails.values())
        return list(max(tails, key=lambda t: t[-1].seq if t else 0, default=()))

    def sticky(self) -> bool:
        """The next lines matter whatever they hold: an open args dump, a command continued over lines ending in a
        backslash, or a traceback frame awaiting its code line (the only states in which a line without a gate word
        changes anything but the tail)."""
        return self.run._dump_open or self.run.continuing() or self.tracker.expecting()

    def read(self, line: LogLine, gated: bool) -> tuple[ExceptionInfo | None, Metrics | None] | None:
        """The run facts of one line: configuration, end markers, and the exception it completes and the console
        metric row it holds, returned for the session to route. ``gated``: the line holds a gate word (a line
        without one can only be a traceback's code line). None when the line gives no signal."""
        text = line.text
        if self.run._dump_open:
            self.run.feed(line)
            return None
        if not gated and self.run.continuing():
            launch = self.run.launch_open
            self.run.feed(line)  # a launch's flag lines ("    --port 8001 \\") hold no gate word
            if launch:
                return None
        if not gated:
            # "-": IPython's arrow line "--> 107 code"; a code line a paste took the indentation off while a frame
            # waits for it (the tracker reads it as the line path, which feeds every line, does)
            if text.startswith((" ", "\t", "-")) or self.tracker.expecting():
                exc = self._of_the_run(self.tracker.feed(line))
                if exc is not None:
                    self._keep_exception(exc)
                    return exc, None
            return None
        self.run.feed(line)
        exc = self._of_the_run(self.tracker.feed(line))
        if exc is not None:
            self._keep_exception(exc)
        if any(mk in text for mk in END_MARKERS):
            self.ended = True
        elif self.ended and "Traceback (most recent call last)" in text:
            # ms-swift logs its end lines in a finally path (swift/llm/train/sft.py): a traceback after them is the
            # run failing, not a run that ended by itself
            self.ended = False
            self.crashed_after_end = True
        if "model_parameter_info:" in text or "all params:" in text:
            self.params_read = True
        if SAVE_WORD in text or "last_model_checkpoint: " in text:
            self.saves.extend(m.group(1) for m in SAVE_RE.finditer(text))
        row = None
        if self.console_metrics and ":" in text and not self._dict_piece(text) and metrics_src.has_literal(text):
            values, finite = metrics_src.read_console(text)
            if values is not None:
                row = Metrics(values, line.where, line.seq, "console", finite)
                if metrics_src.is_verl_row(text):
                    self.table_metrics = True  # verl's row: it logs no per-function rewards, their absence says nothing
        if exc is None and row is None:
            return None
        return exc, row

    def _metric_facts(self, values: dict[str, Any]) -> None:
        for key in METRIC_KEYS:
            self._metric_fact(key, values)

    def _metric_fact(self, key: str, values: dict[str, Any]) -> None:
        v = values.get(key, values.get("train/" + key))
        if isinstance(v, (int, float)) and not isinstance(v, bool):   # a 400-digit integer reads inf (as_float)
            self.metric_facts.setdefault(key, MetricFacts()).add(metrics_src.as_float(v))  # type: ignore[arg-type]

    def count_many(self, signals: list[Metrics], block: Block) -> list[Metrics]:
        """count() of each of a block's rows, over its columns: the rows that reach the rules."""
        summary = block.summary()
        if len(self.broken_at) < 2:
            self._broken_in(signals, block, summary)
        self.metrics_steps += int(block.steps().sum())
        # every row holding the same keys: the same width, so only the first can change it
        for values in [block.row(0)] if block.one_key_set else block.values:
            if len(values) != self._row_width:
                self._note_layout(values)
        rows = ~summary
        for key in METRIC_KEYS:
            col = first_of(block, (key, "train/" + key))
            if col is None:   # not plain floats: those rows one by one (_metric_facts of this key)
                for m, skip in zip(signals, summary):
                    if not skip:
                        self._metric_fact(key, m.values)
                continue
            v = col[0][col[1] & rows]
            if v.size:
                add_facts(self.metric_facts.setdefault(key, MetricFacts()), v)
        if not summary.any():
            return signals
        self.ended = True
        return [m for m, skip in zip(signals, summary) if not skip]

    def _broken_in(self, signals: list[Metrics], block: Block, summary: Any) -> None:
        """_broken() of a block's step rows, in order, with metrics_steps as count() would have it at each; only the
        rows a column shows to be broken (a loss or grad_norm not finite, a grad_norm of 0 with a reward spread) are
        visited, every step row when a column is not plain floats."""
        np = load_numpy()
        steps = block.steps() & ~summary
        cols = [first_of(block, (k, "train/" + k)) for k in ("grad_norm", "loss", "reward_std")]
        if all(c is not None for c in cols):
            (gn, gn_ok), (loss, loss_ok), (rstd, rstd_ok) = cols  # type: ignore[misc]
            with np.errstate(invalid="ignore"):
                visit = steps & ((gn_ok & ~np.isfinite(gn)) | (loss_ok & ~np.isfinite(loss))
                                 | (gn_ok & (gn == 0) & rstd_ok & (rstd > 0)))
        else:
            visit = steps
        if not visit.any():
            return
        base = self.metrics_steps
        ordinal = np.cumsum(steps)   # metrics_steps after each row, from the block's start
        for i in np.flatnonzero(visit).tolist():
            self.metrics_steps = base + int(ordinal[i])
            self._broken(signals[i].values)
            if len(self.broken_at) >= 2:
                break
        self.metrics_steps = base

    def _broken(self, v: dict[str, Any]) -> None:
        gn, loss, rstd = (metrics_src.as_float(v.get(k, v.get("train/" + k)))
                          for k in ("grad_norm", "loss", "reward_std"))
        bad = []
        if any(x is not None and not math.isfinite(x) for x in (gn, loss)):
            bad.append("loss-nan-or-inf")
        if gn == 0 and rstd is not None and rstd > 0:
            bad.append("grad-norm-zero")
        if not bad:
            return
        step = metrics_src.step_number(v)
        if step is None:
            st = metrics_src.as_float(v.get("step"))
            step = int(st) if st is not None and math.isfinite(st) else None
        if step is None:
            # TRL's console rows carry no step: the row's ordinal x --logging_steps, or x 1 when unknown (the
            # earliest the step can be: more checkpoints judged suspect, never a dead one kept)
            every = metrics_src.as_float(self.run.args.get("logging_steps"))
            step = self.metrics_steps * (int(every) if every and math.isfinite(every) and every >= 1 else 1)
        for c in bad:
            self.broken_at.setdefault(c, step)

    def _dict_piece(self, text: str) -> bool:
        """A line of a metrics dict wrapped over several lines (its opening line ends at an item's comma, the next
        ones are items): the reader joins them into one line (sources/paste.py DictJoiner), whose row is the row; a
        piece holds none. A cut row (its line ends inside an item) is read as it is."""
        s = text.strip()
        if s[:1] == "{" and not s.endswith("}") and DICT_OPEN.match(s):
            self._wrapped_dict = s.endswith(",")
            return self._wrapped_dict
        if self._wrapped_dict:
            if DICT_ITEM.match(s):
                self._wrapped_dict = not s.endswith(("}", "},"))
                return True
            self._wrapped_dict = False
        return False

    def _note_layout(self, values: dict[str, Any]) -> None:
        """A new row layout (its width changed): what its keys say of the trainer. The marks only ever turn on and
        read the keys alone, so a layout noted before adds nothing: a log whose rows alternate between two layouts
        (an extra key every few steps) no longer reads every key of every other row again."""
        self._row_width = len(values)
        keys = tuple(values)
        if keys not in self._layouts:
            if len(self._layouts) >= 256:
                self._layouts.clear()
            self._layouts.add(keys)
            self.metric_marks.note(keys)

    def _of_the_run(self, exc: ExceptionInfo | None) -> ExceptionInfo | None:
        if reporter_exception(exc):
            self.reporter_lines.add(exc.seq)   # type: ignore[union-attr]
            return None
        return exc

    def _keep_exception(self, exc: ExceptionInfo) -> None:
        if len(self.exceptions) >= MAX_EXCEPTIONS:
            return
        at = len(self.exceptions)
        if not named_only(exc):
            # a type a sentence only named (a title's "报错ValueError") says less than an exception printed with its
            # message or stack: the one printed whole replaces a naming of its type, and is read before the others
            self.exceptions[:] = [e for e in self.exceptions if not (named_only(e) and e.short_type == exc.short_type)]
            at = len(self.exceptions)
            while at and named_only(self.exceptions[at - 1]):
                at -= 1
        self.exceptions.insert(at, exc)

    def count(self, signal: Any) -> bool:
        """Account for a non-line signal; False when it reaches no rule (a summary row: the run's end)."""
        if isinstance(signal, Metrics):
            if len(signal.values) != self._row_width:
                self._note_layout(signal.values)
            if metrics_src.is_summary(signal.values):
                self.ended = True
                return False
            if metrics_src.is_step(signal.values):
                self.metrics_steps += 1
                if len(self.broken_at) < 2:
                    self._broken(signal.values)
            self._metric_facts(signal.values)
        elif isinstance(signal, CheckpointInput):
            self.checkpoints.append((signal.facts.path, signal.facts.step))
        return True


__all__ = ["END_MARKERS", "HEAD", "MAX_EXCEPTIONS", "STATE_WORDS", "TAIL", "RunState"]


def _own_hang_report(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith("grpo-doctor-hang-") and name.endswith(".txt")
