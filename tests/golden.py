"""The one golden collector: every case of fixtures/logs (analyze), fixtures/ckpt (check-ckpt) and
fixtures/preflight (preflight) is run through the real tool and compared with ``<case>.expected.json`` beside it.

Run with GRPO_DOCTOR_UPDATE_GOLDEN=1 to rewrite every golden, then review the diff by hand.

``provenance.toml`` of each case says where it came from (``source``) and what a person expects of the report:
``expect_category`` (findings[0].category, checked by hand against the real run or the dev-log label),
``expect_rules``, ``forbid_rules``, ``expect_no_error`` (healthy and control runs), ``excerpt`` (a piece cut out of a
run's output with an issue's title above it: `watch` replaying it reads a run that stopped where the paste does, which
analyze reads as where its author stopped copying, so tests/test_watch_replay.py leaves it out). Checkpoint cases also say
which paths to check (``check``) and optionally ``expect`` (--expect full|lora); preflight cases give
``gpu_mem`` and ``swift_version``.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
UPDATE = os.environ.get("GRPO_DOCTOR_UPDATE_GOLDEN") == "1"


@contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _analyze(root: Path, case: str, prov: dict) -> dict:
    from doctor.analyze import analyze
    with _cwd(root):
        return analyze([case]).to_json()


def _check_ckpt(root: Path, case: str, prov: dict) -> dict:
    import doctor.sources.checkpoint as ck
    from doctor.ckpt import check_paths
    old = ck.LOOK_UP_BASE
    ck.LOOK_UP_BASE = False  # goldens must not depend on whether this machine has the base model args.json names
    try:
        with _cwd(root):
            return check_paths([f"{case}/{p}" for p in prov["check"]], expect=prov.get("expect")).to_json()
    finally:
        ck.LOOK_UP_BASE = old


def _preflight(root: Path, case: str, prov: dict) -> dict:
    from doctor.preflight import preflight_command
    argv = shlex.split((root / case / "command.txt").read_text(encoding="utf-8"))
    with _cwd(root / case):
        return preflight_command(argv, {}, gpu_mem_gib=prov.get("gpu_mem"), swift_version=prov.get("swift_version"),
                                 live_gpu=False).to_json()


@dataclass(frozen=True)
class Kind:
    name: str
    root: Path
    run: Callable[[Path, str, dict], dict]

    def cases(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []


KINDS = {k.name: k for k in (Kind("logs", FIXTURES, _analyze), Kind("ckpt", ROOT / "fixtures" / "ckpt", _check_ckpt),
                             Kind("preflight", ROOT / "fixtures" / "preflight", _preflight))}


def all_cases() -> list[tuple[str, str]]:
    """(kind, case) for every golden case of every kind."""
    return [(k.name, c) for k in KINDS.values() for c in k.cases()]


def cases() -> list[str]:
    """The analyze cases (fixtures/logs), for tests that feed their logs elsewhere (scan, watch replay)."""
    return KINDS["logs"].cases()


def provenance(case: str, kind: str = "logs") -> dict:
    return tomllib.loads((KINDS[kind].root / case / "provenance.toml").read_text(encoding="utf-8"))


def report_for(case: str, kind: str = "logs") -> dict:
    """The JSON report of a case, run from the kind's fixture folder (relative paths), the tool version blanked."""
    k = KINDS[kind]
    rep = k.run(k.root, case, provenance(case, kind))
    rep["tool"]["version"] = "X"
    return rep


def golden_path(case: str, kind: str = "logs") -> Path:
    return KINDS[kind].root / f"{case}.expected.json"


def write_golden(case: str, rep: dict, kind: str = "logs") -> None:
    golden_path(case, kind).write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def expectation_errors(case: str, prov: dict, findings: list[dict]) -> list[str]:
    """What a person expects of the report (provenance.toml) that the findings do not show."""
    errs = []
    if not prov.get("source"):
        errs.append(f"{case}: provenance.toml needs a source")
    if prov.get("expect_no_error"):
        bad = [f["rule_id"] + " " + f["category"] for f in findings if f["severity"] == "error"]
        if bad:
            errs.append(f"{case}: a healthy/control case must have no error finding, got {bad}")
    if "expect_category" in prov:
        if not findings:
            errs.append(f"{case}: expected {prov['expect_category']}, got no finding")
        elif findings[0]["category"] != prov["expect_category"]:
            errs.append(f"{case}: findings[0] is {findings[0]['rule_id']} {findings[0]['category']}, "
                        f"expected {prov['expect_category']}")
    got = {f["rule_id"] for f in findings}
    errs += [f"{case}: {rid} should fire, got {sorted(got)}" for rid in prov.get("expect_rules", []) if rid not in got]
    errs += [f"{case}: {rid} must not fire" for rid in prov.get("forbid_rules", []) if rid in got]
    return errs
