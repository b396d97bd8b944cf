"""Issue 29 point 3: every finding says how sure its category is (certain | likely | possible), derived from the kind of
rule that made it (doctor/registry.py RuleMeta.confidence_level, rules/README.md "Confidence"), and a possible one
names the other categories the code weighed (doctor/confidence.py). Every output format shows it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor import confidence, known
from doctor.analyze import analyze
from doctor.classify.structure import Entry, classify
from doctor.engine import Session
from doctor.model import CONFIDENCES, Evidence, Finding, RaisedBy, Report, Severity, weaker
from doctor.registry import CatalogError, _load_one, find_rule, load_catalog
from doctor.render import github, html, jsonr, markdown, sarif, text
from doctor.signals import ExceptionInfo, Frame, Where
from doctor.sources import reports

ROOT = Path(__file__).resolve().parent.parent
DEVLOGS = ROOT / "fixtures" / "devlogs"


def _level(rule_id: str) -> str:
    meta = find_rule(rule_id)
    assert meta is not None
    return meta.confidence_level


# ---------------------------------------------------------------- the derivation from the rule's kind


def test_levels_follow_the_kind_of_rule():
    assert _level("GD101") == "certain"        # a signature (patterns + fixer)
    assert _level("GD450") == "certain"        # an exception signature
    assert _level("GD220") == "certain"        # a signature that runs with the fallback rules
    assert _level("GD201") == "certain"        # a check run with the other rules
    assert _level("GD990") == "likely"         # the structural classifier
    assert _level("GD320") == "likely"         # a stall read from progress (fallback check)
    assert _level("GD324") == "possible"       # last resort: how the log ends
    assert _level("GD999") == "possible"       # a failure nothing names (TOML override)
    assert _level("GD625") == "possible"       # a sign, not the failure (TOML override)
    assert _level("GD613") == "likely"         # a trend (TOML override)
    assert {m.confidence_level for m in load_catalog()} <= set(CONFIDENCES)


def test_weaker_and_make_never_claim_more_than_the_rule():
    assert weaker("certain", "likely") == "likely" and weaker("possible", "certain") == "possible"
    from doctor.rules import build_rule
    rule = build_rule(find_rule("GD990"))
    assert rule.make(confidence="certain").confidence == "likely"
    assert rule.make(confidence="possible", alternatives=("cuda-oom",)).alternatives == ("cuda-oom",)


def test_a_bad_confidence_value_is_refused(tmp_path):
    fam = tmp_path / "deps"
    fam.mkdir()
    p = fam / "GD459-x.toml"
    p.write_text('id = "GD459"\nslug = "x"\ncategory = "other"\nseverity = "error"\ntitle = "t"\nwhy = "w"\n'
                 'confidence = "sure"\n[[patterns]]\nliterals = ["x"]\nregex = "x"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="confidence"):
        _load_one(p)


def _finish(text: str, tmp_path) -> list[Finding]:
    log = tmp_path / "x.log"
    log.write_text(text, encoding="utf-8")
    return analyze([str(log)]).findings


def test_a_signature_raised_at_its_site_is_certain(tmp_path):
    found = _finish("Traceback (most recent call last):\n"
                    '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 10, in __init__\n'
                    "    raise ValueError(...)\n"
                    "ValueError: The global train batch size (3 x 4) must be evenly divisible by the number of "
                    "generations per prompt (8).\n", tmp_path)
    assert found[0].rule_id == "GD101" and found[0].confidence == "certain" and found[0].alternatives == ()
    assert found[0].to_json()["confidence"] == "certain" and "alternatives" not in found[0].to_json()


def test_the_raise_site_index_makes_a_structural_verdict_certain():
    """devlogs 027: an ms-swift argument check's ValueError, classified by structure (GD990), its wording placed by the
    raise-site index in ms-swift's RLHFArguments._check_rlhf: the check that raised it is known."""
    [case] = DEVLOGS.glob("027-*")
    f = analyze([str(case)]).findings[0]
    assert f.rule_id == "GD990" and f.raised_by and f.confidence == "certain"


def test_a_raise_site_does_not_certify_an_entry_that_explains_another_reason_of_its_file(tmp_path):
    """vLLM's get_config raises for a missing config file, an unreachable hub and an unknown model_type alike: the
    entry for the versions (matched on the file) stays likely when its site is known; the entry that reads the
    message of the missing-config branch names the argument, and is certain of it."""
    from doctor.classify.structure import load, pins_branch
    entries = {e.id: e for e in load()}
    assert not pins_branch(entries["vllm-model-config"]) and pins_branch(entries["vllm-no-model-config"])
    assert pins_branch(entries["vllm-engine"])       # every raise under vllm/ is the engine's: no mark, certain
    trace = ("Traceback (most recent call last):\n"
             '  File "/x/site-packages/vllm/transformers_utils/config.py", line 200, in get_config\n'
             "    config = AutoConfig.from_pretrained(\n")
    versions = _finish(trace + "KeyError: 'qwen9'\n", tmp_path)
    assert versions[0].rule_id == "GD993" and versions[0].confidence == "likely"
    missing = _finish("ValueError: No supported config format found in meta-llama/Llama-3.3-70B-Instruct\n", tmp_path)
    assert missing[0].rule_id == "GD990" and missing[0].confidence == "certain", missing[0]
    f = Finding("GD993", "structural-version-clash", "import-or-dependency-error", Severity.error, "t", "m",
                confidence="likely", branch_known=False)
    site = RaisedBy("vllm", "0.6", "vllm/transformers_utils/config.py", "get_config", "ValueError")
    assert confidence.by_raise_site(f, (site,)) == "likely"


def test_by_raise_site_only_for_a_pinned_exception_of_a_structural_rule():
    f = Finding("GD990", "structural-argument-error", "argument-error-other", Severity.error, "t", "m",
                confidence="likely")
    exc = RaisedBy("trl", "0.15-0.16", "trl/trainer/grpo_trainer.py", "GRPOTrainer.__init__", "ValueError")
    assert confidence.by_raise_site(f, (exc,)) == "certain"
    line = RaisedBy("vllm", "0.8", "vllm/v1/engine/core.py", "EngineCore.run", "error")
    assert confidence.by_raise_site(f, (line,)) == "likely"                  # a log line, not an exception
    two = RaisedBy("ms-swift", "3.1-3.3", "swift/trainers/rlhf_trainer/grpo_trainer.py", "GRPOTrainer.__init__",
                   "ValueError")
    assert confidence.by_raise_site(f, (exc, two)) == "likely"              # two packages raise the wording
    assert confidence.by_raise_site(f, ()) == "likely"
    unknown = Finding("GD999", "unrecognised-failure", "other", Severity.error, "t", "m", confidence="possible")
    assert confidence.by_raise_site(unknown, (exc,)) == "possible"          # category other: the site names none
    child = Finding("GD307", "torchrun-child-failed", "other", Severity.error, "t", "m", confidence="likely")
    assert confidence.by_raise_site(child, (exc,)) == "likely"              # not a structural rule


def test_a_metric_finding_beside_a_failure_of_another_kind_is_likely():
    # the rows prove reward_std 0; that they are the run's failure is only likely when the log also shows a crash
    flat = Finding("GD610", "reward-flat", "reward-zero-or-flat", Severity.error, "t", "m", confidence="certain")
    crash = Finding("GD326", "log-ends-in-error-line", "other", Severity.warning, "t", "m", confidence="possible")
    info = Finding("GD803", "x", "checkpoint-bloat", Severity.info, "t", "m", confidence="certain")
    assert confidence.assess([flat, crash])[0].confidence == "likely"
    assert confidence.assess([flat])[0].confidence == "certain"
    assert confidence.assess([flat, info])[0].confidence == "certain"     # an info note is no failure
    nan = Finding("GD620", "nan", "loss-nan-or-inf", Severity.error, "t", "m", confidence="certain")
    assert confidence.assess([flat, nan])[0].confidence == "certain"      # two readings of the same rows


def test_the_fallback_for_an_unknown_failure_is_not_certain(tmp_path):
    found = _finish("Traceback (most recent call last):\n"
                    '  File "/home/u/train.py", line 3, in <module>\n'
                    "    frobnicate()\n"
                    "ZorkError: the grue ate the batch\n", tmp_path)
    assert found[0].rule_id == "GD999" and found[0].confidence == "possible"
    assert "alternatives" in found[0].to_json()


def test_an_excerpt_of_one_metric_row_is_likely(tmp_path):
    found = _finish("{'loss': 0.0, 'grad_norm': 0.0, 'reward': 0.5, 'reward_std': 0.3, 'learning_rate': 1e-06, "
                    "'epoch': 0.01, 'global_step/max_steps': '5/1000'}\n", tmp_path)
    gd630 = [f for f in found if f.rule_id == "GD630"]
    assert gd630 and gd630[0].confidence == "likely"


# ---------------------------------------------------------------- alternatives: what else was weighed


def _f(rule_id: str, category: str, level: str, severity: Severity = Severity.error,
       alternatives: tuple[str, ...] = ()) -> Finding:
    return Finding(rule_id, rule_id.lower(), category, severity, "t", "m", confidence=level,
                   alternatives=alternatives, evidence=(Evidence("x.log", 3, "RuntimeError: boom"),))


def test_a_possible_finding_names_the_other_findings_categories(monkeypatch):
    monkeypatch.setattr(known, "for_finding", lambda f: [])
    out = confidence.assess([_f("GD999", "other", "possible"), _f("GD301", "nccl-timeout", "certain"),
                             _f("GD631", "other", "certain", Severity.info), _f("GD502", "cuda-oom", "possible",
                                                                                Severity.warning)])
    assert out[0].alternatives == ("nccl-timeout", "cuda-oom")   # its own category and info findings left out
    assert out[1].alternatives == () and out[3].alternatives == ("other", "nccl-timeout")


def test_a_similarity_only_finding_is_possible_with_the_threads_categories(monkeypatch):
    """Nothing but the known-issue threads (doctor/known) points anywhere: the categories of the threads that share
    the failure's mechanism (raise site, or type + component + phase) are its alternatives, the rule's own runners-up
    first; a thread alike in words only adds none; a certain finding keeps none."""
    class M:
        def __init__(self, category, basis="raise-site"):
            self.category = category
            self.basis = basis
    monkeypatch.setattr(known, "for_finding", lambda f: [
        M("dataset-or-template-error"), M("other"), M("reward-function-error", "similarity"),
        M("cuda-oom", "type-component-phase")])
    [f] = confidence.assess([_f("GD999", "other", "possible", alternatives=("vllm-engine-error",))])
    assert f.confidence == "possible"
    assert f.alternatives == ("vllm-engine-error", "dataset-or-template-error", "cuda-oom")
    [g] = confidence.assess([_f("GD990", "argument-error-other", "likely", alternatives=("vllm-engine-error",))])
    assert g.alternatives == ()


def test_alternatives_are_capped():
    out = confidence.assess([_f("GD999", "other", "possible", alternatives=("a1", "a2", "a3", "a4", "a5"))])
    assert len(out[0].alternatives) == confidence.MAX_ALTERNATIVES


def test_the_structural_table_reports_its_runners_up():
    first = Entry(id="a", category="vllm-oom-or-kv-cache", doc="d", backed_by=(), types=frozenset({"ValueError"}))
    same = Entry(id="b", category="vllm-oom-or-kv-cache", doc="d", backed_by=(), types=frozenset({"ValueError"}))
    other = Entry(id="c", category="vllm-engine-error", doc="d", backed_by=(), deepest_lib=("vllm/",))
    miss = Entry(id="d", category="cuda-oom", doc="d", backed_by=(), types=frozenset({"OutOfMemoryError"}))
    exc = ExceptionInfo("ValueError", "no room", (), Where("x.log", 1), None, 1, "ValueError: no room")
    frames = (Frame("/x/site-packages/vllm/worker.py", 3, "init"),)
    v = classify(exc, frames, (first, same, miss, other))
    assert v is not None and v.entry.id == "a" and v.runners_up == ("vllm-engine-error",)


def test_session_findings_carry_a_level(tmp_path):
    s = Session()
    found = s.finish()
    assert found == [] or all(f.confidence in CONFIDENCES for f in found)


# ---------------------------------------------------------------- every output format


def _report() -> Report:
    return Report("0.0", [], {}, [
        _f("GD101", "batch-divisibility", "certain"),
        _f("GD990", "argument-error-other", "likely"),
        _f("GD999", "other", "possible", alternatives=("cuda-oom", "nccl-timeout")),
    ])


@pytest.fixture(autouse=False)
def no_known(monkeypatch):
    monkeypatch.setattr(known, "for_finding", lambda f: [])


def test_json(no_known):
    doc = json.loads(jsonr.render(_report()))
    assert [f["confidence"] for f in doc["findings"]] == ["certain", "likely", "possible"]
    assert "alternatives" not in doc["findings"][0] and doc["findings"][2]["alternatives"] == ["cuda-oom",
                                                                                             "nccl-timeout"]


def test_text_tags_only_what_is_not_certain(no_known):
    out = text.render(_report())
    lines = [line for line in out.splitlines() if line.lstrip().startswith(("1.", "2.", "3."))]
    assert "(likely)" not in lines[0] and "(possible" not in lines[0] and "certain" not in lines[0]
    assert "(likely)" in lines[1]
    assert "(possible; also considered: cuda-oom, nccl-timeout)" in lines[2]


def test_markdown(no_known):
    out = markdown.render(_report())
    assert "confidence `certain`" in out and "confidence `likely`" in out
    assert "confidence `possible` (also considered: `cuda-oom`, `nccl-timeout`)" in out


def test_sarif(no_known):
    doc = json.loads(sarif.render(_report()))
    props = [r["properties"] for r in doc["runs"][0]["results"]]
    assert [p["confidence"] for p in props] == ["certain", "likely", "possible"]
    assert "alternatives" not in props[0] and props[2]["alternatives"] == ["cuda-oom", "nccl-timeout"]


def test_html(no_known):
    out = html.render(_report())
    assert out.count('<span class="conf">') == 3 and '<span class="conf">possible</span>' in out
    assert "also considered: cuda-oom, nccl-timeout" in out


def test_github(no_known):
    lines = github.render(_report()).splitlines()
    assert "(likely)" not in lines[0] and "title=GD990 t (likely)" in lines[1]
    assert "title=GD999 t (possible)" in lines[2] and "Also considered: cuda-oom%2C" not in lines[2]
    assert "Also considered: cuda-oom, nccl-timeout" in lines[2]


def test_hostile_alternatives_are_escaped(no_known):
    """Alternatives come from the catalog's categories, but a node report read back is input: escaped like the rest."""
    bad = _f("GD999", "other", "possible", alternatives=("<b>[bold]x[/bold]</b>\x1b[31m",))
    rep = Report("0.0", [], {}, [bad])
    assert "<b>[bold]" not in html.render(rep) and "&lt;b&gt;[bold]" in html.render(rep)
    assert "\x1b" not in text.render(rep) and "\x1b" not in github.render(rep)
    assert "[bold]x[/bold]" in text.render(rep)             # shown as text, not taken as rich markup
    assert "`<b>[bold]x[/bold]</b>" in markdown.render(rep)  # a code span


def test_a_node_report_keeps_its_levels_and_fills_in_old_ones():
    doc = json.loads(jsonr.render(_report()))
    nr = reports.load("r.json", json.dumps(doc))
    assert nr is not None
    assert [f.confidence for f in nr.findings] == ["certain", "likely", "possible"]
    assert nr.findings[2].alternatives == ("cuda-oom", "nccl-timeout")
    for f in doc["findings"]:
        f.pop("confidence")
    old = reports.load("r.json", json.dumps(doc))
    assert old is not None and [f.confidence for f in old.findings] == ["certain", "likely", "possible"]
