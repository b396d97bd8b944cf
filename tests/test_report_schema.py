"""Issue 17 point 15: the published JSON Schema of the report (doctor/data/report-schema-1.json, printed by
`grpo-doctor schema`) validates every golden report, refuses reports that break the contract, and keeps
DESIGN.md's additive fields (known_issues, action, verify, prevent, command, top-level series) allowed."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.registry import CATEGORIES
from doctor.render.jsonr import SCHEMA_PATH, schema_text

jsonschema = pytest.importorskip("jsonschema")
ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
GOLDENS = sorted((ROOT / "fixtures").glob("**/*.expected.json"))


def _errors(doc) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def test_schema_is_a_valid_2020_12_schema_and_categories_match_the_catalog():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$defs"]["finding"]["properties"]["category"]["enum"] == list(CATEGORIES)
    assert len(GOLDENS) > 150


@pytest.mark.parametrize("path", GOLDENS, ids=[str(p.relative_to(ROOT / "fixtures")) for p in GOLDENS])
def test_every_golden_validates(path):
    assert not _errors(json.loads(path.read_text(encoding="utf-8")))


def _one() -> dict:
    return json.loads((ROOT / "fixtures" / "logs" / "real-batch-div-grad-accum.expected.json").read_text())


@pytest.mark.parametrize("breakage", [
    lambda d: d["findings"][0].pop("rule_id"),
    lambda d: d["findings"][0].update(severity="fatal"),
    lambda d: d["findings"][0].update(category="made-up"),
    lambda d: d["findings"][0].update(count=0),
    lambda d: d["findings"][0]["evidence"][0].update(line="45"),
    lambda d: d.update(schema_version=2),
    lambda d: d.pop("inputs"),
    lambda d: d["findings"][0].update(role="cause"),
    lambda d: d["findings"][0].update(confidence="high"),
])
def test_contract_breaks_are_refused(breakage):
    d = _one()
    breakage(d)
    assert _errors(d)


def test_additive_fields_of_other_work_are_allowed():
    d = copy.deepcopy(_one())
    f = d["findings"][0]
    f.update(action="relaunch", verify="rerun preflight", prevent="pin the flags", command="swift rlhf ...",
             raised_by=[{"package": "trl", "versions": "0.14-0.16", "module": "trl/trainer/grpo_trainer.py",
                         "function": "GRPOTrainer.__init__", "kind": "ValueError"}],
             known_issues=[{"thread": "modelscope/ms-swift#4081", "url": "https://github.com/modelscope/ms-swift/issues/4081",
                            "title": "t", "state": "closed", "confidence": "confirmed", "score": 0.9}],
             something_new={"x": 1})
    d["series"] = {"loss": [[1, 0.5]]}
    d["run"]["lines"] = {"start": 1, "end": 10}
    d["run"]["inferred_versions"] = {"ms-swift": {"versions": "3.6-3.11", "from": "the wording of the error"}}
    assert not _errors(d)


def test_raised_by_and_inferred_versions_are_typed():
    """Issue 14 point 3: the additive fields are described in the schema, and a wrong shape is refused."""
    rb = SCHEMA["$defs"]["raised_by"]["properties"]
    assert {"package", "versions", "module", "function", "kind"} <= set(rb)
    assert "inferred_versions" in SCHEMA["properties"]["run"]["properties"]
    d = copy.deepcopy(_one())
    d["findings"][0]["raised_by"] = [{"package": 1}]
    assert _errors(d)
    d = copy.deepcopy(_one())
    d["run"]["inferred_versions"] = {"ms-swift": "3.6-3.11"}
    assert _errors(d)


def test_cli_prints_the_schema():
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "schema"], capture_output=True, check=False, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout) == SCHEMA and p.stdout.decode() == schema_text()


def test_live_report_validates(tmp_path):
    from doctor.analyze import analyze
    from doctor.render import jsonr
    log = tmp_path / "x.log"
    log.write_text("ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"
                   "{'loss': nan, 'grad_norm': inf}\n")
    assert not _errors(json.loads(jsonr.render(analyze([str(log)]))))


def test_confidence_and_alternatives_are_typed():
    """Issue 29 point 3: every finding's confidence is one of three levels; alternatives are categories."""
    props = SCHEMA["$defs"]["finding"]["properties"]
    assert props["confidence"]["enum"] == ["certain", "likely", "possible"]
    assert props["alternatives"]["items"]["enum"] == list(CATEGORIES)
    d = copy.deepcopy(_one())
    assert d["findings"][0]["confidence"] == "certain"   # the goldens carry it
    d["findings"][0].update(confidence="possible", alternatives=["cuda-oom", "nccl-timeout"])
    assert not _errors(d)
    for bad in ({"confidence": "sure"}, {"alternatives": ["made-up"]}, {"alternatives": "cuda-oom"}):
        d = copy.deepcopy(_one())
        d["findings"][0].update(bad)
        assert _errors(d), bad
