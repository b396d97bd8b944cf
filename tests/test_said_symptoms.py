"""Symptoms a paste tells in words beside pasted commands and bars (doctor/checks/hang/symptom_words.py, prose.py):
each case is the shape of a real thread's paste (fixtures/devlogs68, devlogs69), cut down to the lines that decide."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader

VERL_COMMAND = """python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 \\
    data.truncation='error' \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-VL-7B-Instruct \\
    actor_rollout_ref.rollout.name=vllm
"""


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def first(text: str) -> tuple[str, str]:
    found = run(text)
    assert found, "no finding"
    return found[0].category, found[0].rule_id


def test_a_title_above_a_pasted_command_is_read_not_no_problem_found():
    # a command pasted from a script (continued with backslashes) is typed, not the run's echo of its launch
    assert first("VLM For Qwen2.5_vl_7B GRPO to rollout score is zero\n" + VERL_COMMAND) == \
        ("reward-zero-or-flat", "GD327")
    assert first("Train 14B with 8*H100(80GB) OOM\n" + VERL_COMMAND) == ("cuda-oom", "GD327")


def test_a_setting_whose_value_says_error_is_no_failure_words():
    found = run("Some words about my setup here for the run.\n" + VERL_COMMAND)
    assert all("truncation" not in f.message for f in found)


def test_a_score_at_zero_is_the_reward_only_in_an_rl_run():
    assert first("The accuracy score is zero after 100 steps of GRPO training.\n") == ("reward-zero-or-flat", "GD327")
    # a supervised run's evaluation accuracy is no reward
    found = run("The eval accuracy score is zero after 100 steps of SFT training.\n")
    assert not found or found[0].category != "reward-zero-or-flat"


def test_completions_of_exclamation_marks_are_degenerate_output_with_their_cause():
    found = run("everything is normal in the beginning until answer after <think> suddenly all become !\n")
    assert (found[0].category, found[0].rule_id) == ("output-degenerate", "GD327")
    assert "token id 0" in found[0].message and "NaN" in found[0].message
    assert first("GKD过程中发现rollout的结果全是！\n") == ("output-degenerate", "GD327")


def test_step_times_and_idle_gpus_said_in_words():
    assert first("I encountered a significant performance discrepancy between GRPO (80 seconds/step) and SFT "
                 "(1.5 seconds/step) during reproduction.\n") == ("slow-training", "GD327")
    assert first("Rollout phase takes lots of time, and I find that only 1 of 8 GPU is working when rollout.\n") == \
        ("gpu-underutilized", "GD327")
    assert first("GPU usage is only 30% during the training of my model here.\n") == ("gpu-underutilized", "GD327")


def test_sigkill_in_any_case_and_a_return_code_of_minus_nine():
    assert first("Sigkill, process exits with return code -9\nHi, I was trying to run PPO with a small model.\n") == \
        ("host-oom-killed", "GD327")


BAR = ("[INFO|trainer.py:2243] 2024-06-11 10:28:31,457 >> ***** Running training *****\n"
       "  1%|▏         | 12/1250 [10:02<17:15:20, 50.18s/it]\n"
       "  1%|▏         | 13/1250 [10:52<17:14:20, 50.18s/it]\n")


def test_a_bar_short_of_its_total_is_slow_when_its_author_says_slow_not_a_hang():
    found = run("Training is very slow\n" + BAR)
    assert [(f.category, f.rule_id) for f in found] == [("slow-training", "GD327")]
    assert "50.18s/it" in found[0].message and "17.4 h" in found[0].message  # 1250 x 50.18 s = 62725 s
    assert "without rollouts" in found[0].fix[0]  # no RL method named: no generation to blame
    # without the words, the same bar is where the log stops
    assert run(BAR)[0].category == "hang-mid-training"


def test_an_env_chain_continued_with_backslashes_is_the_launch_environment():
    # PYTORCH_CUDA_ALLOC_CONF between NPROC_PER_NODE and CUDA_VISIBLE_DEVICES: all three are the trainer's
    text = ("NPROC_PER_NODE=7 \\\nPYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \\\n"
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 \\\nswift rlhf \\\n    --rlhf_type grpo \\\n    --model Qwen/Qwen3-8B\n")
    assert all(f.rule_id != "GD420" for f in run(text))


def test_a_kl_said_nan_in_a_verl_run_is_read_with_its_kl_loss_arithmetic():
    words = "在某一个step模型的输出突然全变为!，kl变为Nan\n"
    found = run(words + "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
                        "    actor_rollout_ref.actor.use_kl_loss=True\n")
    assert found[0].category == "loss-nan-or-inf"
    assert "low_var_kl" in found[0].message and "kl_loss_type=kl" in " ".join(found[0].fix)
    # another KL estimator set: not that arithmetic
    other = run(words + "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.actor.kl_loss_type=mse \\\n"
                        "    algorithm.adv_estimator=grpo\n")
    assert "low_var_kl" not in other[0].message


def test_a_stuck_run_whose_bar_stopped_part_of_the_way_hung_mid_training():
    # blind34 case 26 (accelerate's custom loop): the words say stuck, place nothing; the bar shows 281 steps ran
    bar = "  1%|▍                                | 281/20820 [03:48<4:27:56,  1.28it/s]\n"
    words = "stuck here with 7 GPU 100% usage + 1 GPU 0% usage, when terminating it:\n"
    assert first(bar + "\n" + words)[0] == "hang-mid-training"
    # a model's checkpoint shards half loaded are no training progress
    shards = "Loading checkpoint shards:  50%|█████     | 2/4 [00:03<00:03,  1.60s/it]\n"
    assert first(shards + "\n" + words)[0] == "hang-at-start"


def test_a_policy_collapsed_into_random_characters_is_degenerate_output():
    assert first("After about 200 steps, the rollout model collapsed and generated some random char or emoji like\n") \
        == ("output-degenerate", "GD327")


def test_a_bare_message_above_a_cut_stack_is_its_exception_when_the_last_frame_calls_its_raiser():
    # blind34 case 36: DeepSpeed's MissingCUDAException message pasted above a stack cut in the call that raises it
    text = ("CUDA_HOME does not exist, unable to compile CUDA op(s)\n"
            "Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.11/site-packages/deepspeed/git_version_info.py", line 29, in <module>\n'
            "    op_compatible = builder.is_compatible()\n"
            '  File "/venv/lib/python3.11/site-packages/deepspeed/ops/op_builder/fp_quantizer.py", line 35, in '
            "is_compatible\n"
            "    sys_cuda_major, _ = installed_cuda_version()\n")
    found = run(text)
    assert found[0].category == "import-or-dependency-error"
    assert "MissingCUDAException" in found[0].title and found[0].evidence[0].line == 1
    assert any("CUDA_HOME" in x for x in found[0].fix)


def test_output_that_loops_in_the_paste_is_evidence_and_an_sft_run_gets_no_policy_drift():
    # blind34 case 08 (unsloth, a base model fine-tuned with SFT): the pasted generation loops
    text = ("But when I actually finally inference something, it just starts to repeat itself very, very quickly:\n"
            + "".join(f'I looked at the {n} one. It read "It\'s a beautiful night tonight. Look outside."\n'
                      for n in ("first", "second", "third", "fourth")))
    found = run(text)
    assert found[0].category == "output-degenerate"
    assert "repeats one text 4 times" in found[0].message and len(found[0].evidence) == 2
    assert "policy" not in found[0].message and "supervised fine-tuning" in found[0].message
    assert not any("two or three completions" in x for x in found[0].fix)
    # named as a GRPO run: the RL causes stay
    rl = run("During GRPO training the completions repeat themselves over and over again.\n")
    assert "drifted" in rl[0].message


def test_slow_steps_beside_verls_stage_timings_say_where_the_time_goes_with_the_runs_values():
    # blind34 case 18 (verl on Ascend): words, overrides pasted one per line, and one step's timing_s/ lines
    text = ("Key config:\n\ndata.max_response_length=1024\nactor_rollout_ref.rollout.gpu_memory_utilization=0.3\n\n"
            "Training runs correctly, but each step is slow (~43s). Generation dominates. Step 94 timing:\n\n"
            "timing_s/step:           43.64\ntiming_s/gen:            31.27   (72%)\n"
            "timing_s/update_actor:    8.10\n")
    found = run(text)
    assert (found[0].category, found[0].rule_id) == ("slow-training", "GD327")
    assert "timing_s/gen 31.27 s of a 43.64 s step (72%, computed)" in found[0].message   # 31.27 / 43.64 = 0.717
    assert "update_actor 8.1 s" in found[0].message
    assert "gpu_memory_utilization=0.6 (was 0.3)" in found[0].fix[0] and "(now 1024)" in found[0].fix[0]
