"""SARIF 2.1.0 for code-scanning dashboards: one result per finding, rules from the catalog."""
from __future__ import annotations

from ..model import Report, Severity
from ..registry import load_catalog
from .safe import json_dumps

_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}


def render(report: Report) -> str:
    catalog = load_catalog()
    used = {f.rule_id for f in report.findings}
    rules = [{
        "id": m.id, "name": m.slug, "shortDescription": {"text": m.title}, "fullDescription": {"text": m.why},
        "properties": {"category": m.category},
    } for m in catalog if m.id in used]
    results = []
    for f in report.findings:
        locs = [{"physicalLocation": {"artifactLocation": {"uri": e.path}, "region": {"startLine": max(1, e.line)}}}
                for e in f.evidence[:1]]
        results.append({"ruleId": f.rule_id, "level": _LEVEL[f.severity],
                        "message": {"text": f.message + ("\nFix: " + " | ".join(f.fix) if f.fix else "")},
                        "locations": locs, "properties": {"category": f.category, "role": f.role.value}})
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "grpo-doctor", "version": report.tool_version, "rules": rules}},
                     "results": results}]}
    return json_dumps(doc, indent=2) + "\n"
