"""What `explain` and `rules` print: a rule's documentation, the catalog table, and their filters.

Rules are named as --select names them (doctor/selectors.py): ids, id prefixes, ALL, slugs, categories.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from .registry import RuleMeta, load_catalog
from .selectors import SelectorError, expand, normalise


def explain_rules(token: str) -> list[RuleMeta]:
    """The rules one name designates, in catalog order (SelectorError when none)."""
    ids = expand(token, option="explain")
    return [m for m in load_catalog() if m.id in ids]


def explain_text(meta: RuleMeta) -> str:
    lines = [f"{meta.id}  {meta.slug}", f"{meta.title}", "",
             f"category: {meta.category}    severity: {meta.severity.name}"
             + (f"    versions: {meta.versions}" if meta.versions else ""), "", meta.why, ""]
    if meta.fix:
        lines.append("Fix:")
        lines += [f"  - {f}" for f in meta.fix]
        lines.append("")
    if meta.action:
        lines.append(f"Action: {meta.action} (default; the run may refine it: resume from a good checkpoint)")
    if meta.verify:
        lines.append(f"Verify: {meta.verify}")
    if meta.prevent:
        lines.append(f"Prevent: {meta.prevent}")
    if meta.action or meta.verify or meta.prevent:
        lines.append("")
    if meta.examples:
        lines.append("Matches lines such as:")
        lines += [f"  {e}" for e in meta.examples[:5]]
        lines.append("")
    if meta.references:
        lines.append("References:")
        lines += [f"  - {r}" for r in meta.references]
    return "\n".join(lines).rstrip()


def filter_rules(categories: Iterable[str] | None = None, select: Iterable[str] | None = None) -> list[RuleMeta]:
    """The catalog, narrowed to these categories (exact names, normalised) and these selectors."""
    catalog = load_catalog()
    keep = {m.id for m in catalog}
    if categories:
        known = sorted({m.category for m in catalog})
        wanted = set()
        for c in categories:
            n = normalise(c)
            if n not in known:
                import difflib
                close = difflib.get_close_matches(n, known, n=3, cutoff=0.6)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise SelectorError(f"--category {c}: no such category{hint} (grpo-doctor rules lists them)")
            wanted.add(n)
        keep &= {m.id for m in catalog if m.category in wanted}
    if select:
        keep &= set().union(*(expand(t, catalog, "--select") for t in select))
    return [m for m in catalog if m.id in keep]


def rules_text(metas: list[RuleMeta]) -> str:
    head = f"{'ID':8} {'SEVERITY':8} {'CATEGORY':34} SLUG"
    return "\n".join([head] + [f"{m.id:8} {m.severity.name:8} {m.category:34} {m.slug}" for m in metas])


def rules_json(metas: list[RuleMeta]) -> str:
    return json.dumps([{
        "id": m.id, "slug": m.slug, "category": m.category, "severity": m.severity.name, "title": m.title,
        "why": m.why, "fix": list(m.fix), "references": list(m.references), "versions": m.versions,
        "kind": "check" if m.check else "pattern", "action": m.action, "verify": m.verify,
        **({"prevent": m.prevent} if m.prevent else {}),
    } for m in metas], indent=2, ensure_ascii=False)


__all__ = ["explain_rules", "explain_text", "filter_rules", "rules_json", "rules_text"]
