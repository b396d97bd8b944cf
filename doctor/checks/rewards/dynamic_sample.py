"""GD614: --dynamic_sample resampled up to --max_resample_times and the groups were still flat."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from .._runargs import more_generations


def dynamic_sample_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    n = hits[0].groups.get("n") or run.args.get("max_resample_times") or "3"
    g = run.int_arg("num_generations")
    msg = (f"dynamic_sample resampled {n} times and still found groups whose completions all got the same reward "
           f"({len(hits)} time(s) in this log): the data is mostly too easy or too hard for the model.")
    fix = [f"Raise --max_resample_times (now {n}) or filter the dataset to prompts the model solves sometimes but "
           f"not always.",
           f"More diversity per group: {more_generations(run, g)}; --temperature 0.9-1.0."]
    return Diagnosis(message=msg, fix=tuple(fix))
