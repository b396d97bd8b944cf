"""Metric rows written as key/value text (sources/keyvalue.py): one pair per line, pairs on one line, MLX-LM's
trainer lines. Key names: trl/ms-swift metric keys; the values are invented and checked by hand in each test."""
from __future__ import annotations

import math

from conftest import lines_of

from doctor.analyze import analyze
from doctor.sources.keyvalue import rows


def rows_of(text: str) -> list[tuple[int, dict]]:
    return [(line.where.line, values) for line, values in rows(lines_of(text))]


def test_one_pair_per_line_is_one_row_from_its_first_line():
    text = "summary of step 40\nreward: 0.0\nreward_std: 0.0\nkl: 0.0\nloss: 0.0\n\nthanks for any help\n"
    assert rows_of(text) == [(2, {"reward": 0.0, "reward_std": 0.0, "kl": 0.0, "loss": 0.0})]


def test_a_key_seen_again_starts_the_next_row():
    text = "loss: 0.5\nreward: 0.1\nloss: 0.4\nreward: 0.2\n"
    assert rows_of(text) == [(1, {"loss": 0.5, "reward": 0.1}), (3, {"loss": 0.4, "reward": 0.2})]


def test_pairs_on_one_line_with_a_step_lead():
    (line, values), = rows_of("step 10 | loss: nan | reward: 0.12 | kl: 0.003\n")
    assert line == 1 and values["step"] == 10 and values["reward"] == 0.12 and math.isnan(values["loss"])


def test_pairs_wrapped_over_two_lines_are_one_row_and_repeated_keys_are_two():
    # fixtures/devlogs7/728: a dashboard's summary of one step over two lines, pairs apart by spaces
    text = ("completions/mean_length: 256   completions/clipped_ratio: 1   mean_terminated_length: 0\n"
            "reward: 0   reward_std: 0   frac_reward_zero_std: 1   loss: 0   grad_norm: 0\n")
    (line, values), = rows_of(text)
    assert line == 1 and values["completions/clipped_ratio"] == 1 and values["reward_std"] == 0 and len(values) == 8
    (_, between), = rows_of(text.replace("\n", "\nIt worked yesterday with the same script.\n", 1))
    assert between == values  # a person's sentence between the two lines does not end the row
    steps = "step 1 | loss: 0.5 | reward: 0.1\nstep 2 | loss: 0.4 | reward: 0.2\n"
    assert [v["step"] for _, v in rows_of(steps)] == [1, 2]


def test_mlx_lm_train_and_val_lines():
    text = ("Iter 10: Train loss 2.345, Learning Rate 1.000e-05, It/sec 0.512, Tokens/sec 345.1, Trained Tokens 1234, "
            "Peak mem 12.345 GB\nIter 10: Val loss 2.500, Val took 3.210s\n")
    assert rows_of(text) == [(1, {"step": 10.0, "loss": 2.345, "learning_rate": 1e-05})]  # a Val line is no step row


def test_a_config_dump_is_no_metrics_row():
    assert rows_of("learning_rate: 1.0e-06\nnum_generations: 8\nbeta: 0.04\nmax_completion_length: 1024\n") == []
    assert rows_of("epoch: 3\ntotal: 12 files, 3 failed\n") == []


def test_a_pasted_summary_of_flat_groups_is_judged(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text("my metrics after 200 steps:\nreward: 0.0\nreward_std: 0.0\nfrac_reward_zero_std: 1.0\n"
                 "loss: 0.0\ngrad_norm: 0.0\n")
    found = analyze([str(p)]).findings
    assert found[0].rule_id == "GD610" and found[0].category == "reward-zero-or-flat"


import pytest  # noqa: E402


@pytest.mark.parametrize("row", [
    "step 7 reward: 0.25 reward_std: 0.5 loss: 0.01",          # pairs separated by spaces only
    "[step 7] loss=0.01 reward=0.25 reward_std=0.5",            # key=value pairs after a bracketed step
    "step=7 reward=0.25 reward_std=0.5 loss=0.01",
    "INFO:root:step 7 - loss: 0.01 - reward: 0.25 - reward_std: 0.5",  # logging's default format, " - " between
    "Iteration 7: reward 0.25, reward_std 0.5, loss 0.01",      # a key and its number with no sign between
    "epoch 1 step 7 loss 0.0100 reward 0.2500 reward_std 0.5000",
])
def test_custom_loggers_rows(row):
    ((line, values),) = rows_of(row + "\n")
    assert values == {"step": 7.0, "loss": 0.01, "reward": 0.25, "reward_std": 0.5} or \
        values == {"step": 7.0, "epoch": 1.0, "loss": 0.01, "reward": 0.25, "reward_std": 0.5}


def test_a_sentence_that_mentions_a_loss_and_a_reward_is_not_a_row():
    assert rows_of("The loss 0.5 after step 3 and then reward 0.2 was printed\n") == []
    assert rows_of("I think loss 1 and reward 2 are fine\n") == []


def test_flat_rewards_from_space_separated_rows(tmp_path):
    (tmp_path / "log.txt").write_text("".join(f"step {i} reward: 0.0 reward_std: 0.0 loss: 0.0\n" for i in range(1, 5)))
    first = analyze([str(tmp_path)]).findings[0]
    assert (first.rule_id, first.category) == ("GD610", "reward-zero-or-flat")


def test_a_markdown_summary_table_of_rollout_statistics_is_judged(tmp_path):
    """| `key` | **value** | ... |: the key in the first cell, the value in the second (bold or backticks)."""
    p = tmp_path / "paste.txt"
    p.write_text("| metric | value | occurrences |\n|---|---|---:|\n"
                 "| `completions/mean_length` | **80** | **40 / 40** |\n"
                 "| `completions/clipped_ratio` | `1` | 39 / 40 |\n"
                 "| `completions/mean_terminated_length` | `0` | 39 / 40 |\n")
    found = analyze([str(p)]).findings
    assert found and found[0].rule_id == "GD641", [(f.rule_id, f.title) for f in found]
    assert "mean length 80" in found[0].message and any("from 80 to 512" in x for x in found[0].fix)
    # a table of other numbers (no trainer key) is no metrics row
    q = tmp_path / "other.txt"
    q.write_text("| name | size |\n|---|---|\n| `model/a` | 12 |\n| `model/b` | 7 |\n")
    assert not [f for f in analyze([str(q)]).findings if f.rule_id == "GD641"]


def test_deepspeed_chat_step3_rows_read_the_actor_loss_as_the_loss(tmp_path):
    """DeepSpeed-Chat step 3 prints `epoch: E|step: S|ppo_ep: P|act_loss: A|cri_loss: C|unsuper_loss: U` (dev20 2524):
    the actor's loss is the policy loss, and an inf there is the loss going non-finite."""
    text = ("epoch: 0|step: 3183|ppo_ep: 1|act_loss: 0.0213|cri_loss: 0.153|unsuper_loss: 0.0\n"
            "average reward score: -6.359375\n"
            "epoch: 0|step: 3184|ppo_ep: 1|act_loss: inf|cri_loss: inf|unsuper_loss: 0.0\n")
    (first, a), (second, b) = rows_of(text)
    assert (first, a["loss"], a["cri_loss"], a["step"]) == (1, 0.0213, 0.153, 3183)
    assert second == 3 and math.isinf(b["loss"])
    log = tmp_path / "log.txt"
    log.write_text(text + "epoch: 0|step: 3185|ppo_ep: 1|act_loss: inf|cri_loss: inf|unsuper_loss: 0.0\n")
    top = analyze([str(log)]).findings[0]
    assert top.rule_id == "GD620" and "from step 3184 on" in top.title
