"""verl's console metric line (doctor/sources/verl_rows.py). The row is a real one, shortened to its first keys and
the score keys (rLLM on verl, public thread rllm-org/rllm: step 4, every score 0); values checked by hand."""
from __future__ import annotations

from doctor.sources.metrics import read_console

ROW = ("step:4 - batch/solve_none:128.000 - batch/solve_all:0.000 - actor/kl_loss:0.007 - actor/pg_loss:0.000 - "
       "actor/grad_norm:0.005 - actor/lr:0.000 - critic/score/mean:0.000 - critic/score/max:0.000 - "
       "critic/score/min:0.000 - critic/rewards/mean:0.000 - response_length/mean:397.000 - "
       "response_length/clip_ratio:0.000 - timing_s/step:131.608")


def test_a_verl_row_reads_in_the_trainer_key_names():
    values, finite = read_console(ROW)
    assert finite is True
    assert values["step"] == 4 and values["reward"] == 0.0 and values["grad_norm"] == 0.005
    assert values["loss"] == 0.0 and values["kl"] == 0.007 and values["step_time"] == 131.608
    assert values["completions/mean_length"] == 397.0 and values["completions/clipped_ratio"] == 0.0
    assert values["batch/solve_none"] == 128.0  # verl's own keys stay as they are
    assert values["reward_std"] == 0.0  # max == min: every completion scored the same


def test_reward_std_is_not_made_up_when_scores_differ():
    values, _ = read_console(ROW.replace("critic/score/max:0.000", "critic/score/max:1.000"))
    assert "reward_std" not in values


def test_a_line_cut_before_the_score_is_a_row_without_a_reward():
    # dev12 1418: verl's step line cut after the actor's keys (NaN there) is still that step's row
    values, finite = read_console("step:59 - actor/kl_loss:nan - actor/pg_loss:nan - actor/grad_norm:nan - perf/ma")
    assert values is not None and values["step"] == 59 and "reward" not in values and finite is False
    assert read_console("step:4 - timing_s/gen:12.5 - perf/mfu/actor:0.042")[0] is None   # no loss, no score
    values, finite = read_console(ROW.replace("critic/score/mean:0.000", "critic/score/mean:nan"))
    assert finite is False
