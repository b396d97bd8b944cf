"""GD612: one reward function is 0 in every step while the others move (said only where GD610 and GD611
are silent)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule
from ...sources.swiftconfig import RunConfig
from .._series import SeriesRule
from ._flags import as_list, flag_name
from ._view import ALWAYS_ZERO_MIN, EPS_ZERO, PASTED_ZERO_MIN, REWARD_KEYS, RewardView, raise_length, truncation_note
from .flat import flat_finding
from .format_pattern import CHECK, PITFALLS, names_format


def _always_zero_findings(rule: Rule, rv: RewardView, run: RunConfig, excerpt: bool = False) -> list[Finding]:
    s = rv.s
    names = rv.always_zero(PASTED_ZERO_MIN if excerpt else ALWAYS_ZERO_MIN)
    if not names:
        return []
    others = [n for n in rv.names if n not in names]
    moving = [n for n in others if any(v is not None and abs(v) > EPS_ZERO for v in rv.means(n))]
    if not moving:
        return []
    shown = ", ".join(f"rewards/{n}" for n in names)
    few = excerpt and rv.n < ALWAYS_ZERO_MIN
    span = s.span(rv.idx[0], rv.idx[-1])
    where = (f"in the one pasted step ({span})" if rv.n == 1 else
             f"in every one of the {rv.n} {'pasted' if excerpt else 'logged'} steps ({span})")
    one = len(names) == 1
    if few:   # only the rows shown: what they show, no 'never'
        steps = "that step" if rv.n == 1 else "those steps"
        meaning = (f"{'it' if one else 'they'} scored no completion in {steps}, so {'it' if one else 'they'} added "
                   f"nothing to {'its' if rv.n == 1 else 'their'} advantages.")
    else:
        meaning = (f"{'this reward function never' if one else 'these reward functions never'} scored a completion, "
                   f"so {'it adds' if one else 'they add'} nothing to the advantages.")
    msg = (f"{shown} was 0 {where} while {', '.join('rewards/' + n for n in moving)} "
           f"{'was' if len(moving) == 1 else 'were'} not 0: {meaning}")
    fix = []
    for n in names:
        fl = flag_name(n)
        if fl == "accuracy":
            ds = as_list(run.args.get("dataset"))
            fix.append("accuracy (MathAccuracy) compares each completion's <answer> with the dataset column "
                       f"'solution': check that every row of {', '.join(ds) if ds else 'the dataset'} has it, that it "
                       "holds a parseable gold answer, and that the prompt asks for <answer>...</answer>.")
        elif fl == "format":
            fix.append("format needs the whole completion to match <think>...</think><answer>...</answer>: ask for it "
                       "in the system prompt or SFT the model on that format first.")
        elif names_format(fl):
            fix.append(f"'{fl}' checks a format: {PITFALLS}. {CHECK}")
        else:
            fix.append(f"Run the '{fl}' reward offline on logged completions (--log_completions true) and check the "
                       f"dataset columns it reads (they arrive as keyword arguments).")
    trunc = truncation_note(s, run, rv.idx)
    if trunc:
        fix.append(trunc + ". " + raise_length(run))
    keys = ["reward"] + [f"rewards/{n}/mean" if s.rstd.get(n) is not None else f"rewards/{n}" for n in rv.names][:4]
    if few:
        msg += (f" The paste shows {'one step' if rv.n == 1 else f'{rv.n} steps'} only: a few more rows (or the whole "
                f"log) would show whether it ever scores.")
    return [rule.make(message=msg, fix=fix, evidence=[s.evidence(i, keys) for i in dict.fromkeys((rv.idx[0], rv.idx[-1]))],
                      count=rv.n, seq=s.seq(rv.idx[0]), severity=Severity.info if rv.n == 1 else Severity.warning,
                      confidence="possible" if few else None,
                      title="A reward function is 0 in every pasted step" if few else None)]


class RewardFuncAlwaysZero(SeriesRule):
    """GD612: one reward function is 0 in every step while the others move."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        rv = RewardView(self.s, run)
        if rv.n == 0 or rv.no_reward_funcs(ctx.table_metrics):
            return []
        if flat_finding(self, rv, run) is not None or rv.all_zero:
            return []
        return _always_zero_findings(self, rv, run, excerpt=not ctx.whole_log())
