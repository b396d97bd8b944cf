"""GD905 (``grpo-doctor watch``): host memory near the OOM killer, from the host samples of a live run.

Its signals come from ``doctor/live`` (doctor/checks/_units.py); ``analyze`` never emits them, so
in a post-mortem this rule stays silent. Like every rule it does no I/O and never prints.
"""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule
from ...signals import HostTick
from .._units import gib


class HostMemoryLow(Rule):
    kinds = frozenset({HostTick})

    def __init__(self, meta):
        super().__init__(meta)
        self.opt = meta.options
        self.worst: HostTick | None = None

    def feed(self, signal: Any) -> None:
        h: HostTick = signal
        frac = float(self.opt.get("fraction", 0.05))
        if h.total and h.available < frac * h.total:
            if self.worst is None or h.available < self.worst.available:
                self.worst = h

    def finish(self, ctx: RunState) -> list[Finding]:
        h = self.worst
        if h is None:
            return []
        msg = (f"Host memory ran low: {gib(h.available)} available of {gib(h.total)} ({100 * h.available / h.total:.1f}%) "
               f"at {h.t:.0f} s. The kernel's OOM killer ends the biggest process without a Python traceback (the log "
               "then stops or torchrun reports SIGKILL / exit code -9).")
        return [self.make(message=msg)]
