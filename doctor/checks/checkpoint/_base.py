"""What every checkpoint rule shares: it collects CheckpointInput signals (the facts of one checkpoint directory, from
file sizes and safetensors headers only: swift-notes §2, §3) and judges them in finish()."""
from __future__ import annotations

import posixpath
from typing import Any

from ...model import Evidence
from ...rules import Rule
from ...signals import CheckpointInput
from ...sources.checkpoint import CheckpointFacts


def ev_at(f: CheckpointFacts, name: str, text: str) -> Evidence:
    """Evidence that points at a file of the checkpoint (the checkpoint itself when ``name`` is empty)."""
    return Evidence(posixpath.join(f.path, name) if name else f.path, 0, text)


class CkptRule(Rule):
    kinds = frozenset({CheckpointInput})
    idle_silent = True   # fed nothing: each subclass's finish reads only self.inputs (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.inputs: list[CheckpointInput] = []

    def feed(self, signal: Any) -> None:
        if isinstance(signal, CheckpointInput):
            self.inputs.append(signal)
