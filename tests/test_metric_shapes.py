"""Metric-shape failures from whatever is there (one printed row, one pasted completion): the primary finding, its
severity and the words that say how much one row shows. Inputs and their provenance: fixtures/metric-shapes/.
Expected values read off each file by hand."""
from __future__ import annotations

from pathlib import Path

import pytest

from doctor.analyze import analyze

SHAPES = Path(__file__).resolve().parent.parent / "fixtures" / "metric-shapes"
ONE_ROW = "One row cannot tell whether it lasts"
EARLY = "Too early to tell from one logged step"

CASES = [
    # file, (rule, severity) of findings[0], words of its message
    # one flat step among the run's first two is named at info: a healthy run starts so too ("too early to tell")
    ("one-row-flat-grad-zero.txt", ("GD610", "info"),
     ["reward_std was 0 (frac_reward_zero_std 1) in the only logged step (step 2/4, with grad_norm 0), with reward 1",
      EARLY]),
    ("one-row-flat-kl-grad.txt", ("GD610", "info"),
     ["in the only logged step (step 2/4), with reward 1", "(up to 0.001276) comes from the KL penalty (kl up to 1.03e-05)", EARLY]),
    ("one-row-clipped.txt", ("GD641", "warning"),
     ["completions/clipped_ratio was 1 in the only logged step (step 12/1200)", "(mean length 1024)", ONE_ROW]),
    ("one-row-grad-norm-zero.txt", ("GD630", "warning"),
     ["grad_norm was exactly 0 in the only logged step (step 5/3766) although reward_std was 0.3921", ONE_ROW]),
    ("one-row-clip-nan-trl.txt", ("GD641", "warning"),
     ["completions/mean_terminated_length was 0", ONE_ROW]),
    ("one-completion-garbled.txt", ("GD645", "warning"),
     ["The one pasted line reads as a degenerate completion (line 1: `is` repeated 6 times in a row)"]),
]


@pytest.mark.parametrize(("name", "first", "words"), CASES, ids=[c[0] for c in CASES])
def test_primary_finding_of_one_row(name, first, words):
    rep = analyze([str(SHAPES / name)])
    f = rep.findings[0]
    assert (f.rule_id, f.severity.name) == first
    for w in words:
        assert w in f.message, (w, f.message)
    assert not any(x.severity.name == "error" for x in rep.findings)   # one row: nothing said at error


def test_kl_nan_with_finite_loss_is_a_metric_not_diverged_weights():
    """kl and the clip ratios nan, loss 0.0311 and grad_norm 0.2874 finite, every completion clipped, reward 0: the
    truncation and the flat rewards come first (a flat row at step 30, not the run's first steps: a warning), the NaN
    is said to be a mean over no tokens, all at warning."""
    rep = analyze([str(SHAPES / "one-row-kl-nan-loss-finite.txt")])
    assert [(f.rule_id, f.severity.name) for f in rep.findings] == \
        [("GD610", "warning"), ("GD641", "warning"), ("GD620", "warning")]
    nan = rep.findings[2]
    assert "The only logged step (step 30/1500) shows kl nan" in nan.message
    assert "while loss 0.0311 and grad_norm 0.2874 are finite" in nan.message
    assert "weights are corrupted" not in nan.message and ONE_ROW in nan.message


def test_trl_clip_nan_row_names_the_nan_too():
    rep = analyze([str(SHAPES / "one-row-clip-nan-trl.txt")])
    nan = next(f for f in rep.findings if f.rule_id == "GD620")
    assert nan.severity.name == "warning"
    assert "The only logged step (logged row 1) shows clip_ratio/low_mean nan" in nan.message
    assert "while loss 0.0214 and grad_norm 0.331 are finite" in nan.message
