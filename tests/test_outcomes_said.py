"""What a paste's own sentences say worked (doctor/classify/outcomes_said.py): read from sentences of real threads
(the dev sets' logs they are quoted from are named), and the ones it must not read: questions, negations, a failing
run described, a statement with nothing to act on. Then the end to end: a fallback finding gets the sentence as its
first fix; a finding a rule proves does not."""
from __future__ import annotations

from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.classify.outcomes_said import ADVISED, CAUSE, SOLVED, WORKED, WORKS, read
from doctor.signals import LogLine, Where


def _read(*texts: str):
    return [(s.kind, s.text) for s in read(LogLine(t, t, Where("log.txt", i), None, i)
                                           for i, t in enumerate(texts, 1))]


@pytest.mark.parametrize("text,kind", [
    # devlogs24/3020, torch rendezvous across nodes
    ("I had the same issue, and switching from IP to hostname solved it for me.", SOLVED),
    # devlogs38/4123, LLaMA-Factory
    ("感谢!   transformers替换成4.30.1就正常了", SOLVED),
    # devlogs62/6525, verl
    ("我也遇到了这个问题，把vLLM从v1 engine切换到v0 engine就可以了：", SOLVED),
    # devlogs65/6824, FastChat
    ("pip install flash-attn --no-build-isolation. it works for me", SOLVED),
    # devlogs22/2723, DeepSpeed
    ("I tried with `deepspeed==0.15.0` as the `requirements.txt` and failed, but it works with `0.15.4`.", WORKS),
    # devlogs44/4719, vLLM
    ("OOM Error with `Qwen/Qwen3-235B-A22B` on V1 Engine, Works on V0 Engine", WORKS),
    # devlogs63/6617, vLLM
    ("LLM is not getting loaded on multiple GPUs but works fine on a single GPU", WORKS),
    # devlogs32/3534, ms-swift
    ("前几天用3.13.0dev还可以正常训练，今天尝试了拉取4.0.0dev和3.12.2，都出现了这个问题。", WORKED),
    # devlogs65/6803, unsloth
    ("`train_on_responses_only` functionaloty worked fine with March release, yet, it got broken with the later "
     "versions including the most recent one.", WORKED),
])
def test_an_outcome_sentence_is_read_with_its_kind(text: str, kind: str) -> None:
    got = _read(text)
    assert [k for k, _ in got] == [kind]
    assert got[0][1] in text and len(got[0][1]) > len(text) // 2


def test_the_sentence_quoted_is_the_one_that_says_it() -> None:
    # devlogs38/4123: the thanks before it is its own sentence
    assert _read("感谢!   transformers替换成4.30.1就正常了") == [(SOLVED, "transformers替换成4.30.1就正常了")]


@pytest.mark.parametrize("text", [
    "请问解决了吗？目前我也遇到了同样的问题",                                    # a question (devlogs37/4001)
    "Does unsloth still work with multi-gpu support with fast inference for grpo?",  # a question (devlogs58/6103)
    "It seems the latest and previous two versions of Unsloth don't work with the GRPO Trainer",  # negated
    "I have fixed it, close this issues.",                                        # nothing to act on (devlogs49/5224)
    "Errors can be seen below, and it has been issued and solved at [this DeepSpeed issue](https://x/6793).",  # no change
    "I trained on Qwen3-8b, and it always output nan when it comes to step 152 whatever learning rate I set.",  # the failing run
    "Command that runs on master and worker node",                               # a description, not an outcome
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3699, unhandled cuda error (run with "
    "NCCL_DEBUG=INFO for details)",                                               # an exception's line
    "still not solved after I upgraded transformers to 4.46",                     # negated
    # a failure that stays is neither a cause nor a way out
    "the problem is still there with `vllm==0.8.5`",
    "the problem never went away after I upgraded vllm to 0.8",
])
def test_no_outcome_is_read_where_there_is_none(text: str) -> None:
    assert _read(text) == []


def test_one_sentence_of_each_kind_in_order() -> None:
    got = _read("Works with enforce-eager. Gives 20 token per seconds.",
                "It works well with DeepSpeed v0.14.0",
                "更新後正常了謝謝~~")
    assert [k for k, _ in got] == [WORKS, SOLVED]


def _case(tmp_path: Path, text: str) -> Path:
    (tmp_path / "log.txt").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_fallback_finding_leads_with_what_the_paste_says_worked(tmp_path: Path) -> None:
    # devlogs22/2710 (LLaMA-Factory webui PPO): the error only in a screenshot, the fix in the reporter's words
    case = _case(tmp_path, "LLaMA-Factory webui PPO LoRA training fails with an error (screenshot)\n"
                           "--report_to none  这个参数去掉就可以了，train_web.py生成的命令也需要做对应的调整\n")
    first = analyze([str(case)]).findings[0]
    assert first.fix[0].startswith("The paste reports what got it going: “--report_to none  这个参数去掉就可以了")


def test_a_finding_a_rule_proves_keeps_its_own_fix_first(tmp_path: Path) -> None:
    case = _case(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                           "total capacity of 79.11 GiB of which 1.10 GiB is free.\n"
                           "It works with per_device_train_batch_size 1.\n")
    first = analyze([str(case)]).findings[0]
    assert first.confidence == "certain" and first.category == "cuda-oom"
    # the person's result on this run comes after the rule's levers, never in their place
    assert not first.fix[0].startswith("The paste") and first.fix[-1].startswith("The paste says it works")


def test_a_likely_finding_leads_with_the_release_the_paste_says_works(tmp_path: Path) -> None:
    # the words of devlogs28/3401 (trl 0.15.2 with PEFT and reentrant checkpointing), told as a regression
    case = _case(tmp_path, "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n"
                           "This works fine with trl 0.14.0, it broke after upgrading to 0.15.2\n")
    first = analyze([str(case)]).findings[0]
    # the rule reads a setting as the cause; the paste says the same setup worked with the earlier release
    assert (first.rule_id, first.confidence, first.category) == ("GD634", "possible", "import-or-dependency-error")
    assert first.alternatives[0] == "argument-error-other" and "what changed between the two" in first.message
    assert first.fix[0].startswith("The paste says it worked before:")
    assert "`pip install 'trl==0.14.0'`" in first.fix[0]
    assert any("enable_input_require_grads" in f for f in first.fix[1:])


@pytest.mark.parametrize("text,kind", [
    # devlogs53/5624 (NCCL): the fix named as such
    ("Actual fix: Update the GPU driver to the latest. I have run tests with 570, and the issue is fixed there.", SOLVED),
    # devlogs41/4417 (NeMo-RL): a branch on which it runs
    ("It can run correctly on main.", WORKS),
    # devlogs63/6615 (ms-swift deploy): a maintainer's statement of where a parameter applies, and the advice after it
    ("max_memory 这个参数只对infer_backend pt生效", CAUSE),
    ("vllm请使用tensor_parallel_size", ADVISED),
    # devlogs61/6422 (DeepSpeed): the docstring's own limitation
    ("Note: zero.Init is only applicable to training with ZeRO-3", CAUSE),
    # devlogs40/3920 (Ray placement), devlogs49/5111 (DeepSpeed load_checkpoint), devlogs65/6701 (trl ref_model)
    ("Therefore, I think the issue is not related to the setting of `master_addr`, but instead to how the packing is "
     "managed by the Ray placement group.", CAUSE),
    ("It is because engine.module is partitioned, and load_checkpoint() wants a pristine model.", CAUSE),
    ("The root cause is that `max_model_len` is too small for the prompt.", CAUSE),
    ("The error occurs because deepspeed 0.15.0 is incompatible with torch 2.4.", CAUSE),
    # devlogs19/1908 (transformers pin), devlogs62/6530 (another checkpoint): the failure gone is a way out
    ("When I pin to transformers==4.52.4 the issue is gone.", SOLVED),
    ("error with `decapoda-research/llama-7b-hf` but the error went away using `huggyllama/llama-7b`", SOLVED),
    # releases that broke or fixed the run, said outright
    ("After upgrading to trl 0.15.2 this error appears, with 0.14.0 it was fine.", WORKED),   # not a way out
    ("This is a regression introduced in vllm 0.8.0.", WORKED),
    ("It worked in v0.14 but fails in v0.15.", WORKED),
    ("Since ms-swift 3.2 the training crashes at step 0.", WORKED),
    ("Downgrading transformers to 4.45.2 works.", SOLVED),
    ("回退到3.1.0版本可以正常运行", SOLVED),
])
def test_more_ways_of_saying_it(text: str, kind: str) -> None:
    assert [k for k, _ in _read(text)] == [kind]


def test_a_fix_announced_and_its_change_in_the_next_sentence_are_one() -> None:
    # devlogs25/3103 (unsloth maintainer)
    got = _read("@cnsh2543 @DJAlexJ Fixed!! Much apologies on the delay. Please update Unsloth on local machines via")
    assert [k for k, _ in got] == [SOLVED] and "Fixed!" in got[0][1] and "update Unsloth" in got[0][1]


def test_what_should_be_fixed_is_no_outcome() -> None:
    # devlogs47/4405 (trl): a request, not a report
    assert _read("When using DPOTrainer with deepspeed zero1, I find that print(model.training) will give True which "
                 "means the model can be updated but the ref_model should be fixed from the DPO paper.") == []


@pytest.mark.parametrize("text", [
    # devlogs53/5405 (unsloth maintainer): "should be fixed now" reports a release
    "This should be fixed now - sorry on the delay - please update with `uv pip install --upgrade unsloth unsloth_zoo`",
    # devlogs55/5906 (trl)
    "@younesbelkada sorry for the late response. Indeed, with gradient_checkpointing set to True the issue has been "
    "resolved.",
])
def test_a_fix_reported_done_is_read(text: str) -> None:
    assert [k for k, _ in _read(text)] == [SOLVED]


def test_a_paste_saying_an_earlier_release_worked_is_placed_as_a_version_regression(tmp_path: Path) -> None:
    # devlogs65/6803 (unslothai/unsloth): no error line, the regression told in words
    case = _case(tmp_path, "train_on_responses_only is broken with new Unsloth releases\n"
                           "`train_on_responses_only` functionaloty worked fine with March release, yet, it got broken "
                           "with the later versions including the most recent one.\n")
    first = analyze([str(case)]).findings[0]
    assert (first.category, first.confidence) == ("import-or-dependency-error", "possible")
    assert "a regression between releases" in first.message
    assert first.fix[0].startswith("The paste says it worked before:")


def test_working_in_another_setup_does_not_place_the_category(tmp_path: Path) -> None:
    case = _case(tmp_path, "The reward stays flat for my own dataset, something is wrong with the training.\n"
                           "It works fine on one GPU with the demo dataset.\n")
    first = analyze([str(case)]).findings[0]
    assert first.category != "import-or-dependency-error"


@pytest.mark.parametrize("text", [
    # devlogs65/6808 (LLaMA-Factory): a maintainer's reply
    "change `vllm_maxlen: 2048` to `vllm_maxlen: 1136`",
    # devlogs65/6811 (ms-swift)
    "@Sakura-not-sleep  You should place `NPROC_PER_NODE` before `swift sft` because it is an environment variable.",
])
def test_a_replys_instruction_is_read_as_advice(text: str) -> None:
    assert [k for k, _ in _read(text)] == [ADVISED]


@pytest.mark.parametrize("text", [
    # transformers' own FutureWarning (devlogs37/4012): the program's advice, not a reply
    "FutureWarning: This implementation of AdamW is deprecated. Use the PyTorch implementation torch.optim.AdamW "
    "instead, or set `no_deprecation_warning=True` to disable this warning",
    # a change tried in vain (devlogs19/2527)
    "Reduce gpu_memory_utilization and repeat the same error.",
    # a traceback's code line
    "raise value.as_instanceof_cause()",
])
def test_what_is_not_a_replys_advice(text: str) -> None:
    assert ADVISED not in [k for k, _ in _read(text)]


def test_a_way_out_that_is_another_release_places_a_generic_failure_as_a_version_problem(tmp_path: Path) -> None:
    # devlogs63/6614 (ms-swift): the error only in a screenshot, the maintainer pins transformers
    case = _case(tmp_path, "多机训练 Qwen3-VL-8B 报错\n"
                           "try use transformers==4.57.1\n")
    first = analyze([str(case)]).findings[0]
    assert (first.category, first.confidence) == ("import-or-dependency-error", "possible")
    assert "another release of a package" in first.message


def test_a_way_out_that_is_a_setting_places_a_generic_failure_as_a_settings_problem(tmp_path: Path) -> None:
    # devlogs65/6811 (ms-swift): the maintainer's reply is the only ground
    case = _case(tmp_path, "deepspeed错误\n"
                           "@Sakura-not-sleep  You should place `NPROC_PER_NODE` before `swift sft` because it is an "
                           "environment variable.\n")
    first = analyze([str(case)]).findings[0]
    assert (first.category, first.confidence) == ("argument-error-other", "possible")
    assert first.fix[0].startswith("A reply in the paste advises:")


@pytest.mark.parametrize("text", [
    # devlogs24/3021 (torchrun across nodes)
    "I think it comes down to something about the rendez-vous ports.",
    # devlogs52/5515 (ms-swift): the reporter's analysis
    "排查后发现是因为在文件`swift/llm/train/tuner.py`中，多模态模型会调用`get_multimodal_target_regex`函数生成regex正则；",
])
def test_the_authors_reading_of_the_cause_is_read(text: str) -> None:
    assert [k for k, _ in _read(text)] == [CAUSE]


@pytest.mark.parametrize("text", [
    "The format in dataset_info looks like this",                      # a description (devlogs13/1913)
    "mostly remain 0 or a small value for qwen2.5-3b-instruct model ( mainly due to the format ).",
])
def test_a_description_is_no_reading_of_the_cause(text: str) -> None:
    assert CAUSE not in [k for k, _ in _read(text)]


def test_the_authors_reading_is_quoted_in_the_message_not_offered_as_a_fix(tmp_path: Path) -> None:
    case = _case(tmp_path, "torchrun fails on two nodes, works fine on one node.\n"
                           "I think it comes down to something about the rendez-vous ports.\n")
    first = analyze([str(case)]).findings[0]
    assert "The paste's own reading of the cause: “I think it comes down" in first.message
    assert not any("rendez-vous ports" in f for f in first.fix)


def _head_view(session) -> list[tuple[int, int, str]]:
    return [(ln.where.line, ln.seq, ln.text) for ln in session.state.heads["log.txt"]]


def test_a_long_pastes_first_lines_are_kept_alike_by_the_line_path_and_the_scanner(tmp_path: Path) -> None:
    from conftest import line_and_scan
    head = ("GRPO hangs after the first rollout on two nodes\n"
            "\n"
            "switching from IP to hostname solved it for me\n")
    body = "".join(f"[INFO:swift] step {i}: waiting for the rollout server\n" for i in range(400))
    a, b, *_ = line_and_scan((head + body).encode(), tmp_path)
    assert _head_view(a) == _head_view(b)
    assert _head_view(a)[1] == (3, 3, "switching from IP to hostname solved it for me")
    assert len(_head_view(a)) == 40


def test_an_outcome_at_the_top_of_a_long_paste_is_read(tmp_path: Path) -> None:
    # the sentence lies beyond the 60 lines a log's end keeps; nothing else in the paste is read (GD330)
    case = _case(tmp_path, "my evaluation script prints nothing useful and the job never finishes\n"
                           "switching from IP to hostname solved it for me\n"
                           + "".join(f"processing shard {i} of the corpus\n" for i in range(200)))
    first = analyze([str(case)]).findings[0]
    assert first.rule_id == "GD330"
    assert first.fix[0] == ("The paste reports what got it going: “switching from IP to hostname solved it for me”. "
                            "Try that change first.")


def test_a_setup_that_works_elsewhere_leaves_a_likely_category_as_it_is(tmp_path: Path) -> None:
    # another setup (one GPU), not another release: the rule's reading stands, the sentence leads its fixes
    case = _case(tmp_path, "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n"
                           "It works fine on one GPU.\n")
    first = analyze([str(case)]).findings[0]
    assert (first.confidence, first.category) == ("likely", "argument-error-other")
    assert first.fix[0].startswith("The paste says it works in another setup:")


def test_a_solution_announced_on_one_line_and_made_on_the_next_is_one_outcome() -> None:
    # devlogs63/6617 (vLLM tensor parallel load that never finishes)
    got = _read("I just found a solution that works!", "I set the env variable as `export NCCL_P2P_DISABLE=1`")
    assert got == [(SOLVED, "I just found a solution that works! I set the env variable as `export NCCL_P2P_DISABLE=1`")]
    # devlogs44/4725: the sentence ends in "by" and its change is the next line
    assert _read("I have solved the issue of llamafactory train by", "1. install transformers==4.44.2") == \
        [(SOLVED, "I have solved the issue of llamafactory train by 1. install transformers==4.44.2")]
    # a sentence that only mentions a solved issue does not take the next line's words as its change (devlogs22/2723),
    # nor does a request for the solution (devlogs15/1514)
    assert _read("Errors can be seen below, and it has been issued and solved at [this DeepSpeed issue](https://x/6793).",
                 "I don't know if you have encountered this issue. I tried with `deepspeed==0.15.0`.") == []
    assert _read("If so, I would greatly appreciate it if you could share how you resolved it.",
                 "For reference, I am currently using 2 RTX 3090 GPUs.") == []


@pytest.mark.parametrize("text,expected", [
    # devlogs66/6928: the change, then 问题解决 without 了
    ("Peft版本降低至0.6.0后问题解决，但loss只能降到1左右，无法降低到示例中说的比较好的0.5。",
     "Peft版本降低至0.6.0后问题解决，但loss只能降到1左右，无法降低到示例中说的比较好的0.5。"),
    # devlogs61/6414: a maintainer's release pointer is an upgrade that is out, not a wish
    ("@wudejian789 should be fixed in release 4.3", "@wudejian789 should be fixed in release 4.3"),
    # devlogs63/6611: the statement before the question after the comma
    ("改成 min(len(image_start_tokens), len(image_end_tokens)) 之后能正常运行了，请问这样改会有影响吗？",
     "改成 min(len(image_start_tokens), len(image_end_tokens)) 之后能正常运行了"),
])
def test_solved_said_in_other_words(text: str, expected: str) -> None:
    assert _read(text) == [(SOLVED, expected)]


@pytest.mark.parametrize("text", [
    "If it's solved, then it should be faster!! Also set gradient checkpointing = False like in TRL!",  # devlogs41/4411
    "will be fixed in the next release",
    "问题没有解决，Peft版本降低至0.6.0也一样",
])
def test_a_condition_a_wish_or_a_denial_is_no_solution(text: str) -> None:
    assert SOLVED not in [k for k, _ in _read(text)]


def test_the_release_a_change_moved_to_becomes_a_pip_line(tmp_path: Path) -> None:
    # devlogs66/6928's resolution under a loss-of-0 description that no rule proves
    case = _case(tmp_path, "chatglm3 base model lora finetune on 4 GPUs: the loss is 0 from the first steps\n"
                           "Peft版本降低至0.6.0后问题解决，但loss只能降到1左右。\n")
    first = analyze([str(case)]).findings[0]
    assert first.fix[0].startswith("The paste reports what got it going: “Peft版本降低至0.6.0后问题解决")
    assert first.fix[0].endswith("`pip install 'peft==0.6.0'`.")
    assert "The paste reports the change that got it going (line 2, quoted in the fixes)" in first.message


def test_the_settings_on_the_lines_after_a_colon_belong_to_the_outcome() -> None:
    # devlogs62/6525 (verl rollout hang): the way out, then its overrides one a line
    got = _read("我也遇到了这个问题，把vLLM从v1 engine切换到v0 engine就可以了：",
                "actor_rollout_ref.rollout.enforce_eager=True \\",
                "actor_rollout_ref.rollout.free_cache_engine=True \\",
                "搜到了一个相关的issue")
    assert got == [(SOLVED, "我也遇到了这个问题，把vLLM从v1 engine切换到v0 engine就可以了： "
                            "actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.free_cache_engine=True")]
    # the environment of a command that goes on on the next line is not the way out (devlogs36/4904)
    assert _read("但是 swift infer 可以正常跑，命令行如下：", "CUDA_VISIBLE_DEVICES=1,2 \\",
                 "swift infer \\", "--model Qwen/Qwen2.5-VL-7B") == []


def test_a_change_then_what_ran_normally_without_le_is_what_worked():
    # dev 4510: "使用--dtype fp32后推理正常" (after using --dtype fp32, inference is normal)
    from doctor.classify.outcomes_said import read
    from doctor.signals import LogLine, Where

    def kinds(text):
        return [s.kind for s in read([LogLine(text, text, Where("p", 1), None, 0)])]
    assert kinds("似乎是bfloat16数据类型导致的，使用--dtype fp32后推理正常") == ["solved"]
    assert kinds("使用--dtype fp32后推理还是不正常") == []
    assert kinds("升级后训练正常吗？") == []
