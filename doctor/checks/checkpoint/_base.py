"""What every checkpoint rule shares: it collects CHECKPOINT signals (the facts of one checkpoint directory, from
file sizes and safetensors headers only: swift-notes §2, §3) and judges them in finish()."""
from __future__ import annotations

import posixpath
from typing import Any

from ...model import CHECKPOINT, Evidence
from ...rules import Rule
from ...sources.checkpoint import CheckpointFacts
from ._facts import CkptInput


def ev_at(f: CheckpointFacts, name: str, text: str) -> Evidence:
    """Evidence that points at a file of the checkpoint (the checkpoint itself when ``name`` is empty)."""
    return Evidence(posixpath.join(f.path, name) if name else f.path, 0, text)


class CkptRule(Rule):
    kinds = frozenset({CHECKPOINT})

    def __init__(self, meta):
        super().__init__(meta)
        self.inputs: list[CkptInput] = []

    def feed(self, kind_: str, payload: Any) -> None:
        if isinstance(payload, CkptInput):
            self.inputs.append(payload)
