"""GD231: vLLM's pydantic validation rejected the engine arguments it was given."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..memory._facts import facts_of


def pydantic_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    h = hits[0]
    cls = h.groups.get("cls") or "a vLLM config"
    run = ctx.run
    vv = run.versions.get("vllm")
    f = facts_of(run, h.exc.frames if h.exc else ())
    who = "trl" if f.framework == "trl" else "ms-swift"
    msg = (f"vLLM rejected the arguments it was given: pydantic validation failed for {cls}. vLLM >= 0.9 validates its "
           f"configs strictly (e.g. None for a boolean option), and {who} releases written for an older vLLM pass such "
           f"values.")
    fix = [("Upgrade trl (its vllm-serve fix gives options like enforce_eager a boolean default), or pin vLLM to the "
            "release the installed trl supports (pip install 'trl[vllm]').") if who == "trl" else
           "Upgrade ms-swift, or pin vLLM to the version your ms-swift release lists.",
           "Pass the offending option explicitly with a valid value (the validation error's next lines name the field)."]
    if vv:
        fix.insert(0, f"vLLM {vv} is installed.")
    return Diagnosis(message=msg, fix=tuple(fix))
