"""``grpo-doctor explain "ValueError: ..."``: where a message is raised, in which versions, which rule handles it."""
from __future__ import annotations

from ..model import Finding

MAX_SITES = 8
NEAR = 0.15  # sites scored within this of the best are shown


def rule_findings(text: str) -> list[Finding]:
    """The findings the catalog gives for ``text`` read as a log of its own (the fallback 'other' left out)."""
    from ..engine import Session
    from ..sources.logtext import LineReader
    session = Session(console_metrics=True)  # the whole catalog
    session.begin_log("<message>")
    reader = LineReader("<message>", [0])
    for i, line in enumerate(text.splitlines() or [text], 1):
        for ll in reader.line(i, line.encode("utf-8", "replace")):
            session.feed_line(ll)
    return [f for f in session.finish() if f.category != "other"]


def explain_text(text: str) -> str | None:
    """The explanation of a pasted message, or None when neither a rule nor a raise site knows it."""
    from .message import parse
    from .raise_sites import idx_lit, lookup, narrow_versions
    from .site_rank import rank_key
    matches = lookup(text)
    if matches:
        best = matches[0].score
        msg = parse(text)  # shown in the order raised_by picks (site_rank.py): GRPOConfig before its experimental copies
        matches = sorted((m for m in matches if m.score >= best - NEAR),
                         key=lambda m: rank_key(m, idx_lit(m), msg.exc_type, msg.level))
    findings = rule_findings(text)
    if not matches and not findings:
        return None
    out: list[str] = []
    if findings:
        seen = set()
        for f in findings:
            if f.rule_id in seen:
                continue
            seen.add(f.rule_id)
            out.append(f"Rule: {f.rule_id} {f.slug} ({f.category}, {f.severity.name}): {f.title}")
            out.append(f"      details: grpo-doctor explain {f.rule_id}")
    else:
        out.append("Rule: none in the catalog names this message (analyze reports it from its structure)")
    out.append("")
    if not matches:
        out.append("Raised at: no message site of ms-swift, trl, vLLM, DeepSpeed, peft, accelerate, transformers or "
                   "torch.distributed has this wording (built at run time, from C++, or from other code)")
        return "\n".join(out)
    out.append("Raised at (best match first):")
    for m in matches[:MAX_SITES]:
        out.append(f"  {m.package} {m.versions}  {m.where}  ({m.module})  {m.kind}")
        out.append(f"      template: {m.template}")
        if m.holes:
            out.append("      values:   " + ", ".join(f"{k}={v}" for k, v in m.holes.items()))
    if len(matches) > MAX_SITES:
        out.append(f"  ... and {len(matches) - MAX_SITES} more sites with the same wording")
    out.append("")
    out.append("This wording exists in: " + ", ".join(f"{p} {r}" for p, r in sorted(narrow_versions(matches).items())))
    return "\n".join(out)
