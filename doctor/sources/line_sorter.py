"""The line path's second stage (see docs/DEVELOPMENT.md, "Performance"): each candidate line the reader hands over
(sources/scanread.py) goes to the one path that leaves the rules as the whole line would, and the line and message
counters move on by it.

- a pure progress bar: kept in the bars' stretch (sources/bars.py), fed later, summarised;
- a logger-prefix line no reader acts on: only counted (sources/quiet.py);
- a lone printed metric dict: a row gathered for a block (sources/bars.py ``metric_line``);
- a checkpoint save line among gathered rows: fed among them (sources/saves.py);
- a run of step lines (bars and dicts one after the other): read at once (sources/step_runs.py);
- any other line: the bars kept and the rows gathered first, then the line fed whole to the line rules
  (``LineReader`` -> ``Session.feed_line``).

The reader only hands lines on and asks whether the session is sticky (then it hands over every line); nothing here
calls back into the reader. ``GRPO_DOCTOR_BARS=all`` turns every short cut off (each line is fed whole).
"""
from __future__ import annotations

import os

from . import bars as bars_mod
from . import step_runs
from .logtext import LineReader
from .quiet import QuietLines
from .saves import SaveLines
from .step_runs import StepRuns


class LineSorter:
    """Sorts the candidate lines of one input, in file order, to their paths (see the module); ``lineno``: physical
    lines consumed so far; ``fed``: lines decoded and fed (statistics)."""

    def __init__(self, session, path: str, counter: list[int]):
        self.session = session
        self.path = path
        self.counter = counter
        self.reader = LineReader(path, counter)
        self.lineno = 0
        self.fed = 0
        # pure progress bars between two other lines, summarised (sources/bars.py); None: every bar is fed
        self.bars: bars_mod.BarStretch | None = None
        # logger-prefix lines no reader acts on, only counted (sources/quiet.py); None: every such line is fed
        self.quiet: QuietLines | None = None
        # checkpoint save lines among console metric rows, which do not end their block (sources/saves.py)
        self.saves: SaveLines | None = None
        # runs of pure bars and lone metric dicts, read at once (sources/step_runs.py); None: line by line
        self.runs: StepRuns | None = None
        self.run_most = step_runs.RUN_MIN   # lines the next run may hold: doubles after a run read whole, back to RUN_MIN after
        if os.environ.get("GRPO_DOCTOR_BARS") != "all" and bars_mod.summarisable(session):
            self.bars = bars_mod.BarStretch(session)
            self.quiet = QuietLines.of(session)
            self.saves = SaveLines.of(session)
            self.runs = StepRuns.of(self.bars, self.saves)

    def sticky(self) -> bool:
        """Feed every line: the session is in a sticky state, or a metrics dict printed over several lines is
        open in the reader (sources/paste.py DictJoiner; its item lines hold no gate word)."""
        return self.session.state.sticky() or self.reader.dicts.parts is not None

    def line(self, data: bytes, defer: bool = False) -> bool:
        """Take one physical line; ``defer``: a candidate found by the scan (not a sticky line), which may be a
        pure bar kept for later (``flush``). False: it took a short cut (a pure bar, a quiet line, a metric row),
        which reaches neither the state nor the line reader, so it left the session as sticky as it found it."""
        bars = self.bars
        if bars is not None:
            if defer and (bars.take(self.lineno + 1, self.counter[0] + 1, data)
                          or self.quiet is not None and self.quiet.skip(data)):
                self.lineno += 1
                self.counter[0] += 1  # a pure bar or a quiet line is one message
                return False
            # a metric row ends the bars' stretch only for a rule that reads rows too (BarStretch.metric_line)
            if defer and bars.metric_line(self.path, self.lineno + 1, self.counter[0] + 1, data):
                self.lineno += 1
                self.counter[0] += 1
                self.fed += 1
                return False
            if bars.pending:
                self.flush()
            if defer and bars.gathered.rows and self.saves is not None and self.saves.among_rows(data):
                self.lineno += 1   # a checkpoint save: its readers need not read the rows before it (sources/saves.py)
                self.fed += 1
                feed_among, hold = self.session.feed_line_among, bars.gathered.hold
                for line in self.reader.line(self.lineno, data):
                    feed_among(line, hold)
                return True
            bars.gathered.emit()   # the metric rows gathered so far reach the rules before this line
        self.lineno += 1
        self.fed += 1
        feed = self.session.feed_line
        for line in self.reader.line(self.lineno, data):
            feed(line)
        return True

    def run(self, lines: list[bytes]) -> int:
        """Read ``lines``, candidates that follow each other from the next line on, as a run of step lines (see
        sources/step_runs.py), up to the first that is not one: returns how many were read. The reader looks ahead
        for a run of ``run_most`` lines, which grows while runs are read whole: a run cut short costs a look at
        as many lines as were read before it, not at RUN_MAX."""
        took = self.runs.take(lines, self.lineno + 1, self.counter[0] + 1, self.path) if self.runs is not None else 0
        self.run_most = min(self.run_most * 2, step_runs.RUN_MAX) if took == len(lines) else step_runs.RUN_MIN
        self.lineno += took
        self.counter[0] += took   # each a message, but a save glued to its bar: two
        if self.runs is not None:   # as metric_line and a save among rows count them (bars: not fed)
            self.counter[0] += self.runs.extra
            self.fed += self.runs.rows_read + self.runs.saves_read
        return took

    def skip(self, n: int) -> None:
        """``n`` lines that are no candidates: each one message, read by no rule."""
        self.lineno += n
        self.counter[0] += n

    def flush(self) -> None:
        """Feed the bars kept since the last line fed, with their own line numbers and seqs."""
        if self.bars is not None:
            self.fed += self.bars.flush(self.path)

    def end(self) -> None:
        """The bars kept and the metric rows gathered, fed: the file's last lines are read."""
        self.flush()
        if self.bars is not None:
            self.bars.gathered.emit()


__all__ = ["LineSorter"]
