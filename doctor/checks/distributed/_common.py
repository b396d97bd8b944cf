"""Helpers shared by the distributed rules: the numbers of their messages (minutes, rank lists), the
vLLM weight-sync port, the ms-swift version a flag appeared in, and the first real error of a rank."""
from __future__ import annotations

from ...signals import ExceptionInfo

VLLM_GROUP_PORT = 51216


def rank_list(ranks: list[int] | tuple[int, ...]) -> str:
    """Ranks in order, runs of four or more consecutive ones as a range: "0-14, 16-63", "1, 2, 3"."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(set(ranks)):
        if run and r != run[-1] + 1:
            out.append(_run_text(run))
            run = []
        run.append(r)
    if run:
        out.append(_run_text(run))
    return ", ".join(out)


def _run_text(run: list[int]) -> str:
    return f"{run[0]}-{run[-1]}" if len(run) >= 4 else ", ".join(map(str, run))



def _raised_on(exceptions: list[ExceptionInfo], rank: int | None) -> ExceptionInfo | None:
    from ..fallback.exceptions import CONSEQUENCE_TYPES
    for e in sorted(exceptions, key=lambda x: x.seq):
        if e.short_type in CONSEQUENCE_TYPES:
            continue
        if rank is None or e.rank is None or e.rank == rank:
            return e
    return None
