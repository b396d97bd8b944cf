"""GD231: vLLM's pydantic validation rejected the engine arguments it was given. pydantic prints the reason on the
lines after the exception: a type error ("Input should be a valid boolean": a caller written for another vLLM release)
or a `Value error, <message>` that a validator of vLLM raised (one of its own limits between settings)."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ... import lazyre
from ...classify.hints import message_hints
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...signals import ExceptionInfo

if TYPE_CHECKING:
    from ...classify.structure import Entry
from ..memory._facts import facts_of

# pydantic v2's line for an error a validator raised ("  Value error, max_num_batched_tokens (8192) is smaller ...
# [type=value_error, input_value=..., input_type=...]")
_VALUE_ERROR = lazyre.compile(r"^\s*Value error, (?P<text>.+?)(?:\s*\[type=value_error\b.*)?$")
_FOLLOWING = 8
# the rules that own a check vLLM's validators make (each reads the same line and computes its fix)
_LIMIT_RULES = ("GD241", "GD242", "GD243", "GD244")


def _value_error(h: Hit, ctx: RunState) -> str | None:
    texts = [h.exc.message] if h.exc else []
    if h.exc is not None:
        texts += [t.text for t in ctx.lines_after(h.evidence.path, h.exc.seq, _FOLLOWING)]
    for text in texts:
        m = _VALUE_ERROR.search(text)
        if m:
            return m.group("text").strip()
    return None


def _owned(text: str) -> bool:
    from ...registry import find_rule
    for rid in _LIMIT_RULES:
        meta = find_rule(rid)
        if meta is not None and any(p.regex.search(text) for p in meta.patterns):
            return True
    return False


def _sentences(text: str, limit: int = 300) -> str:
    """The text, or its whole sentences that fit in ``limit`` characters (a quote cut mid-word reads as a typo)."""
    if len(text) <= limit:
        return text
    end = text.rfind(". ", 0, limit)
    return text[:end + 1] if end > 40 else text[:limit]


def _table_entry(exc: ExceptionInfo, text: str) -> Entry | None:
    """The structural table's entry (doctor/data/structure.toml) whose message pattern reads this `Value error` text,
    judged as the table judges an exception (classify.structure.matches) of that text without frames: the check
    pydantic wrapped is a ValueError of vLLM's own, which the table may already explain. Entries that ask for frames
    or run facts cannot match; one for exceptions printed without frames (a title) is not this."""
    from ...classify.structure import load, matches
    bare = replace(exc, type="ValueError", message=text, frames=())
    return next((e for e in load() if e.message is not None and not e.stackless and matches(e, bare, ())), None)


def pydantic_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    h = hits[0]
    cls = h.groups.get("cls") or "a vLLM config"
    run = ctx.run
    vv = run.versions.get("vllm")
    limit = _value_error(h, ctx)
    if limit is not None:
        if _owned(limit):
            return None  # the rule of that limit reports it, with the fix computed from its numbers
        entry, quoted = _table_entry(h.exc, limit) if h.exc is not None else None, _sentences(limit)
        if entry is not None:
            return Diagnosis(
                message=f"vLLM refused the value of a setting while building its {cls}: `{quoted}`"
                        f"{'' if quoted.endswith('.') else '.'} {' '.join(entry.doc.split())}",
                fix=entry.fix or None, category=entry.category, title=entry.title or None,
                verify=entry.verify or None)
        return Diagnosis(
            message=f"vLLM refused the value of a setting while building its {cls}: `{quoted}` (pydantic's "
                    "`Value error` line: a check of vLLM's own between settings, not a type that another release "
                    "passes).",
            fix=(*(f"The message itself says how: \"{h}\"" for h in message_hints(limit)),
                 "Change the settings the message names so that its condition holds (the launch command, or the "
                 "trainer's vLLM options), and relaunch."),
            category="argument-error-other")
    f = facts_of(run, h.exc.frames if h.exc else ())
    told = ctx.framework()[0]
    who = "trl" if f.framework == "trl" else "ms-swift" if told in ("ms-swift", None) and f.known else None
    caller = {"trl": "trl", "ms-swift": "ms-swift"}.get(who or "", "the package that builds the vLLM engine")
    msg = (f"vLLM rejected the arguments it was given: pydantic validation failed for {cls}. vLLM >= 0.9 validates its "
           f"configs strictly (e.g. None for a boolean option), and {caller} releases written for an older vLLM pass "
           f"such values.")
    fix = [("Upgrade trl (its vllm-serve fix gives options like enforce_eager a boolean default), or pin vLLM to the "
            "release the installed trl supports (pip install 'trl[vllm]').") if who == "trl" else
           "Upgrade ms-swift, or pin vLLM to the version your ms-swift release lists." if who == "ms-swift" else
           "Upgrade the package that builds the engine, or pin vLLM to the release its requirements name.",
           "Pass the offending option explicitly with a valid value (the validation error's next lines name the field)."]
    if vv:
        fix.insert(0, f"vLLM {vv} is installed.")
    return Diagnosis(message=msg, fix=tuple(fix))
