"""GD430 / GD431: ms-swift cannot tell the model_type or the chat template of a (local, renamed) model folder."""
from __future__ import annotations

import ast
import re

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def _cands(text: str | None) -> list[str]:
    if not text:
        return []
    try:
        v = ast.literal_eval(text)
        return [str(x) for x in v] if isinstance(v, (list, tuple)) else []
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return re.findall(r"'([^']+)'", text)


def model_type_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    d = g.get("dir") or "the model directory"
    cands = _cands(g.get("cands"))
    msg = (f"ms-swift cannot tell which model_type {d} is: its config.json matches "
           + (f"{len(cands)} registered types ({', '.join(cands)})" if cands else "no single registered type")
           + ". This happens with local or renamed model folders; nothing has been loaded yet.")
    fix = []
    if cands:
        fix.append(f"--model_type {cands[0]} (candidates: {', '.join(cands)}; pick the one of your model family - "
                   f"names ending in _gte, _rm, _prm or _vl are embedding, reward or vision variants).")
    else:
        fix.append("--model_type <type> (the list of types is in the ms-swift Supported-models-and-datasets page).")
    if not ctx.run.cli.get("template"):
        fix.append("--template is usually needed too for such a folder (the chat template the model was tuned with, "
                   "e.g. qwen2_5 for Qwen2.5 instruct models).")
    return Diagnosis(message=msg, fix=tuple(fix))


def template_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    d = g.get("dir") or "the model directory"
    cands = _cands(g.get("cands"))
    msg = (f"ms-swift cannot pick the chat template for {d}: "
           + (f"{len(cands)} templates fit this model type ({', '.join(cands)})." if cands else
              "no single template fits.")
           + " Nothing has been loaded yet.")
    fix = []
    if cands:
        fix.append(f"--template <name>, one of {', '.join(cands)}: the template must match how the model was "
                   f"chat-tuned (for a Qwen2.5 instruct model: qwen2_5; a base model trained by you: the template "
                   f"you trained it with).")
    else:
        fix.append("--template <name> (see the ms-swift Supported-models-and-datasets page).")
    return Diagnosis(message=msg, fix=tuple(fix))
