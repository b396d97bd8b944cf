"""GD232, GD233: the installed vLLM does not match the caller: an API the trainer calls is missing, or a feature
needs a newer vLLM."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.framework import TRAINERS
from ..fallback.exceptions import describe_frame
from ..memory._facts import facts_of


def version_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    h = hits[0]
    g = h.groups
    run = ctx.run
    vv = run.versions.get("vllm") or g.get("found")
    sv = run.swift_version
    tv = run.versions.get("trl")
    f = facts_of(run, h.exc.frames if h.exc else ())
    have = ", ".join(x for x in (f"vLLM {vv}" if vv else "", f"ms-swift {sv}" if sv else "", f"trl {tv}" if tv else "")
                     if x)
    fix: list[str] = []
    if g.get("need"):
        feat = g.get("feat") or "this feature"
        msg = f"{feat} needs vLLM >= {g['need']}" + (f"; vLLM {vv} is installed." if vv else ".")
        fix.append(f"pip install -U 'vllm>={g['need']}' (with a torch build it supports), or drop "
                   f"--{feat} to keep this vLLM.")
        return Diagnosis(message=msg, fix=tuple(fix))
    if g.get("spec"):
        msg = f"This code requires vllm{g['spec']}, but vLLM {g.get('found')} is installed."
        fix.append(f"pip install 'vllm{g['spec']}', or use the release of the calling package that matches vLLM "
                   f"{g.get('found')}.")
        return Diagnosis(message=msg, fix=tuple(fix))
    name = g.get("name") or g.get("cls") or ""
    mod = g.get("mod") or ""
    where = f" ({describe_frame(h.exc.raised_at)})" if h.exc and h.exc.raised_at else ""
    told = ctx.framework()[0]
    # the caller is the trainer only in a trainer's run: a serving script or an inference pipeline calls vLLM itself
    caller = "the trainer" if told in TRAINERS else "its caller"
    msg = (f"The installed vLLM does not have the API {caller} calls{where}: "
           + (f"`{name}` is missing from {mod}" if mod and name else (f"{g['cls']} has no `{name}`" if g.get("cls") and name
                                                                     else h.exc.message[:160] if h.exc else h.evidence.text[:160]))
           + ". vLLM renames and removes internals between minor releases; ms-swift and trl support a narrow range.")
    if have:
        msg += f" Installed: {have}."
    if f.framework == "trl" and told in ("trl", None):
        fix.append("pip install 'trl[vllm]' (in the same environment) resolves a vLLM the installed trl supports; or "
                   "upgrade trl to a release that supports this vLLM.")
    elif told == "ms-swift":
        fix.append("Install the vLLM version your ms-swift release lists (README dependency table: e.g. ms-swift 3.8 "
                   "was tested with vllm 0.10, 4.x with 0.11); or upgrade ms-swift to one that supports this vLLM.")
    else:
        # no trainer told (a script or pipeline of its own): ms-swift's table is no advice for it
        fix.append("Install the vLLM release the calling package was written for (its requirements or release notes "
                   "name it), or upgrade the calling package to one that supports the installed vLLM.")
    shown = ("vllm ms-swift trl torch" if told == "ms-swift" else
             "vllm trl torch" if "trl" in (told, f.framework) else None)
    fix.append(f"`pip show {shown}` and compare with the supported pairs before reinstalling; a vLLM wheel also pins "
               f"its torch version." if shown else
               "`pip show vllm torch` and the calling package's version, compared with the pairs it supports, before "
               "reinstalling; a vLLM wheel also pins its torch version.")
    return Diagnosis(message=msg, fix=tuple(fix))
