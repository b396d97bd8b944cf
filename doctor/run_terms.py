"""The framework a run shows and its findings in that framework's terms: what `analyze` and `watch` both write in a
report. Kept apart from doctor/analyze.py so that watch, which needs these two, does not import analyze's input
readers and scanners (doctor.sources.scan, inputs, bars, step_runs, progress: ~20 modules) at the end of every run."""
from __future__ import annotations

from .claim_facts import RunFacts
from .claims import in_trainer_terms
from .engine import Session
from .engine.session import trainer_facts
from .model import Finding, Severity
from .sources.safeio import head_text
from .swift.terms import in_terms
from .swift.trainer_kind import TrainerKind

HEAD_BYTES = 64 * 1024  # read from the start of each log for framework detection


def framework_of(session: Session, inputs: list | None = None, kind: TrainerKind | None = None) -> dict:
    """The ``framework``, ``framework_version``, ``framework_source`` and ``recipe`` of the run object, detected
    (doctor/swift/framework.py) from the parsed frames, the launch commands, the first and last lines of each log
    and the printed versions."""
    heads: list[str] = []
    for inp in (inputs or [])[:8]:  # the head of each log: banners and the launch line come first
        if inp.kind == "log" and inp.path is not None:
            try:
                heads.extend(head_text(inp.path, HEAD_BYTES).splitlines()[:400])
            except (OSError, EOFError):
                pass
    rc = session.run
    name, version, recipe, source = session.state.framework(heads)
    if name is None and rc.swift_version:  # an args.json or version line of ms-swift's own
        name, version, source = "ms-swift", rc.swift_version, "version"
    # the wording of the errors, when the raise-site index finds it in ms-swift's own code (doctor/classify/
    # provenance.py narrow); trl's wording does not tell: ms-swift, unsloth and open-r1 run trl's GRPOConfig checks too
    if (name is None or source == "runtime") and "ms-swift" in (rc.inferred_versions or {}):
        name, version, source = "ms-swift", None, "wording"
    # nothing points anywhere: not told (framework_source "unknown"); the fixes then name each lever by its neutral name
    # (doctor/swift/terms.py), never an ms-swift flag
    out: dict = {"framework": name, "framework_version": version if name else None,
                 "framework_source": source if name else "unknown"}
    if recipe:
        out["recipe"] = recipe
    kind = kind or session.state.trainer_kind()
    if kind.kind is not None:   # GRPO, DPO, SFT, a server...: what the GRPO-only sentences are checked against
        out["trainer"] = kind.kind
        out["trainer_source"] = kind.source
    return out


def in_run_terms(findings: list[Finding], framework: dict) -> list[Finding]:
    """The fixes in the terms of the framework that ran (doctor/swift/terms.py: no ms-swift flag for a trl user),
    then without the GRPO-only sentences or GRPOConfig fields those terms wrote, for a run of another trainer
    (``framework``: framework_of's object)."""
    findings = in_terms(findings, framework["framework"])
    trainer = framework.get("trainer")
    if trainer:
        findings = in_trainer_terms(findings, RunFacts(**trainer_facts(TrainerKind(trainer, "report"))))
    return [_not_bare(f) for f in findings]


def _not_bare(f: Finding) -> Finding:
    """A warning or error left with no fix once its lines were said in the run's framework (every one named another
    framework's flags) gets its category's usual actions, said in no framework's terms."""
    if f.fix or f.severity < Severity.warning:
        return f
    from dataclasses import replace  # noqa: PLC0415

    from .checks.hang.symptom_words import MEANWHILE, without_lead_in  # noqa: PLC0415
    meanwhile = MEANWHILE.get(f.category)
    if not meanwhile:
        return f
    said = without_lead_in(meanwhile)   # no other fix to go beside
    return replace(f, fix=(said[:1].upper() + said[1:],))
