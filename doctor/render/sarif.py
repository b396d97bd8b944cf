"""SARIF 2.1.0 (OASIS, errata 01) for code-scanning dashboards: one result per finding, rules from the catalog.

Locations are relative, percent-encoded URI references against the base id ``RUNDIR`` (the run directory,
whose absolute path is not written: the consumer resolves it); pseudo-inputs such as ``<preflight>``,
``<memory plan>`` or ``<stdin>`` are no files and become logical locations. Each rule carries ``help`` (why and
fix) and ``helpUri`` (its first public reference); ``invocations`` holds the exit code.
"""
from __future__ import annotations

from typing import Any

from ..catalog_view import help_text, reference_urls, rule_doc
from ..model import Evidence, Report, Severity
from ..registry import load_catalog
from .paths import is_pseudo, rel_uri, run_base
from .safe import json_dumps

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
BASE_ID = "RUNDIR"
MAX_RELATED = 20
_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}


def _location(e: Evidence, base: str | None, loc_id: int | None = None) -> dict[str, Any]:
    loc: dict[str, Any] = {} if loc_id is None else {"id": loc_id}
    if is_pseudo(e.path):
        name = e.path.strip("<>") or "input"
        loc["logicalLocations"] = [{"name": name, "fullyQualifiedName": name, "kind": "resource"}]
        if e.line and name == "stdin":  # a pasted excerpt's line; a preflight judgement has none
            loc["message"] = {"text": f"line {e.line}"}
        return loc
    phys: dict[str, Any] = {"artifactLocation": {"uri": rel_uri(e.path, base), "uriBaseId": BASE_ID}}
    if e.line > 0:
        phys["region"] = {"startLine": e.line}
    loc["physicalLocation"] = phys
    return loc


def _rule(m) -> dict[str, Any]:
    d = rule_doc(m)
    out: dict[str, Any] = {
        "id": d["id"], "name": d["slug"], "shortDescription": {"text": d["title"]}, "fullDescription": {"text": d["why"]},
        "help": {"text": help_text(d)}, "defaultConfiguration": {"level": _LEVEL[m.severity]},
        "properties": {"category": d["category"]},
    }
    urls = reference_urls(d)
    if urls:
        out["helpUri"] = urls[0]
    return out


def render(report: Report, exit_code: int | None = None) -> str:
    """``exit_code``: the status the command exits with (default: 1 when a finding is an error, else 0)."""
    if exit_code is None:
        exit_code = 1 if any(f.severity == Severity.error for f in report.findings) else 0
    catalog = load_catalog()
    used = {f.rule_id for f in report.findings}
    rules = [_rule(m) for m in catalog if m.id in used]
    base = run_base(report)
    results = []
    for f in report.findings:
        res: dict[str, Any] = {
            "ruleId": f.rule_id, "level": _LEVEL[f.severity],
            "message": {"text": f.message + ("\nFix: " + " | ".join(f.fix) if f.fix else "")},
            "locations": [_location(e, base) for e in f.evidence[:1]],
            "properties": {"category": f.category, "role": f.role.value, "confidence": f.confidence},
        }
        if f.alternatives:  # a possible finding: the other categories considered
            res["properties"]["alternatives"] = list(f.alternatives)
        related = [_location(e, base, i) for i, e in enumerate(f.evidence[1:1 + MAX_RELATED], 1)]
        if related:
            res["relatedLocations"] = related
        if f.count > 1:
            res["occurrenceCount"] = f.count
        results.append(res)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "grpo-doctor", "version": report.tool_version, "rules": rules}},
        "invocations": [{"executionSuccessful": True, "exitCode": exit_code}],
        "results": results,
    }
    if base is not None:
        run["originalUriBaseIds"] = {BASE_ID: {"description": {
            "text": "The run directory grpo-doctor read; locations are relative to it."}}}
    return json_dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
