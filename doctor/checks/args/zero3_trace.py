"""GD425's second form: ZeRO-3's fetch_sub_module found the modules running in another order than its trace."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def zero3_trace_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    count = next((h.groups.get("count") for h in hits if h.groups.get("count")), None)
    if count is None:
        return Diagnosis()  # the assertion form: the rule's own message and fix
    return Diagnosis(
        title="DeepSpeed ZeRO-3's parameter prefetch trace does not match the order the modules ran in",
        message=(f"DeepSpeed ZeRO-3 expected the next {count} parameter(s) of its prefetch queue and found others "
                 f"(`tracing error` in partitioned_param_coordinator.fetch_sub_module): ZeRO-3 records the order "
                 f"the sub-modules run in on the first step and prefetches parameters by it; a step that runs them "
                 f"in another order (a state loaded into a running engine, a forward that takes another path, a "
                 f"model called outside the engine) breaks the trace."),
        fix=("Confirm with ZeRO-2, or with prefetching off under ZeRO-3 (stage3_prefetch_bucket_size 0 in the "
             "DeepSpeed config): if the error goes, the modules ran out of the recorded order.",
             "Resume by building a fresh engine on the saved state (restart the job with the checkpoint) rather than "
             "loading a state into an engine that has already traced its steps, and try a newer DeepSpeed release."))
