"""Reports written by `grpo-doctor watch` (one per node), read back so that `analyze` can merge several
nodes' diagnoses. Reading only: which node, which host, when its first error appeared, its findings."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..model import CONFIDENCES, Evidence, Finding, Role, Severity
from ..registry import ACTIONS, find_rule

REPORT_PREFIX = "grpo-doctor-report"


@dataclass(frozen=True)
class NodeReport:
    """A watch report of one node of a multi-node run."""
    path: str
    node_rank: int | None
    host: str | None
    first_error_time: float | None
    status: str | None
    exit_code: int | None
    findings: tuple[Finding, ...]

    @property
    def label(self) -> str:
        node = f"node {self.node_rank}" if self.node_rank is not None else "node ?"
        return f"{node} ({self.host})" if self.host else node


def is_report(obj) -> bool:
    return isinstance(obj, dict) and obj.get("schema_version") == 1 and isinstance(obj.get("tool"), dict) \
        and obj["tool"].get("name") == "grpo-doctor" and isinstance(obj.get("findings"), list)


def _confidence(d: dict) -> str:
    """The report's own level; a report written before there was one: what its rule's kind says (the catalog)."""
    if d.get("confidence") in CONFIDENCES:
        return str(d["confidence"])
    meta = find_rule(str(d.get("rule_id", "")))
    return meta.confidence_level if meta is not None else "possible"


def _finding(d: dict) -> Finding | None:
    alts = d.get("alternatives", [])
    try:
        return Finding(
            rule_id=str(d["rule_id"]), slug=str(d.get("slug", "")), category=str(d.get("category", "other")),
            severity=Severity.parse(str(d.get("severity", "info"))), title=str(d.get("title", "")),
            message=str(d.get("message", "")), fix=tuple(str(x) for x in d.get("fix", ())),
            evidence=tuple(Evidence(str(e.get("path", "")), int(e.get("line", 0)), str(e.get("text", "")))
                           for e in d.get("evidence", ()) if isinstance(e, dict)),
            count=int(d.get("count", 1)), ranks=tuple(int(r) for r in d.get("ranks", ())),
            role=Role(d.get("role", "standalone")),
            confidence=_confidence(d),
            alternatives=tuple(c for c in alts if isinstance(c, str))[:4] if isinstance(alts, list) else (),
            **{k: d[k] for k in ("action", "verify", "prevent", "command") if isinstance(d.get(k), str)
               and (k != "action" or d[k] in ACTIONS)})
    except (KeyError, ValueError, TypeError):
        return None


def load(path: str, text: str) -> NodeReport | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not is_report(obj):
        return None
    run = obj.get("run") if isinstance(obj.get("run"), dict) else {}
    watch = run.get("watch") if isinstance(run.get("watch"), dict) else {}
    found = tuple(f for f in (_finding(d) for d in obj["findings"] if isinstance(d, dict)) if f is not None)
    nr = run.get("node_rank")
    fet = watch.get("first_error_time")
    return NodeReport(path, nr if isinstance(nr, int) else None, run.get("host") if isinstance(run.get("host"), str) else None,
                      float(fet) if isinstance(fet, (int, float)) else None, watch.get("status"), watch.get("exit_code"),
                      found)
