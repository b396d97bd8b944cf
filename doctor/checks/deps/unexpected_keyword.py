"""GD457: a call passes a keyword the installed library does not accept (mismatched versions)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._frames import importer, short_path


def unexpected_kwarg_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    callee, kw = g.get("callee") or "?", g.get("kw") or "?"
    frame = importer(hits[0].exc)
    by = f" (called from {short_path(frame.path)}:{frame.lineno})" if frame else ""
    if ctx.framework()[0] == "ms-swift":
        versions = ("pip show ms-swift trl transformers vllm peft, and install the versions that belong together "
                    "(the ms-swift README dependency table for your release).")
    else:  # the table is ms-swift's: another stack's caller pins its own versions
        versions = ("Print the versions in play (`pip list | grep -iE \"trl|transformers|peft|accelerate|vllm|"
                    "deepspeed\"`) and install the ones the calling code was written for (its requirements file or "
                    "README pins them).")
    return Diagnosis(
        message=f"{callee} does not accept `{kw}`{by}: the caller was written for another version of the "
                f"library that defines {callee}.",
        fix=(versions,
             f"If the call is in your own code, drop `{kw}` or install the library version it was written for."))
