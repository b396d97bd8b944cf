"""Sentences a person wrote between pasted lines (sources/prose_text.py): told from program output, skipped where the
log ends (GD308, the log-end rules) and inside a pretty-printed metrics dict (sources/paste.py DictJoiner)."""
from __future__ import annotations

import io
import re

from doctor.engine import Session
from doctor.model import Severity
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader
from doctor.sources.paste import DictJoiner
from doctor.sources.prose_text import is_prose


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def test_prose_is_told_from_program_output():
    assert is_prose("It worked yesterday with the same script.")
    assert is_prose("报错信息如下：")
    assert not is_prose("g183:161264:166015 [7] NCCL INFO Channel 10/0 : 7[7] -> 15[7] [send] via NET/IB/8/GDRDMA")
    assert not is_prose("ValueError: too many values to unpack")  # an exception line reads like words
    assert not is_prose("[INFO:swift] Saving model checkpoint to the output folder now")
    assert not is_prose("Thanks!")  # too short to tell


NCCL = "".join(f"g183:161264:166015 [7] NCCL INFO Channel {i:02d}/0 : 7[7] -> 15[7] [send] via NET/IB/8/GDRDMA\n"
               for i in range(6))


def test_closing_sentences_do_not_hide_how_the_log_ends():
    assert run(NCCL)[0].rule_id == "GD308"
    found = run(NCCL + "It worked yesterday with the same script.\n报错信息如下：\n")
    assert found[0].rule_id == "GD308"


def test_a_sentence_inside_a_pretty_printed_dict_does_not_end_it():
    j = DictJoiner()
    out = [j.feed(t) for t in ["{'loss': 0.0,", " 'reward': 0.0,", "Here is the full log:", "", " 'reward_std': 0.0}"]]
    assert out[-1] == "{'loss': 0.0, 'reward': 0.0, 'reward_std': 0.0}"
    j = DictJoiner()
    out = [j.feed(t) for t in ["{'loss': 0.0,", "x = 1", " 'reward': 0.0}"]]  # code, not prose: the dict ends
    assert out == [None, None, None]


def test_a_metric_row_behind_a_label_is_not_a_description_in_words():
    # a Megatron-style row with a host label in front: numbers and separators, not a sentence (no GD327 guess)
    row = ("worker-5:  [2025-11-25 07:19:22] iteration        7/    2174 | consumed samples:          448 | "
           "learning rate: 4.999872E-05 | grad norm: 0.000000E+00 | loss: -2.365559E-06 | reward_std: 1.261245E-01\n")
    assert not [f for f in run(row) if f.rule_id == "GD327"]
    said = "After step 10 the grad_norm is always 0 and nothing changes in the loss at all\n"
    assert [f.category for f in run(said) if f.rule_id == "GD327"] == ["grad-norm-zero"]


def test_a_trainer_state_entry_pasted_as_the_file_holds_it_is_one_metrics_row():
    # transformers' TrainerState.save_to_json: json.dumps(indent=2, sort_keys=True), "epoch" first in each entry
    d = DictJoiner()
    got = [d.feed(t) for t in ['"log_history": [', "{", '"epoch": 0.0,', '"grad_norm": NaN,', '"loss": 9078019.2,',
                               '"step": 5', "},"]]
    assert got[:-1] == [None] * 6
    assert got[-1] == '{ "epoch": 0.0, "grad_norm": NaN, "loss": 9078019.2, "step": 5 }'
    # a Python dict printed one key per line and closed by a brace alone
    d = DictJoiner()
    assert [d.feed(t) for t in ["{'loss': 0.5,", "'grad_norm': 1.2,", "}"]][-1] == "{'loss': 0.5, 'grad_norm': 1.2, }"
    found = run('"log_history": [\n  {\n    "epoch": 0.0,\n    "grad_norm": NaN,\n    "loss": 9078019.2,\n'
                '    "step": 5\n  },\n')
    assert [f.rule_id for f in found][:1] == ["GD620"]


def test_sentences_between_pasted_rows_do_not_break_them(tmp_path):
    from doctor.analyze import analyze

    def run(text: str):
        (tmp_path / "log.txt").write_text(text, encoding="utf-8")
        return analyze([str(tmp_path)]).findings

    # a DeepSpeed checkpoint listing (du -h), a metric table and NCCL's debug tail, each with a person's words inside
    listing = ("90G\tbf16_zero_pp_rank_0_mp_rank_00_optim_states.pt\nIt worked yesterday with the same script.\n"
               "请问这是什么原因？\n15G\tmp_rank_00_model_states.pt\n")
    assert [f.rule_id for f in run(listing)][:1] == ["GD808"]
    table = ("step | loss | reward | reward_std\n-- | -- | -- | --\n1 | 0.0 | 0.0 | 0.0\nHere is the full log:\n"
             "2 | 0.0 | 0.0 | 0.0\n3 | 0.0 | 0.0 | 0.0\n")
    assert [f.rule_id for f in run(table)][:1] == ["GD610"]
    nccl = "".join(f"g183:161264:166015 [7] NCCL INFO Channel {i:02d}/0 : 7[7] -> 15[7] [send] via NET/IB/8/GDRDMA\n"
                   + ("It worked yesterday with the same script.\n" if i == 2 else "") for i in range(5))
    nccl += "g183:161260:166045 [3] NCCL INFO [Service thread] Connection closed by localRank 5\n"
    assert [f.rule_id for f in run(nccl)][:1] == ["GD308"]


def test_a_piece_of_a_wrapped_metrics_dict_is_not_prose():
    # a dict wrapped at its items' commas: its pieces hold words and few digits, but they are a program's output
    from doctor.checks.hang.prose import prose_lines
    from doctor.signals import LogLine, Where
    piece = "'rewards/json_format_reward_func/mean': 1.0, 'rewards/json_format_reward_func/std': 0.0, "
    sentence = "The reward stays at zero and the loss does not move at all."
    lines = [LogLine(t, t, Where("p.log", i + 1), None, i + 1) for i, t in enumerate((piece, sentence))]
    assert [ln.text for ln in prose_lines(lines)] == [sentence]
    assert not is_prose(piece) and is_prose(sentence)


def _symptom(text: str):
    from doctor.checks.hang.prose import prose_lines, symptom
    from doctor.signals import LogLine, Where
    lines = [LogLine(t, t, Where("p.txt", i + 1), None, i) for i, t in enumerate(text.splitlines())]
    got = symptom(prose_lines(lines))
    return got[0] if got else None


def test_a_denied_symptom_is_not_the_symptom():
    """dev19 2415's words: the processes freeze, and memory did NOT run out."""
    assert _symptom("8卡80G训练Qwen3-8B会出现进程卡死的现象；显存并没有OOM，想问问是什么原因？").startswith("hang-")
    assert _symptom("The run is not OOM, but it hangs at step 12 every time we train") == "hang-mid-training"
    assert _symptom("Training dies with an OOM error after about two hours of steps") == "cuda-oom"


def test_a_change_of_state_names_the_reward_at_zero():
    assert _symptom("At the beginning the reward was normal, but by the end the reward became 0 again") \
        == "reward-zero-or-flat"
    assert _symptom("训练到后面奖励降到0了，这是为什么呢") == "reward-zero-or-flat"


def test_symptoms_named_in_words_of_real_threads():
    assert _symptom("swift rlhf --vllm_mode server\uff0c rollout\u62a5\u9519\uff1a NCCL error") == "nccl-timeout"
    assert _symptom("NCCL communications fail when using torch==2.7.0 on 8xH100") == "nccl-timeout"
    assert _symptom("Ray OOM causes the process to be killed during rollout") == "host-oom-killed"
    assert _symptom("DPO with zero3: reward nan from the first step") == "loss-nan-or-inf"
    assert _symptom("\u8bad\u7ec3\u65f6loss\u5f02\u5e38\uff0c\u4e00\u76f4\u662f0\u6216\u8005\u65e0\u7a77\u5927") == "loss-nan-or-inf"
    assert _symptom("transformers\u6700\u65b0\u7248\u672c\u4e0d\u517c\u5bb9") == "import-or-dependency-error"
    assert _symptom("ds3_gather_for_generation=False, stuck in the training stage, step is still 0") == "hang-at-start"
    assert _symptom("RendezvousConnectionError when use C10d on multi nodes") == "hang-at-start"
    # a release named with the verb before it (vLLM, DeepSpeed, open-instruct and trl threads)
    assert _symptom("training is broken with vllm==0.5.0") == "import-or-dependency-error"
    assert _symptom("Adam Offload fail with DeepSpeed v0.14.2, it works well with DeepSpeed v0.14.0") \
        == "import-or-dependency-error"
    assert _symptom("this error occurs when the PyTorch version is `2.8.0`. I confirmed that downgrading PyTorch "
                    "to `2.7.1` prevents this bug.") == "import-or-dependency-error"
    assert _symptom("It fails with lr 1.0 and works with 0.5 on the same data.") != "import-or-dependency-error"
    assert _symptom("OutOfMemoryError for ORPO and DPO on a Colab T4") == "cuda-oom"
    assert _symptom("Random responses occur after the first step of GRPO training") == "output-degenerate"
    # a setting refused in words, or removing it named as the fix (LLaMA-Factory, ms-swift and trl threads)
    assert _symptom("--report_to none  \u8fd9\u4e2a\u53c2\u6570\u53bb\u6389\u5c31\u53ef\u4ee5\u4e86") == "argument-error-other"
    assert _symptom("\u53bb\u6389 adapter_name_or_path \u5373\u53ef") == "argument-error-other"
    assert _symptom("kto_pair not available in this release") == "argument-error-other"
    assert _symptom("\u76f4\u63a5\u62a5\u9519\u8bf4\u6ca1\u6709\u8fd9\u4e2a\u53c2\u6570") == "argument-error-other"
    assert _symptom("I removed the dataset and it works") is None
    # the words alone, without a failure: no NCCL symptom in a sentence about its settings
    assert _symptom("We set NCCL_P2P_DISABLE=1 on every node before the launch.") is None


def test_a_hang_after_loading_the_model_is_at_start():
    assert _symptom("[Bug]: vllm hangs after model download / load and never serves") == "hang-at-start"
    # phrasings from real threads: verl (training not started), OpenRLHF (after the engine's creation), a DeepSpeed
    # reply pointing at the op-build lock under ~/.cache/torch_extensions
    assert _symptom("No errors, but the training has not started.") == "hang-at-start"
    assert _symptom("RL training step hangs right after the vllm engine creation step") == "hang-at-start"
    assert _symptom("DeepSpeed stuck when training\nAt times, when it was stuck, removing the torch_extensions "
                    "folder helped.") == "hang-at-start"
    assert _symptom("The run is stuck at step 120 of 500 for two hours now, no output at all.") == "hang-mid-training"


def test_symptom_words_in_mixed_language_and_completions_words():
    """dev20's prose: English words glued to Chinese, a Chinese predicate after an English metric, vLLM's KV cache
    words in a sentence, garbage rollouts; and a person repeating a step is no repetitive output."""
    assert _symptom("Megatron GSPO colocate 在一轮rollout后hang住，请问是什么原因") == "hang-mid-training"
    assert _symptom("server模式下训练，reward和loss都为0，无法获取rollout的内容") == "reward-zero-or-flat"
    assert _symptom("vLLM says there is no available memory for the cache blocks on my 3090s") == "vllm-oom-or-kv-cache"
    assert _symptom("Sleep level 2 produces garbage rollouts after the first weight sync here") == "output-degenerate"
    assert _symptom("Reduce gpu_memory_utilization and repeat the same error every time") is None
    # unsloth#2424, open-r1#433, pyreft#142: completions that repeat, said three ways
    assert _symptom("GRPO Training: Repeated Output After Initial Normal Output") == "output-degenerate"
    assert _symptom("the first output is normal, but subsequent outputs keep repeating and filling up the context") \
        == "output-degenerate"
    assert _symptom("the rest ends up outputting repeated characters until reaching max_tokens") == "output-degenerate"
    assert _symptom("Model responses repeat a lot") == "output-degenerate"
    # verl-project/verl#4460 and #496: the update's time said to grow, or to be too long, in a title
    assert _symptom("why time cost of update_actor increasing with steps") == "slow-training"
    assert _symptom("step1 参数更新时间超长") == "slow-training"
    assert _symptom("训练代码 （训练时间很长）") == "slow-training"
    # a process said to end without a word, in the other wording ('without any error' is read above)
    assert _symptom("the job dies with no error message after loading the model") == "host-oom-killed"
    assert _symptom("it exits with no traceback at all") == "host-oom-killed"
    # seed 05 (ms-swift's load_args): a full run's checkpoint of a hundred-odd MB is an adapter
    assert _symptom("保存的checkpoint文件大小异常,仅有100多MB") == "checkpoint-adapter-only-load-args"
    assert _symptom("全参数训练后保存的模型只有100M") == "checkpoint-adapter-only-load-args"
    assert _symptom("the saved model is only 120 MB instead of 15 GB") == "checkpoint-adapter-only-load-args"
    assert _symptom("the model only has 7B parameters") is None
    assert _symptom("The outputs repeat the run's first error on every rank") is None
    assert _symptom("It iterates over value_model, which we have not defined and defaults to NoneType") \
        == "argument-error-other"
    assert _symptom("GRPO训练过程中loss和grad_norm都为0，提示没有label_names") == "grad-norm-zero"


def test_a_release_story_in_words():
    # dev21 2605 and dev19 2402
    assert _symptom("When I use unsloth 2025.1.8 all process is correct, but when I use unsloth 2025.2.4 the "
                    "generate and train process is wired") == "import-or-dependency-error"
    assert _symptom("I believe the biggest issue is that Unsloth is extremely sensitive to the versions of trl") \
        == "import-or-dependency-error"
    # dev20 2518: an argument check's words quoted in a sentence
    assert _symptom("I upgraded to swift 3.9.0 and the error changed to `'cached_datasets' does not support cp`.") \
        == "argument-error-other"


def _hang(text: str):
    """The hang finding of a paste: the words' (GD327), or the log-end reading of where its lines stop when that
    reading places it and the words agree."""
    return next((f for f in run(text) if f.category.startswith("hang")), None)


def test_a_hang_told_in_words_is_placed_at_start_by_log_lines_that_stop_before_any_step():
    words = "The process hangs and I have waited an hour.\n"
    engine = ("INFO 11-14 01:03:00 __init__.py:207] Automatically detected platform cuda.\n"
              "INFO 11-14 01:03:06 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: "
              "model='Qwen/Qwen2.5-3B', seed=0\n")
    assert _hang(words + engine).category == "hang-at-start"
    # the same words after training steps were logged: mid-training
    steps = "{'loss': 0.12, 'grad_norm': 1.3, 'learning_rate': 1e-06, 'epoch': 0.01}\n" * 3
    assert _hang(words + steps + engine).category == "hang-mid-training"
    # words alone, no log lines, nothing placing the stop: the likelier of the two (most hangs people report stop
    # before the first step); words that say training had made progress place it mid-training
    assert _hang(words).category == "hang-at-start"
    assert _hang("The process hangs after a few epochs and I have waited an hour.\n").category == "hang-mid-training"
    assert _hang("Training process hangs midway.\n").category == "hang-mid-training"
    assert _hang("训练几个epoch就会卡住\n").category == "hang-mid-training"


def test_start_words_of_a_hang():
    for said in ("The process hangs during vLLM initialization.", "It hangs once the tqdm bar appears and never moves.",
                 "It gets stuck at init_process_group on the second node.", "设置以后会直接卡住"):
        assert _hang(said + "\n").category == "hang-at-start", said


def test_works_under_a_condition_is_a_contrast_not_a_retraction():
    stuck = "在2机16卡上，设置了vllm_num_engine以后，会直接卡住\n"
    assert _hang(stuck + "不用ray的脚本，单机可以跑通\n") is not None
    # said without a condition, the author took the complaint back
    assert _hang(stuck + "现在可以跑了\n") is None


def test_stopped_before_training_reads_the_lines_not_the_words():
    from doctor.checks.hang.prose import _stopped_before_training

    def state(text: str):
        s = Session(load_catalog())
        for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
            s.feed_line(line)
        return s.state

    engine = ("INFO 11-14 01:03:00 __init__.py:207] Automatically detected platform cuda.\n"
              "INFO 11-14 01:03:06 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: model='q'\n")
    assert _stopped_before_training(state("It hangs.\n" + engine))
    assert not _stopped_before_training(state("It hangs.\n" + "{'loss': 0.1, 'grad_norm': 1.0, 'epoch': 0.1}\n" + engine))
    assert not _stopped_before_training(state("It hangs after a while.\nI waited an hour.\n"))


def test_a_cut_stack_the_author_says_they_stopped_is_where_a_stuck_run_sat_not_an_oom():
    stack = ('Trainer Stuck at 0% Progress during Training on Multi-GPU Setup\n'
             'Add: I can stop it sometime and raise this exception\n'
             '  File "/home/u/train.py", line 215, in train\n    trainer.train()\n'
             '  File "/env/lib/python3.10/site-packages/transformers/trainer.py", line 2790, in training_step\n'
             '    loss = self.compute_loss(model, inputs)\n'
             '  File "/env/lib/python3.10/site-packages/transformers/trainer.py", line 2812, in compute_loss\n'
             '    outputs = model(**inputs)\n')
    found = [f for f in run(stack) if f.severity >= 1]
    assert found[0].rule_id == "GD325" and found[0].category == "hang-at-start"
    assert not any(f.category == "cuda-oom" for f in found)
    # the same stack with no word of stopping it: the cut-traceback reading stands (an OOM in the loss pass)
    crash = stack.replace("Add: I can stop it sometime and raise this exception\n", "")
    crash = crash.replace("Trainer Stuck at 0% Progress during Training on Multi-GPU Setup\n", "Training crashed:\n")
    assert run(crash)[0].category == "cuda-oom"


def test_a_described_symptom_gets_its_usual_causes_in_neutral_terms():
    from doctor.checks.hang.symptom_words import MEANWHILE as _MEANWHILE
    f = next(x for x in run("Training runs out of GPU memory (OOM) at step 3 every time.\n") if x.rule_id == "GD327")
    assert f.category == "cuda-oom" and any("gradient checkpointing" in x for x in f.fix)
    # a description names no framework: no trainer's flag in any of them (py-spy's own --pid is a tool's option)
    assert not any(re.search(r"--(?!pid\b)\w", line) for line in _MEANWHILE.values())


def test_the_data_step_named_as_what_failed_is_a_dataset_failure_before_a_hang_it_caused():
    for said in ("DPO训练数据处理报错", "数据处理阶段报错。导致程序卡死", '"input_ids" not found in rloo trainer',
                 "I get an error while loading the dataset for DPO"):
        f = next(x for x in run(said + "\n") if x.rule_id == "GD327")
        assert f.category == "dataset-or-template-error", said
    # a dataset that loads slowly is not a dataset failure
    f = next((x for x in run("Loading the dataset is very slow\n") if x.rule_id == "GD327"), None)
    assert f is None or f.category != "dataset-or-template-error"


def test_some_data_runs_is_a_contrast_and_a_servers_start_up_is_the_start():
    f = _hang("grpo训练的时候训练几个epoch就会卡住\n对数据进行了shuffle操作 有的数据能跑通 有的数据就卡住\n")
    assert f is not None and f.category == "hang-mid-training"
    f = _hang("The job hangs after SGLang CUDA graph capture and server startup, no further progress.\n")
    assert f.category == "hang-at-start"


def test_megatrons_nan_in_a_grad_norm_bucket_is_a_nan_not_a_zero_norm():
    f = next(x for x in run("Unexpected result nan (message='found NaN in local grad norm for bucket #0 in backward "
                            "pass before data-parallel communication collective')\n") if x.rule_id == "GD327")
    assert f.category == "loss-nan-or-inf"
    # a zero norm said in words is still that
    f = next(x for x in run("grad_norm is always 0 during training\n") if x.rule_id == "GD327")
    assert f.category == "grad-norm-zero"


def test_rl_trends_said_in_words_take_the_categories_their_metric_rules_have():
    said = {"PPO loss seems coming down, but objective/kl increases a lot": "loss-nan-or-inf",
            "What Causes the Unexpected Increase in Entropy During Training?": "output-degenerate",
            "we observe at times spikes in response length": "output-degenerate",
            "Average response length is decreasing with PPO Trainer generate": "output-degenerate",
            "the reward fluctuates and the model is not learning": "reward-zero-or-flat"}
    for text, category in said.items():
        f = next((x for x in run(text + "\n") if x.rule_id == "GD327"), None)
        assert f is not None and f.category == category, text
    # a KL that stays small is not a runaway
    assert all(x.rule_id != "GD327" for x in run("the KL stays around 0.01 the whole time\n"))


def _top(text: str):
    found = [f for f in run(text) if f.severity >= Severity.warning]
    return found[0] if found else None


def test_argparse_refusal_named_in_words_is_an_argument_error():
    # Lib/argparse.py's wording retyped in a title (fixtures/devlogs33/3625's shape)
    top = _top('[Bug]: "unrecognized arguments" error when attempting to "serve" a model\n'
               "I run the container and it stops at once, the documentation gives this command.\n")
    assert top is not None and top.rule_id == "GD327" and top.category == "argument-error-other"
    assert any("one argument" in x for x in top.fix)


def test_a_hang_on_several_nodes_where_one_node_runs_is_at_start():
    # "stuck with two machines; one machine with many GPUs trains" (fixtures/devlogs33/3619's words): the contrast
    # is no retraction, and what differs is the cross-node communicator of the first collective
    top = _top("多机多卡训练时卡住\n两台机器就卡在这里不动了，并且单独单机多卡可以训练\n单台能训练，两台就不行\n")
    assert top is not None and top.rule_id == "GD327" and top.category == "hang-at-start"
    # the same words without the one-node contrast: nothing places the stop, so the likelier start-up; words of
    # progress place it mid-training
    top = _top("多机多卡训练时卡住\n两台机器就卡在这里不动了\n")
    assert top is not None and top.category == "hang-at-start"
    top = _top("多机多卡训练中途卡住\n两台机器就卡在这里不动了\n")
    assert top is not None and top.category == "hang-mid-training"


def test_an_environment_reporter_s_own_traceback_is_not_the_run_s_failure():
    # an issue template's collect_env.py failing on its own import (fixtures/devlogs33/3625)
    found = run("Traceback (most recent call last):\n"
                '  File "/home/u/containers/collect_env.py", line 17, in <module>\n'
                "    import regex as re\n"
                "ModuleNotFoundError: No module named 'regex'\n"
                "The server refuses my command with unrecognized arguments when I start the container.\n")
    assert [f.category for f in found if f.severity >= Severity.warning] == ["argument-error-other"]
    assert not any(f.rule_id == "GD450" for f in found)


def test_deepspeeds_auto_placeholders_left_unfilled_named_in_words():
    # accelerate#3152 (fixtures/devlogs36/3907) and deepspeedai/DeepSpeed#1270's description of the same mechanism
    assert _symptom("In 1.0, 'auto' values in a DS config are no longer interpolated when using DS-3.") \
        == "deepspeed-config-error"
    assert _symptom("the deepspeed assertions raise a str to int comparison error") == "deepspeed-config-error"
    assert _symptom("I set the batch size to auto in the trainer and it works") is None
    out = run("In 1.0, 'auto' values in a DS config are no longer interpolated when using DS-3.\n"
              "Code that has worked fine for year(s) on <=0.34.1 breaks with 1.0, with no other changes.\n")
    top = out[0]
    assert (top.rule_id, top.category) == ("GD327", "deepspeed-config-error")
    assert any("Write numbers for every \"auto\" value" in f for f in top.fix)


def test_every_symptom_the_words_name_gets_its_usual_causes():
    from doctor.checks.hang.symptom_words import MEANWHILE, MEANWHILE_SAID, SYMPTOMS
    for _rx, category, said in SYMPTOMS:
        if category != "hang":
            assert category in MEANWHILE or said in MEANWHILE_SAID, category
    f = next(x for x in run("Each checkpoint-500 folder takes 43GB for a 7B model.\n") if x.rule_id == "GD327")
    assert f.category == "checkpoint-bloat" and any("optimizer state" in x for x in f.fix)


def test_a_model_that_does_not_stop_and_a_run_that_slows_down_in_words():
    # trl#1449 and trl#2059 (fixtures/devlogs37/4005, 4027): SFT models that never learned their stop token
    assert _symptom("After supervised fine tuning, the model repeat the answer") == "output-degenerate"
    assert _symptom("Model does not generate eos when SFTTrainer with setup_chat_format is used") == "output-degenerate"
    assert _symptom("the model fails to generate eos_token and continues to ramble") == "output-degenerate"
    f = next(x for x in run("Model does not generate eos when SFTTrainer with setup_chat_format is used\n")
             if x.rule_id == "GD327")
    assert any("pad token is another token than eos" in x for x in f.fix)
    # "训练时候有时候速度会变得很慢" (devlogs37/4008), and English slow-downs
    assert _symptom("为什么训练时候有时候速度会变得很慢") == "slow-training"
    assert _symptom("Training gets slower and slower after epoch 2") == "slow-training"
    assert _symptom("I will slow down the learning rate") is None


def test_the_usual_causes_follow_the_kind_of_run():
    # an SFT launch (ms-swift 2.x's llm_sft.py, devlogs37/4009): no rollout engine in the advice for idle GPUs
    from doctor.engine import Session
    s = Session(load_catalog())
    s.state.run.add_command("CUDA_VISIBLE_DEVICES=0 python3 llm_sft.py --model_type qwen1half-moe-a2_7b-chat "
                            "--sft_type lora")
    for line in LineReader("p.log", [0]).lines(io.BytesIO("训练速度缓慢，GPU利用率低\n".encode())):
        s.feed_line(line)
    f = next(x for x in s.finish() if x.rule_id == "GD327")
    assert f.category == "gpu-underutilized" and any("without rollouts" in x for x in f.fix)
    assert not any("vLLM" in x for x in f.fix)


def test_a_zero_loss_beside_a_nan_gradient_norm_in_words_is_an_empty_supervision():
    # ymcui/chinese-llama-alpaca-3#29 (fixtures/devlogs37/4001)
    f = next(x for x in run("微调过程loss为0， grad_norm为nan\n") if x.rule_id == "GD327")
    assert f.category == "loss-nan-or-inf" and any("no supervised token" in x for x in f.fix)
    assert _symptom("my loss is 0.0 and grad_norm is nan from the first step") == "loss-nan-or-inf"
    # devlogs44 4710 (verl): the norms named in two words, in the plural
    assert _symptom("the actor's grad norms are always NaN from the first step") == "loss-nan-or-inf"
    f = next(x for x in run("loss becomes nan after 200 steps\n") if x.rule_id == "GD327")
    assert not any("no supervised token" in x for x in f.fix)


def test_a_hang_after_the_lines_show_start_up_done_is_not_blamed_on_start_up():
    # hiyouga/llamafactory#9679's lines (fixtures/devlogs37/4013): the group formed and ZeRO-3 built the model
    text = ("模型训练卡死\n"
            "[2025-12-27 15:11:12,692] [INFO] [config.py:735:__init__] Config mesh_device None world_size = 4\n"
            "[2025-12-27 15:11:52,868] [INFO] [partition_parameters.py:348:__exit__] finished initializing model - "
            "num_params = 74391, num_elems = 79.67B\n")
    f = next(x for x in run(text) if x.rule_id == "GD327")
    assert f.category == "hang-at-start" and any("start-up done" in x for x in f.fix)
    assert "never forms" not in f.message and not any("never forms" in x for x in f.fix)
    bare = next(x for x in run("模型训练卡死\n") if x.rule_id == "GD327")
    # the usual causes of a start that hangs are the explanation; the fix tells them apart
    assert "never forms" in bare.message and any("py-spy dump" in x for x in bare.fix)


def test_a_reward_function_given_completions_of_another_shape_in_words():
    # huggingface/trl#4202 (fixtures/devlogs36/3930), "function" mistyped as people do
    said = ("Last week the reward fucntion are supposed to recive a list of strs as completion. But now I think it is "
            "nested in a list and then [\"content]?")
    assert _symptom(said) == "reward-function-error"
    f = next(x for x in run(said + "\n") if x.rule_id == "GD327")
    assert any('completion[0][\\"content\\"]' in x or 'completion[0]["content"]' in x for x in f.fix)
    assert _symptom("The reward for the full run is logged to wandb as a list of numbers") is None


def test_sizes_of_saved_weights_stated_in_words_are_judged_by_arithmetic():
    # fixtures/devlogs38: 4103 (unsloth#186), 4112 (axolotl#1041), 4115 (verl#3318), 4123 (llamafactory#266)
    cases = {
        "I loaded unsloth/mistral-7b-instruct-v0.2-bnb-4bit and trained a LoRA; `model.safetensors` file has 4.45 GB.":
            ("checkpoint-bloat", "0.64 bytes a parameter of the 7B model"),
        "The size of the model generated using deepspeed with zeros2 (**2.1G**) and zero3 (**760K**) are different.":
            ("checkpoint-corrupt", "a save of 760 KB beside 2.1 GB"),
        "我用Seed-OSS-36B-Base模型进行SFT之后，保存了hf-model格式的权重是135GB，但是原始权重只有68GB":
            ("checkpoint-bloat", "1.99 times its size"),
        "预训练保存的pytorch_model.bin只有几十K，原始的13B":
            ("checkpoint-corrupt", "tens of KB for a model of 13B parameters"),
    }
    for text, (category, numbers) in cases.items():
        f = next(x for x in run(text + "\n") if x.rule_id == "GD327")
        assert f.category == category and numbers in f.message, (text, f.category, f.message)
    # a size of something else (a dataset, GPU memory) is not a save
    assert _symptom("My dataset is 2.1G and the GPU has 80G") is None
    # words: a LoRA output of adapter files only, weights larger than the original (peft#309, llamafactory#4675)
    assert _symptom("the output only hava adapter_config.json,adapter_model.bin") == \
        "checkpoint-adapter-only-load-args"
    assert _symptom("为什么我全参微调llama3-8b，权重文件变大了？") == "checkpoint-bloat"


def test_degenerate_outputs_described_or_quoted_and_the_same_weights_compared():
    # vllm#1185, unsloth#1267, unsloth#1832, QwenLM/Qwen3#178, vllm#952, vllm#1958 (fixtures/devlogs38)
    assert _symptom("When I run batch inferences, sometimes, the output from vLLM is empty") == "output-degenerate"
    assert _symptom("drastic drop in text generation when model is loaded using vllm") == "output-degenerate"
    assert _symptom("vllm reducing quality when loading local fine tuned Llama-2-13b-hf model") == "output-degenerate"
    assert _symptom("微调后的模型使用VLLM加载模型后推理输出乱码，但使用transformer导入模型后输出就是正确") == "output-degenerate"
    assert _symptom("the generated text is not end until the max length, with the repeated answer") == \
        "output-degenerate"
    f = next(x for x in run("save_pretrained_merged ruins my model\n") if x.rule_id == "GD327")
    assert any("loading the merged folder with transformers" in x for x in f.fix)
    f = next(x for x in run("the output from vLLM is empty for some prompts\n") if x.rule_id == "GD327")
    assert any("min_tokens=1" in x for x in f.fix)
    # a separator line or an empty list in a config is no completion
    assert _symptom("output ------------------------------------------") is None
    assert _symptom("the eval dataset is empty so I skip evaluation") is None


def test_words_for_a_silent_end_a_zero_loss_slow_speed_repetition_and_a_large_adapter():
    # fixtures/devlogs39: 4208 (a DeepSpeed run that ends saying nothing), 4205 (Colab's own words)
    assert _symptom("the process terminated automatically after loading the checkpoint shards, without providing "
                    "any additional information") == "host-oom-killed"
    assert _symptom('After several minutes, I receive the message: "Your session crashed after using all available '
                    'RAM."') == "host-oom-killed"
    assert _symptom("it runs to completion without errors") is None
    # 4210: "shutdown for no reasons without any hints" while 72B shards load on 8 ranks
    assert _symptom("when it loads 16/37 safetensor, it always been shutdown for no reasons without any hints!") == \
        "host-oom-killed"
    # 4218, 4219 (LLaMA-Factory's "freeze" fine-tuning is no freeze), 4206's title; an RL run's 0 is its rewards'
    assert _symptom("使用baichuan2-13B进行微调时出现loss全为0的情况") == "loss-nan-or-inf"
    assert _symptom("采用freeze 调试时，Loss突然增大，然后变为0，有大佬遇到过没有") == "loss-nan-or-inf"
    assert _symptom("fp16 finetune will loss=0") == "loss-nan-or-inf"
    assert _symptom("the loss is 0.35 after the first epoch") is None
    assert _symptom("GRPO训练，loss一直是0") != "loss-nan-or-inf"
    f = next(x for x in run("使用baichuan2-13B进行微调时出现loss全为0的情况\n") if x.rule_id == "GD327")
    assert any("bf16" in x and "no supervised token" in x for x in f.fix)
    # 4203, 4229: speed; 4217, 4221: repetition within a clause; 4222: over-generation; 4230: a size without a number
    assert _symptom("Extremly Low it/s on rtx 3090") == "slow-training"
    assert _symptom("Why I've got low speed?:") == "slow-training"
    # 4220: the training time grew with a setting (not the setting refused)
    assert _symptom("在不加sft_packing参数时，训练时间大概2天，加上sft_packing后训练时间激增到了15天。") == "slow-training"
    assert _symptom("llama3 sft训练之后，模型输出一直重复") == "output-degenerate"
    assert _symptom("Yi-6B model overgenerating after fine-tuning") == "output-degenerate"
    assert _symptom("Why is the lora_model so large after fine-tuning?") == "checkpoint-bloat"


def test_a_number_inside_a_models_name_is_no_size_and_lora_is_read_beside_cjk():
    # fixtures/devlogs39/4215 (LianjiaTech/BELLE#421): "BELLE-7B-2M" names 2M instructions; "lora权重文件有14G" under a
    # --use_lora run with a ZeRO-3 config file
    paste = ("lora权重文件有14G\n基座模型选的BELLE-7B-2M，进行LoRA微调，使用src/train.py\n"
             "torchrun --nproc_per_node 8 train.py --deepspeed configs/deepspeed_config_stage3.json --use_lora True\n")
    f = next(x for x in run(paste) if x.rule_id == "GD327")
    assert f.category == "checkpoint-bloat"
    assert "14 GB where a LoRA adapter was asked for (2.00 bytes a parameter of the 7B model)" in f.message
    assert "ZeRO-3 is named in the paste" in f.message and "2 MB" not in f.message


def test_a_launcher_killing_the_others_after_a_rank_exited_with_1_is_no_kill():
    # fixtures/devlogs39/4209: DeepSpeed's sigkill_handler stops the surviving ranks after one exited with status 1
    assert _symptom("Killing subprocess  exits with return code = 1 after saving one checkpoint") != "host-oom-killed"
    assert _symptom("the launcher says Killing subprocess 3353707 and nothing else") == "host-oom-killed"


def test_a_hang_with_no_progress_bar_ever_seen_is_at_start():
    # fixtures/devlogs39/4226 (vllm-project/vllm#17670): "suddenly hangs at llm.generate" before any output
    assert _symptom("VLLM suddenly hangs at `llm.generate`, not returning me anything.\n"
                    "I cannot see the progress bar on my screen.") == "hang-at-start"
    assert _symptom("VLLM suddenly hangs in the middle of the run") == "hang-mid-training"
    # the same sentence hard-wrapped inside a word by the paste
    assert _symptom("VLLM suddenly hangs at `llm.generate`, not returning me anything. I cann\n"
                    "ot see the progress bar on my screen.") == "hang-at-start"


def test_versions_that_do_not_match_said_in_words():
    # fixtures/devlogs40/4320 (modelscope/ms-swift#1519, the reporter's own resolution)
    assert _symptom("训练的时候出现了通信报错，已解决，是NCCL和cuda的版本不匹配导致的，重新安装环境就行了") == \
        "import-or-dependency-error"
    assert _symptom("Conflict between last version of Transformers.Trainer and DPOTrainer") == "import-or-dependency-error"
    # devlogs43 4608 (unslothai/unsloth#3742): one release hangs, the one before is fine
    assert _symptom("I reverted back to version 2025.12.4, where everything is fine.") == "import-or-dependency-error"
    # devlogs44 4729: a release named as needed
    assert _symptom("Training requires upgrading transformers from 4.49.0 due to dtype mismatch error") == \
        "import-or-dependency-error"


def test_rewards_that_plateau_and_an_rl_runs_zero_loss_in_words():
    # fixtures/devlogs41: 4424 (open-r1#474), 4418 (EasyR1#302, one framework's reward against another's)
    assert _symptom("Why don't rewards increase instead of staying at a certain value in GRPO？") == "reward-zero-or-flat"
    assert _symptom("同样的数据和reward，open r1  reward可以到0.9，但easy r1 只能到0.6") == "reward-zero-or-flat"
    # 4407 (trl#2884): GRPO's advantages are 0-mean by construction: no supervised loss falling to 0
    assert _symptom("GRPO r1-zero: reward oscillates\nbecause the advantage function in loss is always 0") != \
        "loss-nan-or-inf"


def test_a_tokenizer_without_a_chat_template_in_words():
    # fixtures/devlogs45 4810 (LLaMA-Factory, a Gemma-2 base), 4823 (NLFT's sft.py on Llama-3-8B base)
    assert _symptom("the tokenizer of Llama-3-8b do not have a chat_template. This leads to an error.") == \
        "dataset-or-template-error"
    assert _symptom("SFT a Gemma-2 Base model does not leads to a new tokenizer with a chat template") == \
        "dataset-or-template-error"
    f = next(x for x in run("Cannot apply chat template.\n") if x.rule_id == "GD327")
    assert any("copy `chat_template` from the instruct model" in x for x in f.fix)


def test_llamafactorys_freeze_mode_and_freeze_settings_are_no_hang():
    # a title of a real thread (fixtures/devlogs64/6712): LLaMA-Factory's freeze fine-tuning, not a frozen run
    assert _symptom("freeze模式ppo存在问题") != "hang-at-start"
    assert _symptom("with freeze_vision_tower the loss goes up and down") is None
    assert _symptom("the training freezes at step 120 every time") == "hang-mid-training"


def test_a_flat_row_read_at_info_leads_when_the_words_say_the_rl_run_does_not_improve(tmp_path):
    # dev52 5501 (unsloth GSPO): one flat row early in the run (GD610 alone: too early to tell) and the title saying the
    # training brought no improvement: the row's reading leads, at warning, with its evidence and its fixes
    from doctor.analyze import analyze
    (tmp_path / "log.txt").write_text(
        "reinforce(gspo) training didn't yield any improments\n"
        "{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 3.0e-08, 'reward': 4.0, 'reward_std': 0.0, "
        "'frac_reward_zero_std': 1.0, 'kl': 0.0, 'epoch': 0.01}\n", encoding="utf-8")
    f = analyze([str(tmp_path)]).findings[0]
    assert (f.rule_id, f.category, f.severity.name) == ("GD327", "reward-zero-or-flat", "warning")
    assert f.message.startswith("The paste's metric rows show it") and "lasts beyond the rows shown" in f.message
    assert [e.line for e in f.evidence] == [1, 2]
    assert not any(x.startswith("Paste a few metric rows") for x in f.fix)


def test_the_words_say_whose_memory_ran_out_only_when_they_name_it():
    # devlogs61/6427: "memory oom error" names no GPU; devlogs17/2117: the title's OOM, the GPU's memory (显存) on the
    # description line after it
    bare = [f for f in run("memory oom error\nI still encounter the following error after a few minutes of training\n")
            if f.rule_id == "GD327"][0]
    assert bare.category == "cuda-oom" and "the GPU runs out of memory" not in bare.message
    assert "without saying whether of the GPU or of the host" in bare.message
    gpu = [f for f in run("GRPO 训练过程中突然OOM\n4*A100(80G)使用grpo训练，前期显存每张卡占用约27G，但是训练过程中会突然报错OOM\n")
           if f.rule_id == "GD327"][0]
    assert "the GPU runs out of memory" in gpu.message


def test_an_nccl_failure_told_without_a_timeout_gets_no_timeout_advice():
    # devlogs63/6622: NCCL and gloo both fail at init on one node; nothing timed out
    said = "Single node multi-GPU training fails at init: NCCL error, and with gloo the same error.\n"
    found = [f for f in run(said) if f.rule_id == "GD327"]
    assert found and found[0].category == "nccl-timeout"
    text = " ".join(found[0].fix)
    assert "NCCL timeout is what" not in found[0].message and "NCCL_DEBUG=INFO" in text
    timed = [f for f in run("Multi-GPU training hangs and then NCCL timeout after 30 minutes.\n") if f.rule_id == "GD327"]
    # a timeout said: what the waiting ranks report is the explanation, the first error of each rank the fix
    assert timed and "An NCCL timeout is what the ranks that waited report" in timed[0].message
    assert "first error before the timeout" in " ".join(timed[0].fix)


def test_a_question_that_proposes_a_cause_is_not_the_symptom_the_paste_names():
    # devlogs66/6928: the loss of 0 is the symptom; "could the torch/CUDA mismatch cause it?" is the author's guess
    found = [f for f in run("base模型lora微调 loss为0\n"
                            "因此我安装的torch版本是cu118+torch2.1.2。是否可能由于torch版本与实际cuda版本不匹配导致loss为0？\n")
             if f.rule_id == "GD327"]
    assert found and found[0].category == "loss-nan-or-inf" and found[0].evidence[0].line == 1
    # with only the guess, it is still read
    alone = [f for f in run("是否可能由于torch版本与实际cuda版本不匹配导致报错？\n") if f.rule_id == "GD327"]
    assert alone and alone[0].category == "import-or-dependency-error"


def test_a_small_vllm_memory_share_set_in_the_paste_is_the_reading_of_no_room_for_the_cache():
    # devlogs62/6517 (vLLM on a T4): the author lowered gpu_memory_utilization to 0.1, expecting less memory used
    text = ("When I reduce gpu_memory_utilization to 0.1, it gets the error :\n"
            "'No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
            "engine.'\n"
            "llm = LLM(model=\"hiuman/Vistral-7B-Chat-quantize\", quantization=\"AWQ\", gpu_memory_utilization=0.1)\n")
    found = [f for f in run(text) if f.rule_id == "GD327"][0]
    assert found.category == "vllm-oom-or-kv-cache"
    assert "The paste sets gpu_memory_utilization 0.1 (line 3)" in found.message
    assert found.fix[0].startswith("Raise gpu_memory_utilization from 0.1")
    # a share that is not small is no reading
    assert not [f for f in run(text.replace("0.1", "0.9")) if f.rule_id == "GD327"][0].fix[0].startswith("Raise")


def test_idle_gpus_beside_a_run_that_stopped_are_a_hang_and_beside_a_busy_cpu_a_slow_run():
    # idle GPUs are how a hang looks from nvidia-smi; with the CPU busy the work moved there (dev 3830's words)
    assert _symptom("Training stops at step 150 without any error, the process is still alive but GPU util is "
                    "0%.").startswith("hang-")
    assert _symptom("The run no longer progresses after a few hours and the GPU utilization drops to 0%") \
        .startswith("hang-")
    assert _symptom("The CPU Util rate is very high when GPU Util rate is 0% , until it stucks for a long time.") \
        == "gpu-underutilized"
    assert _symptom("The overall GPU util rate during training seems low, around 30%") == "gpu-underutilized"


def test_batch_checks_and_missing_reward_functions_retold_in_words():
    # trl's own wording retold (grpo_trainer.py "The global eval batch size (N x M) must be evenly divisible by the
    # number of generations per prompt"): the eval check is its own category, before the train batch's
    assert _symptom("it says the global eval batch size must be evenly divisible by the number of generations per "
                    "prompt, but my train batch is fine") == "eval-batch-divisibility"
    assert _symptom("training fails because the batch size is not divisible by the number of GPUs I use") == \
        "batch-divisibility"
    assert _symptom("I set batch size 7, does it matter?") is None
    # verl's default_compute_score: "Reward function is not implemented for data_source=..."
    assert _symptom("training crashes because there is no reward function registered for this data_source") == \
        "reward-function-error"
    assert _symptom("KeyError... the reward function is not found in the registry") == "reward-function-error"
    assert _symptom("my reward function is not implemented yet, so I used the default one") is None


def test_a_run_said_never_to_reach_its_first_step_is_a_hang_at_start():
    assert _symptom("It never reaches the first step; nothing is printed after model loading for an hour.") == \
        "hang-at-start"
    assert _symptom("No output for 30 minutes after the vLLM engine started") is not None


def test_an_issue_forms_section_headings_are_the_forms_words_not_a_failure():
    from doctor.sources.prose_text import form_or_reply
    for heading in ("### Bug Description / Bug 描述", "### Reproduction", "## System Info", "### 报错信息",
                    "### Error logs"):
        assert form_or_reply(heading), heading
    # a heading that is the report itself, and a sentence under a heading, are not the form's
    assert not form_or_reply("### RuntimeError: CUDA error: an illegal memory access was encountered")
    assert not form_or_reply("The bug description: training crashes at step 3.")


def test_a_busy_gpu_in_chinese_is_not_an_idle_one():
    # "显卡利用率100%" holds "00%": the figure is read whole
    assert _symptom("显卡利用率100%，但是训练很慢") != "gpu-underutilized"
    assert _symptom("GPU利用率只有10%左右") == "gpu-underutilized"


def test_a_shell_assignment_whose_name_holds_error_is_no_failure_line():
    # verl-project/verl#4460's settings (dev67 7012): `export HYDRA_FULL_ERROR=1` names a setting; with no other
    # failure words the excerpt reads as one that shows no failure, and its own words are not quoted as one
    settings = "export CUDA_DEVICE_MAX_CONNECTIONS=1\nexport HYDRA_FULL_ERROR=1\nNCCL_ASYNC_ERROR_HANDLING=1\nkl_coef=0.0\n"
    found = run(settings)
    assert found and not any("HYDRA_FULL_ERROR" in f.message or "NCCL_ASYNC_ERROR" in f.message for f in found)
    found = run(settings + "RuntimeError while I launch it\n")
    assert "`RuntimeError while I launch it`" in found[0].message


def test_slow_steps_whose_time_the_paste_gives_ask_for_where_the_time_goes_not_for_the_timings():
    told = "GRPO training is very slow\nEach step takes 20 minutes on 8 H100.\n"
    found = next(f for f in run(told) if f.category == "slow-training")
    assert "step timings" not in found.message and "where one step's time goes" in found.message
    bare = next(f for f in run("GRPO training is very slow\n") if f.category == "slow-training")
    assert "the step timings" in bare.message


def test_a_titles_symptom_comes_before_one_the_body_mentions_in_passing():
    # devlogs47 5015's shape: a hang in the title, an OOM already worked around in the body
    told = "Training hangs at step 120\nEarlier I had an OOM with a larger batch, now it just hangs.\n"
    assert _symptom(told).startswith("hang")
    # no title (the paste does not start with the symptom's line): the body's order as before
    assert _symptom("\n" + told.split("\n", 1)[1]) == "cuda-oom"
    # the same family in both: the body's line places the hang (devlogs 2112: '卡住' above '卡在5/4752')
    both = run("ppo训练，长时间卡住\n两个模型都是12B，卡在5/4752，6个小时了\n")
    assert both[0].category == "hang-mid-training"
