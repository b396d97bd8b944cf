"""What grpo-doctor says: findings, reports and their severities (what flows in is doctor/signals.py).

Everything here is a plain frozen dataclass (or a small mutable accumulator where noted) so that
rules stay pure and the renderers can serialise without surprises.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    info = 0
    warning = 1
    error = 2

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}: use info, warning or error") from None


# how sure a finding's category is (additive to schema 1; doctor/confidence.py and rules/README.md): the log proves
# the rule's condition (a signature, a raise site, a computed check), the failure's structure points there (component,
# phase, exception type, a phase inferred from a cut traceback), or weak evidence / similarity only. Strongest first.
CONFIDENCES = ("certain", "likely", "possible")


def weaker(a: str, b: str) -> str:
    """The less sure of two confidence levels."""
    return a if CONFIDENCES.index(a) >= CONFIDENCES.index(b) else b


class Role(str, enum.Enum):
    root = "root"
    consequence = "consequence"
    standalone = "standalone"


@dataclass(frozen=True, slots=True)
class Evidence:
    """A line (or a file) that shows a finding: its path, line number and text."""
    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class RaisedBy:
    """Where the quoted error is raised in the library source (doctor/classify/provenance.py): the releases
    (minor versions) whose source holds this wording, not the version that ran."""
    package: str      # "trl"
    versions: str     # "0.15-0.16"
    module: str       # "trl/trainer/grpo_trainer.py"
    function: str     # "GRPOTrainer.__init__"
    kind: str         # the exception class ("ValueError") or the log level ("error")
    shown: str = field(default="", compare=False)   # ``versions`` as printed: "<=0.12" when the range starts at the oldest release read
    # what the run itself confirms of the indexed site (doctor/classify/provenance.py): "" the releases and the function
    # (the run printed a version inside the range, and its traceback shows the function); "function" the function only
    # (its traceback or log line shows it, the run printed no version of the package); "package" neither (the frame
    # that raised it is another function, a version printed is outside the range, or nothing of the run shows where)
    scope: str = field(default="", compare=False)
    # the test that leads to the site in the newest indexed release holding it ('' when the site is not guarded)
    condition: str = field(default="", compare=False)

    def to_json(self) -> dict[str, str]:
        out = {"package": self.package, "versions": self.versions, "module": self.module,
               "function": self.function, "kind": self.kind}
        if self.condition:
            out["condition"] = self.condition
        return out

    def describe(self) -> str:
        """'raised by trl 0.15-0.16 `GRPOTrainer.__init__` (trl/trainer/grpo_trainer.py)' when the run shows both its
        version and that function; 'raised by trl `GRPOTrainer.__init__` (...)' when it shows the function only;
        'this message is raised by trl' when it shows neither (the indexed releases' function and range are not
        what ran)."""
        if self.scope == "package":
            return f"this message is raised by {self.package}"
        if self.scope == "function":
            return f"raised by {self.package} `{self.function}` ({self.module})"
        return f"raised by {self.package} {self.shown or self.versions} `{self.function}` ({self.module})"


def raised_lines(raised: tuple[RaisedBy, ...] | list[RaisedBy]) -> list[str]:
    """The report's lines on where a quoted error is raised: each site the run confirms, and the packages it confirms
    nothing of said together ("raised by ms-swift and by transformers" is one fact; two lines would each claim the
    message is that package's)."""
    loose = list(dict.fromkeys(rb.package for rb in raised if rb.scope == "package"))
    out = [rb.describe() for rb in raised if rb.scope != "package"]
    if len(loose) == 1:
        out.append(f"this message is raised by {loose[0]}")
    elif loose:
        out.append(f"this message is raised by {' and by '.join(loose)} (the run does not show which)")
    return out


@dataclass(frozen=True)
class RunRef:
    """One of several runs appended to one log (``nohup ... >>``, ``tee -a``): which, and its line range."""

    number: int                # 1-based
    of: int
    path: str
    first_line: int | None     # None: a run folder of a folder of runs, not a line range
    last_line: int | None      # None: to the end of the file
    name: str = ""             # the run folder (``v3-20250101-120000``) when a folder of runs was analyzed
    in_log: RunRef | None = None   # within that run folder: one of the runs appended to its log

    def label(self) -> str:
        if self.name:
            return f"run {self.name}" + (f" ({self.in_log.label()} of its log)" if self.in_log else "")
        return f"run {self.number} of {self.of}, lines {self.first_line}-{self.last_line or 'end'}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "of": self.of, "path": self.path,
                               "first_line": self.first_line, "last_line": self.last_line}
        if self.name:
            out["name"] = self.name
        if self.in_log is not None:
            out["in_log"] = self.in_log.to_json()
        return out


@dataclass(frozen=True)
class Finding:
    """One diagnosis of a rule: what went wrong, the evidence, the fix and the action."""
    rule_id: str
    slug: str
    category: str
    severity: Severity
    title: str
    message: str
    fix: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    count: int = 1
    ranks: tuple[int, ...] = ()
    role: Role = Role.standalone
    first_seq: int = 0  # ordering: where in the inputs the finding first appeared
    priority: int = 50  # within one severity: higher is more specific / more likely the cause
    # what to do (additive to schema 1): restart | resume | relaunch | stop (registry.ACTIONS), what the next run's
    # log shows when the fix worked, the preflight/check-ckpt check that would have caught it, and the command to
    # run (resume/relaunch: the run's own launch with the corrected flags) when it can be computed
    action: str = ""
    verify: str = ""
    prevent: str = ""
    command: str = ""
    flags: tuple[tuple[str, str], ...] = ()  # corrected flags the diagnosis computed ("--name", "value"): for command
    run: RunRef | None = None  # the run of an appended log that the evidence belongs to (additive to schema 1)
    raised_by: tuple[RaisedBy, ...] = ()  # where the errors it quotes are raised (additive to schema 1)
    # how sure the category is (CONFIDENCES; additive to schema 1): rules.Rule.make sets it from the rule's kind and
    # tier (registry.RuleMeta.confidence_level); a finding built by hand (a test) is taken as proven
    confidence: str = "certain"
    # for a "possible" finding: the other categories considered (doctor/confidence.py), best first; else ()
    alternatives: tuple[str, ...] = ()
    # facts its sentences state that doctor/claims.py cannot recognise in the wording (claims.declare: the text that
    # locates the sentence, the claim kind, what it is about, the value): checked against the run before printing;
    # not part of the report
    claims: tuple[tuple[str, str, str, str], ...] = ()
    # False when the rule explains the code the exception went through (a structural entry matched on its files and
    # frames) rather than the check that raised it: a raise site then does not make it certain. Not part of the report
    branch_known: bool = True

    def to_json(self) -> dict[str, Any]:
        out = {
            "rule_id": self.rule_id,
            "slug": self.slug,
            "category": self.category,
            "severity": self.severity.name,
            "title": self.title,
            "message": self.message,
            "fix": list(self.fix),
            "evidence": [e.to_json() for e in self.evidence],
            "count": self.count,
            "ranks": list(self.ranks),
            "role": self.role.value,
            "confidence": self.confidence,
        }
        if self.confidence == "possible":
            out["alternatives"] = list(self.alternatives)
        for key in ("action", "verify", "prevent", "command"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.run is not None:
            out["run"] = self.run.to_json()
        if self.raised_by:
            out["raised_by"] = [r.to_json() for r in self.raised_by]
        return out


@dataclass(frozen=True)
class InputInfo:
    """An input of the report: a path and what kind of file it was read as."""
    path: str
    kind: str  # log | metrics | args | gpu | checkpoint | completions | skipped
    note: str = ""  # why a "skipped" input was not read (a link out of the run dir, a FIFO, permission denied)

    def to_json(self) -> dict[str, str]:
        out = {"path": self.path, "kind": self.kind}
        if self.note:
            out["note"] = self.note  # additive (schema 1): only on skipped inputs
        return out


@dataclass
class Report:
    """What `analyze` and `watch` print: the inputs, the run's summary and the findings."""
    tool_version: str
    inputs: list[InputInfo]
    run: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    series: dict[str, Any] | None = None   # the run's curves (doctor/curves.py): only with --series / html
    # a folder of runs (doctor/analyze_runs.py): one overview row per run, newest first; findings carry their run
    runs: list[dict[str, Any]] | None = None
    config: str | None = None  # the configuration file the command obeyed (doctor/settings.py), None for none

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "tool": {"name": "grpo-doctor", "version": self.tool_version} | ({"config": self.config} if self.config else {}),
            "inputs": [i.to_json() for i in self.inputs],
            "run": self.run,
            "findings": [f.to_json() for f in self.findings],
        } | ({"series": self.series} if self.series is not None else {}) | (
            {"runs": self.runs} if self.runs is not None else {})
