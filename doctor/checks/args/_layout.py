"""The run's process layout as the argument rules read it: processes per node, GPU id lists for a fix."""
from __future__ import annotations

from ...sources.swiftconfig import RunConfig
from ...values import as_int


def nproc_per_node(run: RunConfig) -> int | None:
    v = run.env.get("NPROC_PER_NODE")
    n = as_int(v)
    if n:
        return n
    return as_int(run.torchrun.get("nproc_per_node"))


def gpu_ids(n: int) -> str:
    return ",".join(str(i) for i in range(n))
