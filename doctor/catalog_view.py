"""What `explain` and `rules` print: a rule's documentation, the catalog table, and their filters.

Rules are named as --select names them (doctor/selectors.py): ids, id prefixes, ALL, slugs, categories.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .registry import RuleMeta, load_catalog
from .selectors import SelectorError, expand, normalise


def rule_doc(m: RuleMeta) -> dict[str, Any]:
    """The one projection of a rule's documentation (its TOML file): `rules --format json` prints it as it is; the
    SARIF rule descriptors, the README's rule index and `explain` are made from it."""
    return {
        "id": m.id, "slug": m.slug, "category": m.category, "severity": m.severity.name, "title": m.title,
        "why": m.why, "fix": list(m.fix), "references": list(m.references), "versions": m.versions,
        "kind": "check" if m.check else "pattern", "action": m.action, "verify": m.verify,
        **({"prevent": m.prevent} if m.prevent else {}),
    }


def reference_urls(doc: dict[str, Any]) -> list[str]:
    """The public URLs of a rule's references ('URL (what it shows)': the URL)."""
    return [r.split()[0] for r in doc["references"] if r.startswith("https://")]


def help_text(doc: dict[str, Any]) -> str:
    """Why, the fix lines that need no run values, the references: a rule's help where one text is shown (SARIF)."""
    fix = [f for f in doc["fix"] if "{" not in f]  # fix lines with holes are filled per finding, not in the rule
    text = doc["why"].strip()
    if fix:
        text += "\n\nFix:\n" + "\n".join(f"- {f}" for f in fix)
    if doc["references"]:
        text += "\n\nReferences:\n" + "\n".join(f"- {r}" for r in doc["references"])
    return text + f"\n\nMore: grpo-doctor explain {doc['id']}"


def index_row(doc: dict[str, Any]) -> str:
    """The rule's row in README.md's rule index."""
    return f"| {doc['id']} | `{doc['slug']}` | {doc['category']} | {doc['severity']} | {doc['title']} |"


def explain_rules(token: str) -> list[RuleMeta]:
    """The rules one name designates, in catalog order (SelectorError when none)."""
    ids = expand(token, option="explain")
    return [m for m in load_catalog() if m.id in ids]


def explain_text(meta: RuleMeta) -> str:
    d = rule_doc(meta)
    lines = [f"{d['id']}  {d['slug']}", f"{d['title']}", "",
             f"category: {d['category']}    severity: {d['severity']}"
             + (f"    versions: {d['versions']}" if d["versions"] else ""), "", d["why"], ""]
    if d["fix"]:
        lines.append("Fix:")
        lines += [f"  - {f}" for f in d["fix"]]
        lines.append("")
    if d["action"]:
        lines.append(f"Action: {d['action']} (default; the run may refine it: resume from a good checkpoint)")
    if d["verify"]:
        lines.append(f"Verify: {d['verify']}")
    if d.get("prevent"):
        lines.append(f"Prevent: {d['prevent']}")
    if d["action"] or d["verify"] or d.get("prevent"):
        lines.append("")
    if meta.examples:
        lines.append("Matches lines such as:")
        lines += [f"  {e}" for e in meta.examples[:5]]
        lines.append("")
    if meta.check and meta.check.startswith("fallback.structural:"):
        from .classify.structure import load
        lines.append("Structural entries of this category (doctor/data/structure.toml):")
        for e in load():
            if e.category == meta.category:
                lines.append(f"  {e.id}: {' '.join(e.doc.split())}")
                lines.append(f"      backed by: {'; '.join(e.backed_by)}")
        lines.append("")
    if d["references"]:
        lines.append("References:")
        lines += [f"  - {r}" for r in d["references"]]
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
    return json.dumps([rule_doc(m) for m in metas], indent=2, ensure_ascii=False)


__all__ = ["explain_rules", "explain_text", "filter_rules", "help_text", "index_row", "reference_urls", "rule_doc",
           "rules_json", "rules_text"]
