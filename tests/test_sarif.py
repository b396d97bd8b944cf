"""Issue 17 point 12: SARIF that validates against the OASIS SARIF 2.1.0 schema (vendored in fixtures/schemas with
its licence and provenance), with relative percent-encoded URIs against a uriBaseId, pseudo-inputs as logical
locations, help and helpUri per rule, and the exit code in invocations."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from render_cases import case_report, cases

from doctor.analyze import analyze
from doctor.render import sarif

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "schemas" / "sarif-schema-2.1.0.json")
                    .read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())  # uri-reference: rfc3986-validator


def _valid(doc: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors[:5]]


def _uris(doc: dict):
    for res in doc["runs"][0]["results"]:
        for loc in res.get("locations", []) + res.get("relatedLocations", []):
            if "physicalLocation" in loc:
                yield loc["physicalLocation"]["artifactLocation"]


def _check_relative(art: dict) -> None:
    uri = art["uri"]
    parts = urlsplit(uri)
    assert art["uriBaseId"] == "RUNDIR"
    assert not parts.scheme and not parts.netloc and not parts.query and not parts.fragment, uri
    assert not uri.startswith("/") and ".." not in uri.split("/") and " " not in uri and "#" not in uri, uri


def test_uri_reference_format_is_really_checked():
    # the validator must reject what the issue found (a space, '<preflight>'), or the schema test proves nothing
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
        {"message": {"text": "m"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "<preflight>"}}}]}]}]}
    assert list(VALIDATOR.iter_errors(bad))


@pytest.mark.parametrize("case", cases())
def test_every_fixture_report_is_valid_sarif(case):
    rep = case_report(case)
    doc = json.loads(sarif.render(rep))
    _valid(doc)
    run = doc["runs"][0]
    assert run["invocations"] == [{"executionSuccessful": True,
                                   "exitCode": 1 if any(f.severity.name == "error" for f in rep.findings) else 0}]
    for art in _uris(doc):
        _check_relative(art)
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["help"]["text"] and f"grpo-doctor explain {rule['id']}" in rule["help"]["text"]
        assert rule["helpUri"].startswith("https://")


def test_awkward_names_are_percent_encoded_and_relative(tmp_path):
    run = tmp_path / "my run #3" / "logs 100%"
    run.mkdir(parents=True)
    (run / "rank 0#a:b.log").write_text(
        "ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n", encoding="utf-8")
    (run.parent / "args.json").write_text("{}", encoding="utf-8")
    doc = json.loads(sarif.render(analyze([str(tmp_path / "my run #3")])))
    _valid(doc)
    arts = list(_uris(doc))
    assert arts and arts[0]["uri"] == "logs%20100%25/rank%200%23a%3Ab.log"
    assert unquote(arts[0]["uri"]) == "logs 100%/rank 0#a:b.log"
    assert str(tmp_path) not in json.dumps(doc)
    assert doc["runs"][0]["originalUriBaseIds"]["RUNDIR"]["description"]["text"]


def test_undecodable_file_name_bytes_are_percent_encoded(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    name = b"log\xff.txt".decode("utf-8", "surrogateescape")
    (run / name).write_text("ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    doc = json.loads(sarif.render(analyze([str(run)])))
    _valid(doc)
    assert next(_uris(doc))["uri"] == "log%FF.txt"


def test_preflight_pseudo_inputs_are_logical_locations():
    from doctor.preflight import preflight_command
    rep = preflight_command(["swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2-7B-Instruct",
                             "--num_generations", "3", "--per_device_train_batch_size", "2"], gpu_mem_gib=24)
    assert any(e.path.startswith("<") for f in rep.findings for e in f.evidence)
    doc = json.loads(sarif.render(rep))
    _valid(doc)
    assert "<" not in json.dumps([r["locations"] for r in doc["runs"][0]["results"]])
    names = {ll["name"] for r in doc["runs"][0]["results"] for loc in r["locations"]
             for ll in loc.get("logicalLocations", [])}
    assert "preflight" in names
    assert "originalUriBaseIds" not in doc["runs"][0]


def test_help_uri_is_the_first_public_reference():
    from doctor.registry import load_catalog
    doc = json.loads(sarif.render(case_report("real-batch-div-grad-accum")))
    rule = doc["runs"][0]["tool"]["driver"]["rules"][0]
    meta = next(m for m in load_catalog() if m.id == rule["id"])
    assert rule["helpUri"] == meta.references[0] and rule["helpUri"].startswith("https://github.com/modelscope/")


def test_cli_sarif_carries_the_exit_code(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n")
    for fail_on, code in (("error", 1), ("never", 0)):
        p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(log), "-f", "sarif", "--fail-on",
                            fail_on], capture_output=True, check=False, timeout=120)
        assert p.returncode == code
        assert json.loads(p.stdout)["runs"][0]["invocations"][0]["exitCode"] == code
