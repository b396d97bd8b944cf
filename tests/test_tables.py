"""Metric tables pasted as text (sources/tables.py): markdown, tab-, comma- or space-separated, wandb's train/ names;
read from a log's tail only when the log gave no metric row of its own.

Column names: trl 0.29.1 and ms-swift 4.6.0 metric keys (fixtures/metric-shapes/PROVENANCE.md); the values are
invented and checked by hand in each test."""
from __future__ import annotations

import io
import math
import sys
from pathlib import Path

from conftest import lines_of

from doctor.analyze import analyze
from doctor.sources.tables import table_rows

ROOT = Path(__file__).resolve().parent.parent
PASTED = ROOT / "fixtures" / "logs" / "edge-pasted-metrics-table" / "pasted.md"


def rows_of(text: str) -> list[tuple[int, dict]]:
    return [(line.where.line, values) for line, values in table_rows(lines_of(text))]


def test_markdown_table_with_wandb_names():
    got = rows_of(PASTED.read_text())
    assert [line for line, _ in got] == [5, 6, 7]
    assert got[0][1] == {"step": 10.0, "loss": 0.0, "grad_norm": 0.0011, "reward": 0.0, "reward_std": 0.0,
                         "frac_reward_zero_std": 1.0, "rewards/accuracy_reward/mean": 0.0,
                         "completions/clipped_ratio": 1.0, "kl": 0.00006}


def test_tab_comma_and_space_separated():
    tsv = "Step\ttrain/loss\ttrain/reward\ttrain/reward_std\n1\t0.01\t0.5\t0.25\n2\t0.02\t0.75\tnan\n"
    (l1, r1), (l2, r2) = rows_of(tsv)
    assert (l1, r1) == (2, {"step": 1.0, "loss": 0.01, "reward": 0.5, "reward_std": 0.25})
    assert l2 == 3 and r2["step"] == 2.0 and r2["reward"] == 0.75 and math.isnan(r2["reward_std"])
    csv = "step,loss,reward,reward_std\n5,0.1,0.0,0.0\n"
    assert rows_of(csv) == [(2, {"step": 5.0, "loss": 0.1, "reward": 0.0, "reward_std": 0.0})]
    aligned = "step    loss     reward   reward_std\n   7    0.3      1.0      0.0\n"
    assert rows_of(aligned) == [(2, {"step": 7.0, "loss": 0.3, "reward": 1.0, "reward_std": 0.0})]


def test_what_is_not_a_metrics_table():
    # one trainer key only; a row with a word in a number column; an eval table is not a train step
    assert rows_of("| name | loss |\n|---|---|\n| a | 0.1 |\n") == []
    assert rows_of("| step | loss | reward |\n|---|---|---|\n| 1 | n/a | 0.5 |\n") == []
    assert rows_of("| step | eval/loss | eval/reward |\n|---|---|---|\n| 1 | 0.3 | 0.5 |\n") == []
    # a sentence that names two keys is a header only if rows of as many numbers follow it
    assert rows_of("the loss and reward look odd\n1 2 3 4 5\n") == []


def test_pasted_table_alone_gives_the_flat_and_truncated_findings():
    rep = analyze([str(PASTED)])
    assert [(f.rule_id, f.severity.name) for f in rep.findings] == [("GD610", "error"), ("GD641", "warning")]
    assert "in all 3 logged steps (steps 10-30)" in rep.findings[0].message
    assert rep.findings[0].evidence[0].line == 5


def test_one_row_table_is_a_warning_that_says_so(tmp_path):
    p = tmp_path / "row.md"
    p.write_text("| step | loss | grad_norm | reward | reward_std | frac_reward_zero_std |\n"
                 "|---|---|---|---|---|---|\n| 40 | 0.0 | 0.0 | 1.0 | 0.0 | 1.0 |\n")
    (f,) = analyze([str(p)]).findings
    assert (f.rule_id, f.severity.name) == ("GD610", "warning")
    assert "in the only logged step (step 40, with grad_norm 0)" in f.message
    assert "One row cannot tell whether it lasts" in f.message


def test_table_from_standard_input(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(PASTED.read_bytes()))))
    rep = analyze(["-"])
    assert rep.findings[0].rule_id == "GD610" and rep.findings[0].count == 3


def test_a_log_with_its_own_metric_rows_does_not_read_a_table(tmp_path):
    """The printed dict is the log's row; the table below it (the same step, pasted again) is not a second row."""
    p = tmp_path / "log.txt"
    p.write_text("{'loss': 0.0, 'grad_norm': 0.0, 'reward': 1.0, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, "
                 "'global_step/max_steps': '40/100'}\n"
                 "| step | loss | grad_norm | reward | reward_std |\n|---|---|---|---|---|\n| 40 | 0 | 0 | 1 | 0 |\n"
                 "| 41 | 0 | 0 | 1 | 0 |\n")
    (f,) = analyze([str(p)]).findings
    assert f.rule_id == "GD610" and f.count == 1 and "in the only logged step (step 40/100" in f.message


def test_a_table_behind_a_quote_ray_or_collector_prefix():
    # a GitHub reply quoting the table, a Ray worker printing it, a container runtime's timestamps on every row
    table = ["Step | Training Loss | reward | reward_std", "-- | -- | -- | --", "1 | 0.000000 | -17.25 | 1.5",
             "2 | -0.000000 | -10.5 | 1.73"]
    want = [(3, {"step": 1.0, "loss": 0.0, "reward": -17.25, "reward_std": 1.5}),
            (4, {"step": 2.0, "loss": 0.0, "reward": -10.5, "reward_std": 1.73})]
    assert rows_of("\n".join(table) + "\n") == want
    for lead in ("> ", "(WorkerDict pid=2547185) ", "(pid=42, ip=10.0.0.7) ", "2025-05-10T01:02:03.123456789Z "):
        assert rows_of("".join(lead + row + "\n" for row in table)) == want, lead
    # a header with a time column of its own keeps it: the rows are read against the whole header
    timed = "time step loss reward reward_std\n2025-05-10T01:02:03Z 1 0.5 0.25 0.1\n"
    assert rows_of(timed) == []  # the time cell is not a number: not a metrics row (and not cut into one)


BOXED = """┏━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━┓
┃ step ┃ loss   ┃ reward ┃ reward_std ┃
┡━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━┩
│ 1    │ 0.0    │ 0.0    │ 0.0        │
│ 2    │ 0.0    │ 0.0    │ 0.0        │
│ 3    │ 0.0    │ 0.0    │ 0.0        │
└──────┴────────┴────────┴────────────┘
"""


def test_a_table_drawn_with_box_characters(tmp_path):
    # rich's Table (box.HEAVY_HEAD: ┃ header bars, ┡━╇ under the header, │ row bars)
    assert [line for line, _ in rows_of(BOXED)] == [4, 5, 6]
    assert rows_of(BOXED)[0][1] == {"step": 1.0, "loss": 0.0, "reward": 0.0, "reward_std": 0.0}
    # the same table read as Windows-1252 by a browser and copied (bytes it has no character for are lost)
    mangled = BOXED.encode("utf-8").decode("cp1252", errors="ignore")
    (tmp_path / "log.txt").write_text(mangled, encoding="utf-8")
    first = analyze([str(tmp_path)]).findings[0]
    assert (first.rule_id, first.category) == ("GD610", "reward-zero-or-flat")


ASCII_BOX = """\
+--------------------------------------------+
| step | loss | reward | reward_std | kl     |
|------+------+--------+------------+--------|
| 1    | 0.0  | 0.000  | 0.000      | 0.0010 |
| 2    | 0.0  | 0.000  | 0.000      | 0.0020 |
+--------------------------------------------+
"""


def test_a_table_drawn_in_an_ascii_box(tmp_path):
    # rich's Table on a console whose encoding is not UTF-8 (box.ASCII: "+" joints in its rules), as psql and
    # prettytable draw theirs too
    assert [line for line, _ in rows_of(ASCII_BOX)] == [4, 5]
    assert rows_of(ASCII_BOX)[1][1] == {"step": 2.0, "loss": 0.0, "reward": 0.0, "reward_std": 0.0, "kl": 0.002}
    (tmp_path / "log.txt").write_text(ASCII_BOX, encoding="utf-8")
    first = analyze([str(tmp_path)]).findings[0]
    assert (first.rule_id, first.category) == ("GD610", "reward-zero-or-flat")
