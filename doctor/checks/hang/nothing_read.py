"""GD330: the last resort of all. An input the tool read nothing from (no exception, error or warning line, failure
words, metric row, end marker or checkpoint) gets one warning that says what it holds and what to paste next, so
that a paste that stops before its failure is never reported as "No problem found."."""
from __future__ import annotations

from typing import Any

from ...engine.state import TAIL, RunState
from ...model import Finding
from ...rules import Rule, evidence_of
from ...sources.command_text import PROGRAMS


class NothingRead(Rule):
    """Reads nothing as it goes: at the end, the state and the other rules' findings decide."""

    kinds: frozenset = frozenset()

    def feed(self, signal: Any) -> None:  # pragma: no cover - no signal kind is routed here
        return None

    def finish(self, ctx: RunState) -> list[Finding]:
        # a log whose own lines show the program starting (launcher lines, an argument dump, `watch`'s own launch)
        # is a whole log: one that has not printed a step yet is the hang rules' to judge
        if ctx.findings or ctx.exceptions or ctx.open_tracebacks \
                or ctx.ended or ctx.metrics_steps or ctx.metric_facts or ctx.checkpoints or ctx.saves \
                or ctx.launch_in_log():
            return []
        lines = [ln for ln in ctx.last_tail() if ln.text.strip()]
        if not lines:
            return []
        held = _what_it_holds(ctx, len(lines))
        # said as what was read, not as what the input holds: a failure in a form not known here may be in it
        msg = (f"Nothing in this input was read as an exception, an error or warning line, failure words, a metric row "
               f"or the end of a run (a failure told in other words, or in a form not known here, may still be there); "
               f"it holds {held}. This is no sign of a healthy run: if the run failed, paste the lines that show how, "
               f"if they are not among these.")
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
    parts.append(f"{count} line{'s' if count != 1 else ''}" + (" in its last part, none of them read" if full else ""))
    return " and ".join(parts)
