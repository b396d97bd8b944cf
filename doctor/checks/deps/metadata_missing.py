"""GD453: importlib finds no package metadata for a package the run needs (usually DeepSpeed)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def package_not_found_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    pkg = (g.get("pkg") or g.get("pkg2") or "").strip().strip("'\"")
    if pkg.lower() == "deepspeed":
        ds = run.get("deepspeed")
        return Diagnosis(
            message=f"--deepspeed{' ' + str(ds) if ds else ''} needs DeepSpeed, which is not installed "
                    f"(importlib finds no package metadata for it).",
            fix=("pip install 'deepspeed>=0.14' (the README recommends 0.18.9).",
                 "Or train without it: drop --deepspeed."))
    return Diagnosis(
        message=f"The package `{pkg}` is not installed (importlib finds no metadata for it).",
        fix=(f"pip install {pkg}",))
