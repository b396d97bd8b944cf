"""GD906 (``grpo-doctor watch``): a disk too small for the next checkpoint, from the disk samples of a live run.

Its signals come from ``doctor/live`` (doctor/checks/_units.py); ``analyze`` never emits them, so
in a post-mortem this rule stays silent. Like every rule it does no I/O and never prints.
"""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule
from ...signals import DiskTick
from .._units import gib


class DiskTooSmall(Rule):
    kinds = frozenset({DiskTick})

    def __init__(self, meta):
        super().__init__(meta)
        self.worst: DiskTick | None = None

    def feed(self, signal: Any) -> None:
        d: DiskTick = signal
        if d.need > 0 and d.free < d.need:
            if self.worst is None or d.free < self.worst.free:
                self.worst = d

    def finish(self, ctx: RunState) -> list[Finding]:
        d = self.worst
        if d is None:
            return []
        msg = (f"The disk holding {d.path} has {gib(d.free)} free, less than the next checkpoint needs "
               f"(~{gib(d.need)}, {d.basis}); the save will fail half-written.")
        fix = [f"Free at least {gib(d.need - d.free)} on that file system, or point --output_dir elsewhere.",
               "Keep fewer checkpoints (--save_total_limit 2) and, for full training, --save_only_model true "
               "(no optimizer state)."]
        return [self.make(message=msg, fix=fix)]
