"""Issue 29 point 6: a run's vitals (doctor/vitals.py), the one line that says whether the run is learning: the
numbers are the logged ones (checked by hand against the fixtures' logging.jsonl and trainer_state.json), a part
the inputs do not show is left out, and every format shows the line escaped."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.model import Evidence, Finding, InputInfo, Report, Severity
from doctor.render import github, html, markdown, text
from doctor.signals import Metrics, Where
from doctor.vitals import Tracker, last_checkpoint, summary, vitals

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _track(*rows: dict) -> Tracker:
    t = Tracker()
    for i, row in enumerate(rows, 1):
        t(Metrics(row, Where("logging.jsonl", i), i, "jsonl"))
    return t


# ------------------------------------------------------------------------------------------------ the numbers
def test_first_and_last_of_each_part_with_steps_of_total():
    t = _track({"loss": 0.1, "reward": 0.12, "frac_reward_zero_std": 0.35, "kl": 0.0, "completions/clipped_ratio": 0.5,
                "global_step/max_steps": "1/200"},
               {"loss": 0.1, "reward": 0.5, "frac_reward_zero_std": 0.2, "kl": 0.001, "global_step/max_steps": "100/200"},
               {"loss": 0.1, "reward": 0.81, "frac_reward_zero_std": 0.08333, "kl": 0.0021234,
                "completions/clipped_ratio": 0.04, "global_step/max_steps": "200/200"})
    v = vitals(t, ["out/checkpoint-100", "out/checkpoint-200/"])
    assert v is not None
    assert v["step"] == 200 and v["max_steps"] == 200
    assert v["reward"] == {"first": 0.12, "last": 0.81, "rows": 3}
    assert v["flat_groups"] == {"first": 0.35, "last": 0.08333, "rows": 3}
    assert v["kl"] == {"first": 0.0, "last": 0.0021234, "rows": 3}
    assert v["truncated"] == {"first": 0.5, "last": 0.04, "rows": 2}   # the middle row did not log it
    assert v["last_checkpoint"] == "checkpoint-200"
    assert v["summary"] == ("steps 200/200, reward 0.12 -> 0.81, flat groups 35% -> 8.33%, kl 0.00212, truncated 4%, "
                            "last checkpoint checkpoint-200")


def test_parts_the_inputs_do_not_show_are_left_out():
    # a trl console row: no step counter, no flat-group share, no KL (beta 0), strings as printed
    v = vitals(_track({"loss": "0.0", "reward": "-3.55"}, {"loss": "0.0", "reward": "-1.571"}))
    assert v == {"reward": {"first": -3.55, "last": -1.571, "rows": 2}, "summary": "reward -3.55 -> -1.57"}
    assert vitals(_track({"loss": 0.5, "grad_norm": 1.0})) is None   # a row, but none of the vitals
    assert vitals(Tracker()) is None
    # a row count is not a step: without global_step/max_steps or a "step" key no step is said
    assert "step" not in vitals(_track({"reward": 1.0}, {"reward": 1.0}))


def test_one_row_has_no_trend_and_a_step_key_has_no_total():
    v = vitals(_track({"loss": 0.0, "reward": 0.344, "frac_reward_zero_std": 0.0, "step": 5}))
    assert v["summary"] == "step 5, reward 0.344, flat groups 0%"


def test_nan_is_reported_not_skipped_and_older_names_are_read():
    v = vitals(_track({"loss": 0.1, "reward": 0.61, "kl": 0.01, "response_clip_ratio": 0.1},
                      {"loss": "nan", "reward": "nan", "kl": float("nan"), "response_clip_ratio": 1.0}))
    assert v["reward"] == {"first": 0.61, "last": "nan", "rows": 2}   # as the JSON report writes it
    assert v["summary"] == "reward 0.61 -> nan, kl nan, truncated 100%"


def test_summary_rows_name_the_checkpoint_but_are_no_step():
    t = _track({"loss": 0.0, "reward": 1.0, "global_step/max_steps": "6/6"},
               {"train_runtime": 31.9, "global_step/max_steps": "6/6"},
               {"last_model_checkpoint": "/w/v0/checkpoint-6", "log_history": []})
    v = vitals(t)
    assert v["reward"]["rows"] == 1 and v["last_checkpoint"] == "checkpoint-6"


def test_last_checkpoint_is_the_highest_trainer_checkpoint():
    assert last_checkpoint(["a/checkpoint-90", "a/checkpoint-100", "a/checkpoint-95"]) == "checkpoint-100"
    assert last_checkpoint(["C:\\runs\\v0\\checkpoint-7", "'out/checkpoint-8',"]) == "checkpoint-8"
    # a failed save to /dev/full, ms-swift's None, a save_model folder: no trainer checkpoint
    assert last_checkpoint(["/dev/full", "None", "out/final", "out/checkpoint-2-merged"]) is None


def test_rounding_to_three_significant_digits():
    v = {"reward": {"first": 1234.5, "last": 0.000123456, "rows": 2}, "kl": {"first": 0, "last": 12.3456, "rows": 2},
         "truncated": {"first": 0.0, "last": 0.123456, "rows": 2}}
    assert summary(v) == "reward 1234 -> 0.000123, kl 12.3, truncated 12.3%"


# ------------------------------------------------------------------------------------------------ real runs
def test_real_healthy_lora_run():
    """fixtures/logs/real-grpo-lora-healthy/logging.jsonl (ms-swift 4.6.0, CPU): 6 rows, global_step/max_steps 1/6
    to 6/6; reward 1.0 at step 1 and at step 6; frac_reward_zero_std 1.0 then 0.0; kl 1.57e-05 and
    completions/clipped_ratio 0.5 at step 6; checkpoint-2, -4, -6 saved (log.txt lines 708-714, and the closing
    object's last_model_checkpoint)."""
    run = analyze([str(FIXTURES / "real-grpo-lora-healthy")]).run
    assert run["vitals"] == {
        "step": 6, "max_steps": 6,
        "reward": {"first": 1.0, "last": 1.0, "rows": 6},
        "flat_groups": {"first": 1.0, "last": 0.0, "rows": 6},
        "kl": {"first": 0.0, "last": 1.57e-05, "rows": 6},
        "truncated": {"first": 0.25, "last": 0.5, "rows": 6},
        "last_checkpoint": "checkpoint-6",
        "summary": "steps 6/6, reward 1 -> 1, flat groups 100% -> 0%, kl 1.57e-05, truncated 50%, "
                   "last checkpoint checkpoint-6",
    }


def test_real_run_cut_after_step_3_names_the_checkpoint_its_log_saved():
    """fixtures/logs/real-hang-cut-after-step-3: logging.jsonl stops at 3/6 (reward 1.0 -> 0.75, frac_reward_zero_std
    1.0 -> 0.0, kl 0.0, clipped 0.25); log.txt saves checkpoint-2 only."""
    v = analyze([str(FIXTURES / "real-hang-cut-after-step-3")]).run["vitals"]
    assert v["summary"] == ("steps 3/6, reward 1 -> 0.75, flat groups 100% -> 0%, kl 0, truncated 25%, "
                            "last checkpoint checkpoint-2")


def test_real_trl_trainer_state():
    """fixtures/logs/real-trl-trainer-state-flat/out/checkpoint-3/trainer_state.json: steps 1-3 (no max_steps in the
    rows), reward 0.0, frac_reward_zero_std 1.0, kl 6.457790732383728e-05 and clipped 1.0 at step 3."""
    v = analyze([str(FIXTURES / "real-trl-trainer-state-flat")]).run["vitals"]
    assert v["kl"]["last"] == 6.457790732383728e-05
    assert v["summary"] == "step 3, reward 0 -> 0, flat groups 100% -> 100%, kl 6.46e-05, truncated 100%, " \
                           "last checkpoint checkpoint-3"


def test_a_pasted_save_line_alone(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("[INFO:swift] Saving model checkpoint to /out/v0/checkpoint-40\n"
                   "[INFO:swift] Saving model checkpoint to /out/v0/checkpoint-80\n", encoding="utf-8")
    assert analyze([str(log)]).run["vitals"] == {"last_checkpoint": "checkpoint-80",
                                                 "summary": "last checkpoint checkpoint-80"}


# ------------------------------------------------------------------------------------------------ renderers
VIT = {"summary": "steps 6/6, reward 1 -> 1, last checkpoint checkpoint-6"}
# a summary holding markup of every format: the renderers must show it as text (it is built from input)
HOSTILE = {"summary": "reward [bold]x[/bold] *y* <script>z</script> `c` %0A\x1b[31m"}
FINDING = Finding("GD641", "s", "output-degenerate", Severity.warning, "T", "m", evidence=(Evidence("log.txt", 3, "e"),))


def _report(vit: dict | None, findings: list[Finding] | None = None) -> Report:
    run = {"framework": "ms-swift"} | ({"vitals": vit} if vit else {})
    return Report("X", [InputInfo("log.txt", "log")], run, findings or [])


def test_text():
    out = text.render(_report(VIT))
    assert "No problem found. Vitals: steps 6/6, reward 1 -> 1, last checkpoint checkpoint-6.\n" in out
    assert text.render(_report(None)).endswith("No problem found.\n")
    out = text.render(_report(VIT, [FINDING]))
    assert out.count("vitals: steps 6/6") == 1 and out.index("vitals:") < out.index("1. WARNING")
    out = text.render(_report(HOSTILE), color=True)
    assert "[bold]x[/bold]" in out and "\x1b[31m" not in out and "\\x1b[31m" in out


def test_markdown():
    out = markdown.render(_report(VIT))
    assert "No problem found. Vitals: steps 6/6, reward 1 -\\> 1, last checkpoint checkpoint-6." in out
    assert out.count("Vitals:") == 1
    out = markdown.render(_report(VIT, [FINDING]))
    assert out.count("Vitals: steps 6/6") == 1 and out.index("Vitals:") < out.index("### 1.")
    mdit = pytest.importorskip("markdown_it")
    para = next(b for b in mdit.MarkdownIt("commonmark").parse(markdown.render(_report(HOSTILE)))
                if b.type == "inline" and "No problem found" in b.content)
    assert [t.type for t in para.children] == ["text"]   # no emphasis, html or code span: all of it text
    assert "reward [bold]x[/bold] *y* <script>z</script> `c` %0A\\x1b[31m." in para.children[0].content


def test_html():
    out = html.render(_report(VIT))
    assert '<p class="ok">No problem found.</p>\n<p class="vitals">Vitals: steps 6/6, reward 1 -&gt; 1, ' in out
    out = html.render(_report(VIT, [FINDING]))
    assert out.count("vitals: steps 6/6") == 1 and out.index("vitals:") < out.index('id="finding-1"')
    out = html.render(_report(HOSTILE))
    assert "<script>z" not in out and "&lt;script&gt;z&lt;/script&gt;" in out and "\x1b" not in out


def test_github():
    assert github.render(_report(VIT)) == ("::notice title=grpo-doctor::No problem found. Vitals: steps 6/6, reward 1 -> 1, "
                                           "last checkpoint checkpoint-6.\n")
    assert github.render(_report(VIT, [FINDING])).startswith("::warning ")   # one annotation per finding, no more
    assert len(github.render(_report(VIT, [FINDING])).splitlines()) == 1
    out = github.render(_report(HOSTILE))
    assert "%250A" in out and "\x1b" not in out and out.count("\n") == 1


def test_json_keeps_vitals_in_run_and_non_finite_as_text():
    from doctor.render import jsonr
    v = vitals(_track({"reward": 0.5, "kl": 1.0}, {"reward": math.inf, "kl": "-inf"}))
    doc = json.loads(jsonr.render(_report(v)))
    assert doc["run"]["vitals"]["reward"] == {"first": 0.5, "last": "inf", "rows": 2}
    assert doc["run"]["vitals"]["summary"] == "reward 0.5 -> inf, kl -inf"
