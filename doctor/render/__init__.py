"""Renderers: a Report in, text out. Only text.py imports rich."""
from __future__ import annotations

from typing import Any


def run_line(run: dict[str, Any]) -> str:
    """'ms-swift 4.6.0, trl 0.29.1, world size 8' from the report's run object ('' when nothing is known)."""
    bits = []
    fw = str(run.get("framework") or "ms-swift")
    if run.get("framework_version"):
        bits.append(f"{fw} {run['framework_version']}")
    elif run.get("framework_major") and fw == "ms-swift":
        bits.append(f"ms-swift {run['framework_major']}.x")
    for name, ver in (run.get("versions") or {}).items():
        if name != fw:
            bits.append(f"{name} {ver}")
    if run.get("world_size"):
        bits.append(f"world size {run['world_size']}")
    return ", ".join(bits)
