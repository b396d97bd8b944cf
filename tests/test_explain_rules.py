"""`explain` takes what --select takes (id, slug, category, prefix; case and _/- normalised); `rules` has a
header and filters by --category and --select."""
from __future__ import annotations

import json

from test_cli import assert_one_line_error, run


def test_explain_by_category_slug_and_normalised_names():
    out = run("explain", "CUDA_OOM").stdout.decode()
    assert "GD201" in out and "category: cuda-oom" in out
    out = run("explain", "Train_Batch_Not_Divisible").stdout.decode()
    assert out.startswith("GD101  train-batch-not-divisible")
    out = run("explain", "GD10").stdout.decode()
    assert all(r in out for r in ("GD101", "GD102", "GD103"))


def test_explain_unknown_is_a_suggestion():
    assert_one_line_error(run("explain", "GD999X"), "GD999X", "did you mean")
    assert_one_line_error(run("explain", "cuda-om"), "did you mean", "cuda-oom")


def test_rules_header_and_filters():
    lines = run("rules").stdout.decode().splitlines()
    assert lines[0].split() == ["ID", "SEVERITY", "CATEGORY", "SLUG"]
    lines = run("rules", "--category", "nccl_timeout").stdout.decode().splitlines()
    assert len(lines) > 1 and all("nccl-timeout" in line for line in lines[1:])
    lines = run("rules", "--select", "GD1").stdout.decode().splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["GD101", "GD102", "GD103", "GD104"]
    data = json.loads(run("rules", "--select", "GD1", "--format", "json").stdout)
    assert [r["id"] for r in data] == ["GD101", "GD102", "GD103", "GD104"]
    assert_one_line_error(run("rules", "--category", "cuda-om"), "--category", "did you mean", "cuda-oom")
    assert_one_line_error(run("rules", "--category", "train-batch-not-divisible"), "--category")
