"""GD415: several torchrun processes on CPU without --use_cpu true (each rank trains alone)."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule, evidence_of
from ...signals import ExceptionInfo, LogLine
from ...values import as_int

_GROUP_VIEW = lazyre.compile(r"shape '\[-1, (\d+)\]' is invalid for input of size (\d+)")
_CPU_MODEL = lazyre.compile(r"model_kwargs: \{'device_map': 'cpu'")


class CpuDdpWithoutUseCpu(Rule):
    """Several torchrun processes on CPU without --use_cpu true: accelerate runs each rank as a single
    process, gathers nothing, and the advantage code's ``rewards.view(-1, num_generations)`` gets only
    this rank's completions (real run real-ddp2-cpu-gloo-shape-error-child-failed)."""

    kinds = frozenset({LogLine, ExceptionInfo})
    literals = ("model_kwargs", "is invalid for input of size")
    idle_silent = True   # fed nothing: no exception (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.exc: ExceptionInfo | None = None
        self.group = self.size = 0
        self.cpu_line: LogLine | None = None

    def feed(self, signal: Any) -> None:
        if isinstance(signal, ExceptionInfo):
            m = _GROUP_VIEW.search(signal.message)
            if m and self.exc is None:
                self.exc, self.group, self.size = signal, int(m.group(1)), int(m.group(2))
            return
        if self.cpu_line is None and _CPU_MODEL.search(signal.text):
            self.cpu_line = signal

    def finish(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        world = run.world_size()
        if self.exc is None or self.cpu_line is None or not world or world < 2:
            return []
        if str(run.get("use_cpu")).lower() == "true":
            return []
        g = as_int(run.get("num_generations"))
        if g is not None and g != self.group:
            return []
        per_rank = self.size
        msg = (f"{world} processes were started (torchrun) on CPU without --use_cpu true, so each one trained "
               f"alone: the advantage step grouped this rank's own {per_rank} reward(s) into groups of "
               f"{self.group} (`{self.exc.short_type}: {self.exc.message.strip()[:120]}`), instead of the "
               f"{per_rank * world} gathered from all {world} ranks.")
        fix = ["Add --use_cpu true (keep --ddp_backend gloo): the ranks then form one process group on CPU "
               "(verified on ms-swift 4.6.0).",
               f"Or run one process (no NPROC_PER_NODE) with --per_device_train_batch_size {per_rank * world} for "
               f"the same {per_rank * world} completions per step.",
               "On a GPU machine this means torch saw no GPU: check `python -c 'import torch; "
               "print(torch.cuda.is_available())'` and CUDA_VISIBLE_DEVICES on every node."]
        ev = [Evidence(self.exc.where.path, self.exc.where.line, self.exc.raw), evidence_of(self.cpu_line)]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=self.exc.seq)]
