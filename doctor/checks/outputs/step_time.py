"""GD650: time per step grows clearly over the run."""
from __future__ import annotations

from ...engine.columns import load_numpy
from ...engine.state import RunState
from ...model import Finding, Severity
from .._columns import available, column
from .._series import SeriesRule, fmt


def _timed_rows(st: list[float | None]) -> list[int]:
    """The rows after the first (it holds the start-up's costs) that log a step_time above 0."""
    v, _ = column(st)
    with load_numpy().errstate(invalid="ignore"):
        timed = v > 0   # a missing value reads NaN: not above 0
    timed[:1] = False
    return timed.nonzero()[0].tolist()  # type: ignore[no-any-return]


class StepTimeGrowing(SeriesRule):
    """GD650: time per step grows clearly over the run (per-step step_time from trl >= 0.26 / ms-swift 4.x)."""

    want_rewards = False
    series_keys = ("step_time", "completions/mean_length", "completion_length")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        st = s.col("step_time")
        if s.n and available(s.n):   # no rows (or a few): numpy is not even imported
            rows = _timed_rows(st)
        else:
            rows = [i for i in range(1, s.n) if st[i] is not None and st[i] > 0]   # row 0 holds start-up costs
        if len(rows) < 8:
            return []
        k = max(2, len(rows) // 4)
        early = sum(st[i] for i in rows[:k]) / k
        late = sum(st[i] for i in rows[-k:]) / k
        if early <= 0 or late < 2 * early or late - early < 1.0:
            return []
        msg = (f"step_time grew from {fmt(early)} s (first {k} logged steps after the first) to {fmt(late)} s (last "
               f"{k}), {fmt(late / early, 2)}x.")
        ml = s.col("completions/mean_length")
        if not any(v is not None for v in ml):
            ml = s.col("completion_length")
        le = [ml[i] for i in rows[:k] if ml[i] is not None]
        ll = [ml[i] for i in rows[-k:] if ml[i] is not None]
        fix = []
        L = ctx.run.int_arg("max_completion_length")
        if le and ll and sum(ll) / len(ll) >= 1.5 * (sum(le) / len(le)):
            a, b = sum(le) / len(le), sum(ll) / len(ll)
            msg += (f" completions/mean_length grew from {fmt(a)} to {fmt(b)} over the same steps: generation and "
                    f"loss time grow roughly linearly with completion length.")
            fix.append("Longer completions are the cause: cap them with --max_completion_length"
                       + (f" (now {L})" if L else "") + ", or add the soft_overlong reward (with "
                       "--soft_cache_length) or the cosine reward to discourage needless length.")
        else:
            fix.append("Completion length did not grow as much: look for memory pressure (vLLM KV cache preemption "
                       "warnings, growing memory(GiB)), CPU offload (--offload_model / --offload_optimizer) or "
                       "a slow reward function / reward model.")
        fix.append("Compare step_time with completions/mean_length in logging.jsonl to confirm.")
        ev = [s.evidence(rows[0], ("step_time", "completions/mean_length")),
              s.evidence(rows[-1], ("step_time", "completions/mean_length"))]
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(rows), seq=s.seq(rows[0]),
                          severity=Severity.warning)]
