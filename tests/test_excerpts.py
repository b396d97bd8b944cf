"""An excerpt is judged by what it shows: one metrics row with every group flat is named, at info ("too early to
tell": a flat first step is common in a healthy run), with what one row cannot tell; with a gradient, the finding says
where it can come from."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader


def run(text: str):
    s = Session(load_catalog(), console_metrics=True)
    for line in LineReader("m.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


ROW = ("{'loss': 0.0, 'grad_norm': %s, 'learning_rate': 1e-06, 'rewards/accuracy_reward/mean': 0.5, "
       "'reward': 0.5, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, 'kl': 0.0, 'epoch': 0.01}\n")


def test_one_flat_row_without_gradient_is_info():
    found = run(ROW % "0.0")
    assert found and found[0].rule_id == "GD610" and found[0].severity.name == "info"
    assert "only logged step" in found[0].message and "grad_norm 0" in found[0].message


def test_one_flat_row_with_a_gradient_is_info_that_says_where_it_comes_from():
    """kl 0 in the row: the KL penalty gives no gradient either, so not that."""
    found = run(ROW % "0.31")
    assert found and found[0].rule_id == "GD610" and found[0].severity.name == "info"
    msg = found[0].message
    assert "(up to 0.31) comes from another term of the loss (kl was 0, so not the KL penalty" in msg
    assert "One row cannot tell whether it lasts" in msg
