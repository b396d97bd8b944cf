"""Rule selection for --select / --ignore (and `explain`, `rules --select`): the one place a selector is read.

A selector is a rule id (``GD101``), an id prefix (``GD1``, ``GD10``: a family), ``ALL``, a slug
(``train-batch-not-divisible``) or a category (``cuda-oom``). Case and ``_``/``-`` do not matter. A selector
that names nothing is an error with a suggestion: one typo must not turn a CI gate off.

Ignoring mutes findings; it does not blind the fallback. The rules that would have matched still run, so the
fallback rule (GD999 "No rule recognises this failure") knows a rule claimed the failure, and their findings
are dropped afterwards (``Selection.keep``).
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import lazyre

if TYPE_CHECKING:
    from .model import Finding
    from .registry import RuleMeta

_ID_PREFIX = lazyre.compile(r"gd\d*")


class SelectorError(ValueError):
    """An unknown selector; the message is the one line the CLI prints."""


def normalise(token: str) -> str:
    return token.strip().lower().replace("_", "-")


def split(values: Iterable[str] | None) -> set[str] | None:
    """Option values as typed (repeatable, comma-separated) -> the set of selectors, None when empty."""
    if not values:
        return None
    out = {v.strip() for item in values for v in item.split(",") if v.strip()}
    return out or None


def _known() -> tuple[RuleMeta, ...]:
    from .registry import load_catalog
    return load_catalog()


def expand(token: str, catalog: Iterable[RuleMeta] | None = None, option: str = "--select") -> set[str]:
    """The rule ids one selector names (checked against the whole catalog, so a selector valid elsewhere is
    valid for a command that runs only some rules). Raises SelectorError when it names nothing."""
    metas = tuple(catalog) if catalog is not None else _known()
    t = normalise(token)
    if t == "all":
        return {m.id for m in metas}
    if _ID_PREFIX.fullmatch(t):  # an id or id prefix; a rule's former ids (aliases) count as its own
        got = {m.id for m in metas if any(i.lower().startswith(t) for i in (m.id, *m.aliases))}
    else:
        got = {m.id for m in metas if t in (m.slug.lower(), m.category.lower())}
    if got:
        return got
    raise SelectorError(_unknown(token, t, metas, option))


def _unknown(token: str, t: str, metas: tuple[RuleMeta, ...], option: str) -> str:
    names = {m.id.lower(): m.id for m in metas}
    names.update({a.lower(): a for m in metas for a in m.aliases})
    names.update({m.slug.lower(): m.slug for m in metas})
    names.update({m.category.lower(): m.category for m in metas})
    if _ID_PREFIX.fullmatch(t):  # a prefix too long to exist: suggest its shorter, existing prefixes too
        names.update({t[:k]: t[:k].upper() for k in range(3, len(t)) if any(m.id.lower().startswith(t[:k])
                                                                             for m in metas)})
    base = re.sub(r"^(gd\d+)[a-z]+$", r"\1", t)
    close = difflib.get_close_matches(base, list(names), n=3, cutoff=0.6)
    # a word of a longer name ("oom": cuda-oom, host-oom-killed), which a similarity ratio misses; categories first
    parts = sorted((n for n in names if len(t) >= 3 and n != t and t in n.split("-")),
                   key=lambda n: (n not in {m.category.lower() for m in metas}, len(n), n))
    close = list(dict.fromkeys(parts[:4] + close))[:5]
    hint = f"; did you mean {' or '.join(names[c] for c in close)}?" if close else ""
    return (f"{option} {token}: no rule id, id prefix, slug or category of that name{hint} "
            f"(list them: grpo-doctor rules)")


@dataclass(frozen=True)
class Selection:
    """``run``: the rules a session runs; ``wanted``: the ids whose findings are reported."""
    run: tuple[RuleMeta, ...]
    wanted: frozenset[str]
    complete: bool  # every rule of the catalog is selected and none ignored

    def keep(self, findings: list[Finding]) -> list[Finding]:
        """Drop the findings of rules that were run only for the fallback's sake; the order is redone when
        something was dropped (a muted root leaves its consequences standalone)."""
        kept = [f for f in findings if self.wants(f.rule_id)]
        if len(kept) == len(findings):
            return findings
        from .engine import order
        return order(kept)

    def wants(self, rule_id: str) -> bool:
        return self.complete or rule_id in self.wanted


def resolve(catalog: Iterable[RuleMeta], select: set[str] | None = None, ignore: set[str] | None = None) -> Selection:
    metas = tuple(catalog)
    ids = {m.id for m in metas}
    known = metas + tuple(m for m in _known() if m.id not in ids) if select or ignore else metas
    wanted = set(ids)
    if select:
        wanted = set().union(*(expand(t, known, "--select") for t in select)) & ids
    if ignore:
        wanted -= set().union(*(expand(t, known, "--ignore") for t in ignore))
    complete = wanted == ids
    if any(m.fallback for m in metas if m.id in wanted):
        run = metas  # the fallback must see what every other rule matched, reported or not
    else:
        run = tuple(m for m in metas if m.id in wanted)
    return Selection(run, frozenset(wanted), complete)


def select_rules(catalog: Iterable[RuleMeta], select: set[str] | None = None,
                 ignore: set[str] | None = None) -> list[RuleMeta]:
    """The rules selected and not ignored (no fallback widening): `rules --select`, and the engine's helper."""
    metas = tuple(catalog)
    wanted = resolve(metas, select, ignore).wanted
    return [m for m in metas if m.id in wanted]


def check(select: set[str] | None, ignore: set[str] | None) -> None:
    """Validate the selectors of a command line before any input is read (raises SelectorError)."""
    resolve(_known(), select, ignore)


__all__ = ["Selection", "SelectorError", "check", "expand", "normalise", "resolve", "select_rules", "split"]
