"""Which frameworks' out-of-memory fixes are said in their own configuration rather than ms-swift's ladder
(_ladders.py): verl's and EasyR1's keys (fsdp_levers.py), OpenRLHF's flags (openrlhf_levers.py). Pure."""
from __future__ import annotations

from typing import Any

from .fsdp_levers import FRAMEWORKS as FSDP_FRAMEWORKS
from .fsdp_levers import levers as fsdp_levers
from .openrlhf_levers import levers as openrlhf_levers


def own_levers(framework: str | None, args: dict[str, Any]) -> list[str] | None:
    """The fix lines in the framework's own terms, with the run's values; None for a framework without its own."""
    if framework in FSDP_FRAMEWORKS:
        return fsdp_levers(framework, args)
    if framework == "openrlhf":
        return openrlhf_levers(args)
    return None
