"""GD330: the last resort of all. An input the tool read nothing from (no exception, error or warning line, failure
words, metric row, end marker or checkpoint) gets one warning that says what it holds and what to paste next, so
that a paste that stops before its failure is never reported as "No problem found."."""
from __future__ import annotations

from typing import Any

from ...engine.state import TAIL, RunState
from ...model import Finding
from ...rules import Rule, evidence_of
from ...sources.command_text import PROGRAMS
from .endings import plain
from .prose import prose_lines


class NothingRead(Rule):
    """Reads nothing as it goes: at the end, the state and the other rules' findings decide."""

    kinds: frozenset = frozenset()

    def feed(self, signal: Any) -> None:  # pragma: no cover - no signal kind is routed here
        return None

    def finish(self, ctx: RunState) -> list[Finding]:
        # a log whose own lines show the program starting (launcher lines, an argument dump, `watch`'s own launch)
        # is a whole log: one that has not printed a step yet is the hang rules' to judge
        if ctx.findings or ctx.exceptions or ctx.open_tracebacks or ctx.ended or ctx.checkpoints or ctx.saves \
                or ctx.launch_in_log():
            return []
        lines = [ln for ln in ctx.last_tail() if ln.text.strip()]
        if not lines:
            return []
        if ctx.metrics_steps or ctx.metric_facts:
            # metric rows that show no failure, beside a person's own sentences: an excerpt pasted to ask about
            # something the rows do not show (a whole log or rows alone are the metric rules' to judge)
            said = prose_lines(lines)
            if not said:
                return []
            msg = (f"This paste's metric rows show nothing read as a failure, and it holds no exception, error line or "
                   f"end of the run; its words (`{plain(said[0].text)[:160]}`) name no failure that is known by its "
                   f"wording. Rows alone cannot show some failures (the completions' text, the speed, a stop after "
                   f"them): paste the lines that show what the words describe (two or three completions, the bar with "
                   f"its s/it, or the log's last 100 lines).")
            return [self.make(message=msg, evidence=[evidence_of(said[0])], seq=said[0].seq,
                              title="The paste's metric rows show no failure; its words describe one")]
        held = _what_it_holds(ctx, len(lines))
        # said of the paste, to the person who pasted it: what its lines are not, and what would show the failure
        msg = (f"This paste shows no exception, no error or warning line, no metric row and no end of the run, and its "
               f"words name no failure; it holds {held}. That does not make the run healthy: if it failed, the lines "
               f"that show how (the traceback, or the last 100 lines of the log) are not among these.")
        return [self.make(message=msg, evidence=[evidence_of(lines[-1])], seq=lines[-1].seq)]


def _what_it_holds(ctx: RunState, count: int) -> str:
    run = ctx.run
    parts = []
    if run.launches or run.command:
        name = run.command or next((launch.command for launch in run.launches), None)
        parts.append(f"a launch command (`{PROGRAMS.get(name or '', name)}`)" if name else "a launch command")
    elif run.args:
        parts.append(f"settings ({len(run.args)} read)")
    full = len(ctx.last_tail()) >= TAIL   # only the last lines of a longer log are kept
    parts.append(f"{count} non-empty line{'s' if count != 1 else ''}" + (" in its last part" if full else ""))
    return " and ".join(parts)
