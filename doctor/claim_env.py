"""The ``env`` claim: advice that sets an environment variable ("NCCL_IB_DISABLE=1 to test", "rerun with
NCCL_DEBUG=INFO") is a claim that the run does not have that setting yet. When the run's environment (the assignments
before its launch, its ``export`` lines: doctor/sources/argv.py ``ENV_NAMES``) already holds the same value, the
advice changes nothing: a sentence whose every setting is already the run's goes; one that also advises something
else keeps it and says which setting the run already has. A sentence that describes the run ("the run already sets
...") is no advice."""
from __future__ import annotations

from collections.abc import Iterator

from . import lazyre
from .claim_facts import Claim, RunFacts, Verdict, mask

# NAME=value outside backticks and quotes (a quoted command is the run's own text); <...> is a placeholder
_SETTING = lazyre.compile(r"(?<![\w$])([A-Z][A-Z0-9_]{2,})=([^\s,;()`'\"<]+)")
ALREADY = " (already set in this run)"
# words that make the setting a description of the run, not advice
_DESCRIBES = lazyre.compile(r"(?i)\b(?:already|the run sets|this run sets|the run has|it sets|exports?|exported|"
                            r"with its|were set|was set)\b[^.;]*$")


# advice: a verb that sets it in the same clause before it ("rerun with X=1", "try X=1", "set X=1"), or "to test"
# after it ("X=1 to test"); anything else states the run's setting ("NPROC_PER_NODE=2 but ... shows 1 GPU")
_CLAUSE_START = lazyre.compile(r"[;:(]|, (?:or|and|then) ")
_ADVICE_BEFORE = lazyre.compile(r"(?i)\b(?:rerun|re-run|relaunch|launch|set|try|use|export|add|turn|start|run) "
                                r"(?:it |them |the run |again )?(?:with )?(?:[A-Z][A-Z0-9_]{2,}=\S+ )*$")
_ADVICE_AFTER = lazyre.compile(r"\s+to (?:test|see|rule|check|find)\b")


def _advised(masked: str, start: int, end: int) -> bool:
    clause_start = max((m.end() for m in _CLAUSE_START.finditer(masked, 0, start)), default=0)
    return bool(_ADVICE_BEFORE.search(masked[clause_start:start]) or _ADVICE_AFTER.match(masked, end))


def _value(text: str) -> str:
    return text.rstrip(".").strip("'\"").lower()


def env_has(env: dict[str, str], name: str, value: str) -> str | None:
    """The run's value of ``name`` when it is ``value`` (case, quotes and a sentence's full stop aside), else None."""
    have = env.get(name)
    if have is None or _value(str(have)) != _value(value):
        return None
    return str(have)


def find(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _SETTING.finditer(masked):
        if masked.startswith(ALREADY, m.end()) or masked.startswith(ALREADY, m.end() - 1) or \
                not _advised(masked, m.start(), m.end()):
            continue
        yield Claim("env", m.group(1), m.group(2), m.start(), m.end())


def judge(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    have = env_has(facts.env, c.subject, c.value)
    if have is None or _DESCRIBES.search(sentence[:c.start]):
        return None
    why = f"the run already sets {c.subject}={have}"
    masked = mask(sentence)
    advised = [m for m in _SETTING.finditer(masked) if not masked.startswith(ALREADY, m.end())
               and not masked.startswith(ALREADY, m.end() - 1) and _advised(masked, m.start(), m.end())]
    if all(env_has(facts.env, m.group(1), m.group(2)) is not None for m in advised):
        return Verdict(why)  # every setting the sentence advises is the run's own: it changes nothing
    end = c.end - 1 if sentence[c.start:c.end].endswith(".") else c.end
    return Verdict(why, sentence[:end] + ALREADY + sentence[end:])


__all__ = ["ALREADY", "env_has", "find", "judge"]
