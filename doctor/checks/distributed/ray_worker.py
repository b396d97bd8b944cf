"""GD311's run context: a Ray worker's death that torch's NCCL watchdog caused. ProcessGroupNCCL's watchdog ends
its process when a collective times out or fails ("To avoid data inconsistency, we are taking the entire process
down", torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp); Ray then reports the worker as dead of a system error. The
watchdog's lines name the failure (GD301/GD304), and the death is their consequence (a fixer: pure)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_WATCHDOG = lazyre.compile(r"Watchdog caught collective operation timeout|NCCL communicator was aborted|"
                           r"we are taking the entire process down")


def ray_worker_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if any(_WATCHDOG.search(t.text) for tail in ctx.tails.values() for t in tail):
        return None
    if _named_elsewhere(ctx):
        return None  # the paste names the Python exception the actor died of (a title above Ray's report)
    detail = next((h.groups["detail"] for h in hits if h.groups.get("detail")), None)
    task = next((h.groups["task"] for h in hits if h.groups.get("task")), None)
    if detail is None and task is not None:
        return Diagnosis(message=f"Ray re-raised in the driver the death of the actor that ran `{task}()` "
                                 "(RayTaskError(ActorDiedError)): its worker process died without a Python exception "
                                 "of its own, as Ray sees a process whose connection closed: the kernel's OOM killer "
                                 "(host RAM), a native crash (SIGSEGV in a CUDA/NCCL library) or `ray stop --force`. "
                                 "The actor's own lines (its `(… pid=N)` prefix) or its log under "
                                 "/tmp/ray/session_latest/logs/ say which.")
    return Diagnosis()


def _named_elsewhere(ctx: RunState) -> bool:
    """Whether an exception the paste names on a line of its own that is not Ray's report of the death ("AssertionError:
    ppo_mini_batch_size 0 should be larger than 0 after normalization" as an issue's title): the actor's creation task
    raised it, so the death has a Python error after all (Ray prints it in the actor's own log)."""
    from ..fallback.named import exception_named_in
    for tail in ctx.tails.values():
        for line in tail:
            if "Ray" in line.text or "ray::" in line.text:
                continue
            exc = exception_named_in(line)
            if exc is not None and exc.message and not exc.frames and exc.short_type != "ActorDiedError":
                return True
    return False
