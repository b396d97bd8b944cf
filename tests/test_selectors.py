"""--select / --ignore: ids, prefixes, ALL, slugs and categories, normalised; an unknown selector is a usage
error with a suggestion (one typo must not turn a CI gate off); ignoring mutes a finding without making the
fallback claim that no rule recognised the failure."""
from __future__ import annotations

import json

import pytest
from test_cli import BATCH_LOG, assert_one_line_error, run

from doctor.registry import load_catalog
from doctor.selectors import SelectorError, resolve, select_rules


def ids(metas):
    return {m.id for m in metas}


def test_prefixes_all_and_normalisation():
    cat = load_catalog()
    assert ids(select_rules(cat, {"GD10"})) == {"GD101", "GD102", "GD103", "GD104"}
    assert ids(select_rules(cat, {"gd1"})) == {"GD101", "GD102", "GD103", "GD104"}
    assert ids(select_rules(cat, {"ALL"})) == ids(cat)
    assert ids(select_rules(cat, {"CUDA_OOM"})) == ids(select_rules(cat, {"cuda-oom"})) != set()
    assert ids(select_rules(cat, {"Train_Batch_Not_Divisible"})) == {"GD101"}
    assert ids(select_rules(cat, None, {"GD1", "gd2"})) == {m.id for m in cat if m.id[2] not in "12"}


@pytest.mark.parametrize("token,hint", [("GD999X", "GD999"), ("GD105", "GD10"), ("cuda-om", "cuda-oom"),
                                        ("train-batch-not-divisable", "train-batch-not-divisible")])
def test_unknown_selector_is_an_error_with_a_suggestion(token, hint):
    with pytest.raises(SelectorError) as e:
        resolve(load_catalog(), {token}, None)
    assert token in str(e.value) and "did you mean" in str(e.value) and hint in str(e.value)


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_cli_unknown_selector_exits_2(option):
    p = run("analyze", str(BATCH_LOG), option, "GD999X")
    assert_one_line_error(p, option, "GD999X", "did you mean")
    p = run("check-ckpt", str(BATCH_LOG.parent), option, "nonsense-rule")
    assert_one_line_error(p, option, "nonsense-rule")
    p = run("preflight", option, "GD10Z", "--", "swift", "rlhf", "--rlhf_type", "grpo")
    assert_one_line_error(p, option, "GD10Z")


@pytest.mark.parametrize("sel", ["GD10", "GD1", "CUDA_OOM,GD1", "ALL", "batch_divisibility"])
def test_cli_groups_select(sel):
    p = run("analyze", str(BATCH_LOG), "--select", sel, "--format", "json")
    assert p.returncode == 1, p.stderr
    assert "GD101" in {f["rule_id"] for f in json.loads(p.stdout)["findings"]}


def test_ignore_mutes_without_the_fallback_claiming_an_unknown_failure():
    p = run("analyze", str(BATCH_LOG), "--ignore", "GD101", "--format", "json")
    got = {f["rule_id"] for f in json.loads(p.stdout)["findings"]}
    assert "GD101" not in got and "GD999" not in got, got
    assert p.returncode == 0, got
    p = run("analyze", str(BATCH_LOG), "--ignore", "batch-divisibility")
    assert "No rule recognises" not in p.stdout.decode()


def test_former_ids_of_merged_rules_still_select_them():
    """GD903/GD904 (watch's GPU checks) became part of GD504/GD502: old --select, --ignore and explain still work."""
    cat = load_catalog()
    assert ids(select_rules(cat, {"GD903"})) == {"GD504"} and ids(select_rules(cat, {"gd904"})) == {"GD502"}
    assert {"GD502", "GD504"} <= ids(select_rules(cat, {"GD90"}))  # the prefix of the former ids too
    assert "GD504" not in ids(select_rules(cat, None, {"GD903"}))  # --ignore with the old id mutes it
    p = run("explain", "GD903")
    assert p.returncode == 0 and b"GD504" in p.stdout
