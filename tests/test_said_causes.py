"""A symptom named only in words gets its usual causes in the message (doctor/checks/hang/usual_causes.py), a format
reward at 0 gets the pattern pitfalls (doctor/checks/rewards/format_pattern.py) whether it is said in words (GD327) or
seen in logged rows (GD612), the quote is the sentence that names the symptom, and a number that is not 0 is not
read as one."""
from __future__ import annotations

import io

import pytest

from doctor.checks.hang.prose import said_quote
from doctor.checks.hang.symptom_words import FORMAT_ZERO, SYMPTOMS
from doctor.checks.hang.usual_causes import USUAL_SAID
from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def said(text: str):
    return next((f for f in run(text + "\n") if f.rule_id == "GD327"), None)


@pytest.mark.parametrize("text", [
    # devlogs67/7014 (StarsfieldAI/R1-V#124), devlogs32/3523 (huggingface/open-r1#256)
    "Why does format reward equal to zero?",
    "Additionally, my format reward always remains 0, which is very concerning.",
    "The format reward stays at 0 for the whole run",
    "soft_format_reward_func always zero",
    "GRPO训练中format reward一直是0",
    "格式奖励一直为0",
    "the format_reward is always 0.0",
])
def test_a_format_reward_at_zero_said_in_words_gets_the_pattern_pitfalls(text: str) -> None:
    f = said(text)
    assert f is not None and f.category == "reward-zero-or-flat", text
    assert "the format reward is (or fell to) 0" in f.message and "re.DOTALL" in f.message
    assert any(x.startswith("Meanwhile: call the format reward by hand") for x in f.fix)


def test_the_reward_at_large_at_zero_is_not_the_format_one() -> None:
    f = said("the reward stays at 0 during GRPO training")
    assert f is not None and "the reward is (or fell to) 0" in f.message and "re.DOTALL" not in f.message
    assert "every advantage is 0" in f.message


@pytest.mark.parametrize("text", ["the reward is 0.5 after training", "the average reward stays at 0.8",
                                  "the format reward is 0.7 in the first steps", "grad_norm is 0.5 in GRPO",
                                  "the reward is 0.05 at best"])
def test_a_number_that_begins_with_0_is_not_0(text: str) -> None:
    f = said(text)
    assert f is None or not any(w in f.message for w in ("is (or fell to) 0", "stays 0"))


def test_every_usual_cause_is_said_for_a_symptom_the_words_name() -> None:
    names = {s for _, _, s in SYMPTOMS}
    assert set(USUAL_SAID) <= names and FORMAT_ZERO in USUAL_SAID
    cases = {"the gradient norm stays 0": "GRPO训练中Loss和grad_norm一直为0",
             "the reward is always 1": "grpo训练过程中的accuracy reward和format reward一直都是1",
             "the reward does not improve": "The reward does not improve after 300 steps of GRPO",
             "the KL to the reference": "objective/kl increases a lot after step 40 in PPO",
             "the policy's entropy": "the response length keeps decreasing during GRPO training"}
    for head, text in cases.items():
        key = next(s for s in USUAL_SAID if s.startswith(head))
        f = said(text)
        assert f is not None and USUAL_SAID[key] in f.message, text


def test_the_quote_is_the_sentence_that_names_the_symptom() -> None:
    # devlogs32/3523: the line opens with another question and names the format reward near its end
    line = ("I'm concerned that the reward function (accuracy reward) doesn't show any improvement after 20 steps in "
            "the RL part (grpo.py) in my experiment. Could you please share your plots? Additionally, my format "
            "reward always remains 0, which is very concerning.")
    assert said_quote(FORMAT_ZERO, line) == "Additionally, my format reward always remains 0, which is very concerning."
    assert said_quote(FORMAT_ZERO, "format reward is 0") == "format reward is 0"


def test_a_format_reward_at_zero_in_logged_rows_gets_the_pitfalls() -> None:
    # the shape of devlogs2/126 (an unsloth notebook's table): one format function at 0, the others moving
    rows = "".join(f"{{'reward': {-1.5 - k * 0.25}, 'rewards/match_format_exactly': 0, "
                   f"'rewards/correctness_reward_func': {0.5 + k * 0.1}, 'epoch': {k / 100}}}\n" for k in range(8))
    f = next(x for x in run(rows) if x.rule_id == "GD612")
    assert any(x.startswith("'match_format_exactly' checks a format:") and "re.DOTALL" in x for x in f.fix)
    rows = rows.replace("match_format_exactly", "correct_answer").replace("correctness_reward_func", "length_bonus")
    f = next(x for x in run(rows) if x.rule_id == "GD612")
    assert not any("re.DOTALL" in x for x in f.fix) and any("Run the 'correct_answer' reward offline" in x for x in f.fix)


@pytest.mark.parametrize("text,category", [
    ("GRPO training hangs at step 0 on 2 nodes", "hang-at-start"),
    ("Training gets stuck after 300 steps with GRPO", "hang-mid-training"),
    ("GRPO training is very slow, 200s per step", "slow-training"),
    ("the output is garbled after GRPO training", "output-degenerate"),
    ("loss becomes nan after 100 steps in DPO", "loss-nan-or-inf"),
    ("the process was killed by OOM killer, host memory full during GRPO", "host-oom-killed"),
    ("GPU utilization is very low during GRPO training", "gpu-underutilized"),
    ("NCCL timeout during GRPO training after 2 hours", "nccl-timeout"),
])
def test_a_category_said_in_plain_words_gets_its_usual_causes_and_the_actions_apart(text: str, category: str) -> None:
    from doctor.checks.hang.symptom_words import MEANWHILE
    from doctor.checks.hang.usual_causes import USUAL_CATEGORY
    f = said(text)
    assert f is not None and f.category == category
    assert USUAL_CATEGORY[category] in f.message and MEANWHILE[category] in f.fix
    # said once: the causes are not repeated in the fix
    assert not any(USUAL_CATEGORY[category][:60] in x for x in f.fix)


def test_the_usual_causes_of_a_slow_step_are_a_grpo_step_s_only_in_a_run_that_samples() -> None:
    from doctor.checks.hang.usual_causes import USUAL_CATEGORY
    f = said("SFT training with LLaMA-Factory is very slow, 20s per step")
    assert f is not None and f.category == "slow-training" and USUAL_CATEGORY["slow-training"] not in f.message


def test_a_start_that_hangs_beside_a_colocated_vllm_engine_is_explained_by_the_engine() -> None:
    from doctor.checks.hang.symptom_words import MEANWHILE_VLLM_START
    from doctor.checks.hang.usual_causes import USUAL_CATEGORY, USUAL_VLLM_START
    # the shape of fixtures/devlogs29/3441 (ms-swift colocate, TP 8) in words
    f = said("GRPO with vLLM colocate hangs at the start, tensor_parallel_size 8")
    assert f is not None and f.category == "hang-at-start"
    assert USUAL_VLLM_START in f.message and USUAL_CATEGORY["hang-at-start"] not in f.message
    assert MEANWHILE_VLLM_START in f.fix and "tensor parallelism at 1" in MEANWHILE_VLLM_START
    # a rollout server is another process: the engine is not in the training processes
    f = said("the trainer hangs at start waiting for the vllm server mode")
    assert f is not None and USUAL_VLLM_START not in f.message and MEANWHILE_VLLM_START not in f.fix


def test_the_format_pitfalls_name_a_thought_the_template_already_opened() -> None:
    # huggingface/open-r1#560 and huggingface/trl#6966: a DeepSeek-R1 distill's template ends the prompt with <think>
    f = said("When using DeepSeek-R1-Distill-Qwen-1.5B for GRPO, the format_reward is always 0.0")
    assert f is not None and "already put at the end of the prompt" in f.message
    assert any("check the end of one rendered prompt first" in x for x in f.fix)


def test_degenerate_output_said_in_words_gets_an_action_that_removes_a_drift() -> None:
    f = said("the output is garbled after GRPO training")
    assert f is not None and any("lower the learning rate or raise the KL weight (beta)" in x for x in f.fix)


def test_the_body_line_that_says_the_title_s_symptom_again_is_evidence_too() -> None:
    f = said("GRPO training reward always 0\nI train Qwen2.5-7B with GRPO on my data.\n"
             "The reward stays at 0 from the first step on.")
    assert f is not None and [e.line for e in f.evidence] == [1, 3]
    f = said("GRPO training reward always 0\nI train Qwen2.5-7B with GRPO on my data.")
    assert f is not None and [e.line for e in f.evidence] == [1]


@pytest.mark.parametrize("text", [
    "response becomes nonsense after 200 steps",          # the garbled words as a verb's object
    "the completions are empty after step 50",            # empty completions, plural
    "the response length drops to 10 tokens",             # a length that collapses
    "after training the model generates endless text and never stops",
])
def test_degenerate_output_in_more_of_the_words_people_use(text: str) -> None:
    f = said(text)
    assert f is not None and f.category == "output-degenerate", text


def test_a_run_that_never_stops_is_not_a_model_that_never_stops() -> None:
    f = said("training never stops after max_steps")
    assert f is None or f.category != "output-degenerate"


def test_a_wrapper_s_notice_read_by_the_paste_s_words_gets_their_levers_and_causes() -> None:
    # a RayTaskError that printed no cause, below a title that names the out-of-memory (the shape of EasyR1 threads)
    paste = ("EasyR1 GRPO training fails with CUDA out of memory during update_actor\n"
             "python3 -m verl.trainer.main config=examples/config.yaml worker.actor.micro_batch_size_per_device_for_update=4\n"
             "Traceback (most recent call last):\n"
             '  File "/workspace/EasyR1/verl/trainer/main.py", line 96, in main\n'
             "    ray.get(runner.run.remote(ppo_config))\n"
             "ray.exceptions.RayTaskError: ray::Runner.run() (pid=1234, ip=10.0.0.1, actor_id=abc)\n")
    f = next(x for x in run(paste) if x.rule_id == "GD312")
    assert f.category == "cuda-oom" and f.confidence == "possible"
    assert any("worker.actor.micro_batch_size_per_device_for_update=2 (was 4)" in x for x in f.fix)
    slow = next(x for x in run(paste.replace("fails with CUDA out of memory during update_actor", "is very slow, 300 s "
                                                                                               "per step"))
                if x.rule_id == "GD312")
    from doctor.checks.hang.usual_causes import USUAL_CATEGORY
    assert slow.category == "slow-training" and USUAL_CATEGORY["slow-training"] in slow.message



def test_a_report_on_words_says_what_was_read_not_what_the_paste_holds() -> None:
    # two graders counted "No line of the paste shows the failure" as false where the failure line was there in a
    # form not read (a SIGKILL exit, a step time); what was read is what the report can say
    # form not read (a SIGKILL exit, a step time), and later graders counted sentences on the tool's own reading (the
    # title's "none of its lines was read as showing it") as addressed to developers: message and title say what the
    # paste says
    f = said("GRPO training is very slow, 200s per step")
    assert f is not None and f.message.startswith("The words of the paste say training is slow")
    assert "was read" not in f.message and "the report's only ground" not in f.message
    assert f.title == "The paste tells the failure in words" and "read" not in f.title
    assert "grpo-doctor" not in f.message and not any("grpo-doctor" in x for x in f.fix)


def test_a_sigkill_said_in_words_is_read_as_the_host_s_killer_not_one_the_author_sent() -> None:
    f = said("the training process got SIGKILL during rollout")
    assert f is not None and f.category == "host-oom-killed" and "most often the host's out-of-memory killer" in f.message
    f = said("we send SIGKILL to stop it ourselves")
    assert f is None or f.category != "host-oom-killed"


def test_every_category_has_what_to_do_meanwhile_for_a_guess_from_words() -> None:
    # a failure placed by its words alone (doctor/classify/word_reading.py) gets a conditional fix of its category:
    # the share-more request alone acts on nothing
    from doctor.checks.hang.symptom_words import MEANWHILE
    from doctor.classify.word_reading import _if_it_is
    from doctor.registry import CATEGORY_WORDS
    assert set(CATEGORY_WORDS) - set(MEANWHILE) == {"other"}
    for category, text in MEANWHILE.items():
        meanwhile = _if_it_is(category)[1]
        said, lowered = text.split()[1], meanwhile.split()[0]
        # lowered to follow "If it is ...:" only where the word is an ordinary one ("Run" -> "run", not "deepSpeed")
        assert lowered in (said, said.lower()), (category, lowered)


def test_a_structural_placing_that_only_looks_further_gets_its_categorys_actions() -> None:
    from dataclasses import replace as _replace

    from doctor.checks.hang.symptom_words import MEANWHILE
    from doctor.classify.word_reading import act_meanwhile
    base = said("NCCL timeout during GRPO training after 2 hours")
    looks = _replace(base, rule_id="GD999", category="deepspeed-config-error",
                     fix=("Search the DeepSpeed issues for the message: \"x\".",))
    assert act_meanwhile([looks])[0].fix == (*looks.fix, MEANWHILE["deepspeed-config-error"])
    acts = _replace(looks, fix=("Set stage3_gather_16bit_weights_on_model_save to true.",))
    assert act_meanwhile([acts])[0] is acts                        # a fix that acts already: unchanged
    assert act_meanwhile([_replace(looks, category="other")])[0].fix == looks.fix
    assert act_meanwhile([_replace(looks, rule_id="GD201")])[0].fix == looks.fix   # a rule's own fixes stand


@pytest.mark.parametrize("text", [
    "training speed is low, is it right?",                                                   # wmcnally/kapao#75
    "I tray to train my dataset and 1 epoch takes 2 hours is that normal ? I use GPU so I expect it to be faster!! "
    "How can I speed up training time?",                                                     # keras-CenterNet#20
    "It was 10 hours per epoch in my one-GPU workstation(GTX1060). is that normal?",          # just_another_seq2seq#8
    "Any idea to speed up training?",                                                        # multitask-CycleGAN#2
    "Why did nnU-Net's training take so long? Is there any way to shorten the training time?",  # MIC-DKFZ/nnUNet#764
    "800条训练数据10个epoch，显示需要26～30个小时，请问这个训练速度正常吗？是否有提升训练速度的方案？",  # hiyouga/EasyR1#39
])
def test_a_speed_asked_about_is_slow_training(text: str) -> None:
    f = said(text)
    assert f is not None and f.category == "slow-training", text


def test_a_speed_up_asked_after_an_error_is_not_the_failure() -> None:
    f = run("RuntimeError: CUDA error: an illegal memory access was encountered\nHow to speed up the training after this?\n")[0]
    assert f.category != "slow-training"


@pytest.mark.parametrize("text", [
    "When I try to use the new code to train GRPO, rewards/format_reward is not 0, but rewards/accuracy_reward becomes 0.",
    "Why will the final accuracy_reward be 0? by the end of the training, the accuracy_reward became 0",  # open-r1#257
])
def test_a_reward_functions_own_metric_said_at_zero_is_the_reward(text: str) -> None:
    # (open-r1#255, #257): the reward function's name holds the word after an underscore
    f = said(text)
    assert f is not None and f.category == "reward-zero-or-flat", text
    assert said("reward_funcs are registered; the loss is 0 at every step") is None or \
        said("reward_funcs are registered; the loss is 0 at every step").category != "reward-zero-or-flat"


@pytest.mark.parametrize(("text", "category"), [
    ("训练到一半卡住了，没有报错", "hang-mid-training"),                        # "stuck halfway through training"
    ("training stops progressing after some iterations but the process is still alive", "hang-mid-training"),
    ("After a few hours training just stops, no output, nvidia-smi shows 100% util", "hang-mid-training"),
    ("Model responses are always empty strings when doing GRPO training.", "output-degenerate"),   # verl#1170
    ("It was giving empty response for all the query", "output-degenerate"),           # hands-on-llms#66
    ("responses become meaningless after 200 steps", "output-degenerate"),
    ("模型胡言乱语", "output-degenerate"),
    ("模型体积膨胀:微调后模型体积从15GB膨胀到43GB", "checkpoint-bloat"),                     # seeds/01
    ("the checkpoint size keeps growing with each save", "checkpoint-bloat"),
    ("parameters are not updated during training", "grad-norm-zero"),
    ("the weights don't change after training", "grad-norm-zero"),
    ("the gradient is zero for all parameters", "grad-norm-zero"),
    ("权重没有更新", "grad-norm-zero"),                                          # devlogs68/7129, devlogs70/7327
    ("训练到300步的时候卡住了", "hang-mid-training"),               # a step count reached, then the stop
    ("跑到第2个epoch卡住，没有报错", "hang-mid-training"),
    ("Training takes forever with vllm, is this normal?", "slow-training"),
    ("It takes 3 days to train 1000 steps, how to accelerate?", "slow-training"),
    ("多卡训练比单卡还慢", "slow-training"),                       # devlogs70/7337's words, said the common way
    ("The rewards don't improve at all after 500 steps", "reward-zero-or-flat"),
    ("why the iou reward always be zero or so so small?", "reward-zero-or-flat"),     # devlogs67/7013
    ("The responses are full of repetition like the the the", "output-degenerate"),
    ("The output becomes empty after training", "output-degenerate"),
    ("推理结果全是重复的内容", "output-degenerate"),
    ("微调后的模型答非所问", "output-degenerate"),                                  # clue-ai/ChatYuan#52
    ("GPU memory is fine but the speed is only 0.05 it/s", "slow-training"),
    ("the estimated time is 300 hours", "slow-training"),
    ("预计训练时间要200个小时，正常吗", "slow-training"),
    ("Training speed dropped significantly after enabling gradient checkpointing", "slow-training"),
    ("the throughput is very low", "slow-training"),
    ("The program stopped responding right after start", "hang-at-start"),
    ("Training got stuck at 45% for 3 hours", "hang-mid-training"),
    ("训练到中间突然卡住，显卡占用率100%", "hang-mid-training"),
    ("reward_std is always 0 so the advantages are zero", "reward-zero-or-flat"),
    ("frac_reward_zero_std is 1.0", "reward-zero-or-flat"),
    ("保存的模型比原始模型大了一倍", "checkpoint-bloat"),
    ("The output model size is 30GB instead of 15GB", "checkpoint-bloat"),
    ("The rollout phase is the bottleneck, generating 8 samples takes 5 min", "slow-training"),
    ("一个epoch需要跑三天", "slow-training"),
    ("Is there a way to make training faster? It is currently 30s/it", "slow-training"),
    ("训练启动后一直没有输出", "hang-at-start"),
    ("the reward curve is completely flat", "reward-zero-or-flat"),
    ("The model just repeats the prompt back", "output-degenerate"),
    ("生成的内容都是乱七八糟的", "output-degenerate"),
    ("inference results are weird symbols", "output-degenerate"),
    ("the model outputs the same answer for every question", "output-degenerate"),
    ("nvidia-smi shows 0% utilization on GPUs 1-7", "gpu-underutilized"),
    ("the disk fills up because every checkpoint saves the optimizer", "checkpoint-bloat"),
    ("training loss goes to infinity", "loss-nan-or-inf"),
    ("Why is training so slow? 8xA100, Qwen2.5-7B", "slow-training"),
    ("GRPO training speed", "slow-training"),                                    # titles that name the topic
    ("[Question] training time", "slow-training"),
    ("Long training time for Qwen2.5-VL-7B GRPO", "slow-training"),
    ("Low training efficiency with vLLM colocate mode", "slow-training"),
    ("训练效率低", "slow-training"),
    ("训练耗时过长", "slow-training"),
    ("How long does it take to train 1 epoch?", "slow-training"),
    ("Rollout takes too long with long responses", "slow-training"),
    ("It took 12 hours to finish 100 steps", "slow-training"),
    ("Training became slower and slower as steps increase", "slow-training"),
    ("越训越慢", "slow-training"),
    ("The trained model output is strange", "output-degenerate"),
    ("模型输出不正常", "output-degenerate"),
    ("The model generates the same token repeatedly", "output-degenerate"),
    ("After SFT the model always outputs the same thing regardless of input", "output-degenerate"),
    ("Model outputs only special tokens like <|endoftext|>", "output-degenerate"),
    ("the response contains lots of Chinese characters mixed with English randomly", "output-degenerate"),
    ("Output is in a loop", "output-degenerate"),
    ("the completions are cut off and the model never emits </answer>", "output-degenerate"),
    ("Why is my reward negative and not changing", "reward-zero-or-flat"),
    ("启动训练后一直停在这里", "hang-at-start"),
    ("The training froze at step 600, nvidia-smi shows 100% util on all GPUs", "hang-mid-training"),
    ("GRPO hangs during the second rollout", "hang-mid-training"),
    ("训练过程中突然停住了", "hang-mid-training"),
    ("memory leak on GPU during GRPO training", "cuda-oom"),
    ("vLLM KV cache is not enough for max_model_len", "vllm-oom-or-kv-cache"),
    ("梯度爆炸", "loss-nan-or-inf"),
    ("gradient explosion, grad_norm goes to 1e6", "loss-nan-or-inf"),
    ("磁盘满了", "disk-full"),
    ("the disk is full after a few checkpoints", "disk-full"),
    ("only the first GPU is used in multi-GPU training", "gpu-underutilized"),
    ("After full fine-tuning the saved model is only an adapter", "checkpoint-adapter-only-load-args"),
    ("full parameter training but the output contains adapter_model.safetensors", "checkpoint-adapter-only-load-args"),
    ("Which vllm version should I use with ms-swift 3.3?", "vllm-version-incompatible"),
    ("After upgrading vLLM to 0.9 the GRPO training fails", "vllm-version-incompatible"),
    ("vllm 0.8.0 is not compatible with trl 0.16", "vllm-version-incompatible"),
    ("my custom reward function raises an error", "reward-function-error"),
    ("reward function returns None", "reward-function-error"),
    ("cannot load the saved checkpoint, safetensors header too large", "checkpoint-corrupt"),
    ("checkpoint加载失败", "checkpoint-corrupt"),
    ("为什么vllm加速后速度反而更慢了", "slow-training"),
    ("训练一个step需要十几分钟", "slow-training"),
    ("rollout阶段特别耗时", "slow-training"),
    ("一直在等待vllm server", "hang-at-start"),
    ("保存checkpoint的时候卡住了", "hang-mid-training"),
    ("模型回答很短，只有几个字", "output-degenerate"),
    ("推理时一直输出感叹号", "output-degenerate"),
    ("进程被系统kill了，内存占用很高", "host-oom-killed"),
    ("全参训练完只有100多MB", "checkpoint-adapter-only-load-args"),
    ("vllm显存不足，kv cache不够", "vllm-oom-or-kv-cache"),
    ("Training runs fine for about 300 steps and then\nhangs without any error message.", "hang-mid-training"),
    ("Saving checkpoint hangs when using DeepSpeed\nI found that `accelerator.save_state()` will hang.",
     "hang-mid-training"),                                                          # devlogs51/5425
    ("I have the same issue, training freezes after the first evaluation.", "hang-mid-training"),
    ("Update: after fixing the prompt, reward is still zero.", "reward-zero-or-flat"),
    ("Each rollout step takes ~20 min on 4xA100, is there anything I can tune?", "slow-training"),
    ("the LoRA adapter is not being trained, all grads are None", "grad-norm-zero"),
    ("the job died with signal 9", "host-oom-killed"),
    ("grpo训练时间过长", "slow-training"),
    ("GRPO训练到一定步数后卡住", "hang-mid-training"),
    ("grpo显存占用过高", "cuda-oom"),
    ("vllm推理显存溢出", "vllm-oom-or-kv-cache"),
    ("checkpoint保存文件过大", "checkpoint-bloat"),
    ("at step 1200 the run stops logging and GPUs show 100% util forever", "hang-mid-training"),
    ("nothing happens after the \"Initializing vLLM engine\" line", "hang-at-start"),
    ("gradients never reach the vision tower; its weights stay the same", "grad-norm-zero"),
    ("each save writes 120 GB because of the DeepSpeed optimizer states", "checkpoint-bloat"),
    ("system RAM fills up and the OOM killer ends the job", "host-oom-killed"),
    ("The model's answers become shorter and shorter during GRPO training", "output-degenerate"),   # said_pairs.py
    ("ETA shows 150 hours for 3 epochs", "slow-training"),
])
def test_a_failure_said_in_other_words_gets_its_category(text: str, category: str) -> None:
    f = said(text)
    assert f is not None and f.category == category, text


@pytest.mark.parametrize(("text", "not_category"), [
    ("Training crashed and stopped. no output file was saved", "hang-mid-training"),
    ("The dataset has empty strings in the answer column", "output-degenerate"),
    ("Is this error message meaningless?", "output-degenerate"),
    ("How to accelerate launch with two nodes? It fails with an error", "slow-training"),   # the library, not speed
    ("用vllm跑grpo的时候显存不足", "vllm-oom-or-kv-cache"),            # the GRPO run's memory, vLLM only its engine
    ("训练到一半卡住了", "hang-at-start"),
    ("Training got stuck at 0% for 3 hours", "hang-mid-training"),               # a bar at 0: nothing ran
    ("Unsloth Zoo will now patch everything to make training faster!", "slow-training"),   # a banner's promise
    ("The error appears at training time, before the first step", "slow-training"),
    ("The job is stuck in a loop of retries connecting to the server", "output-degenerate"),
    ("The server is responding slowly to health checks but training runs", "hang-at-start"),
])
def test_the_same_words_about_something_else_are_not_that_failure(text: str, not_category: str) -> None:
    f = said(text)
    assert f is None or f.category != not_category


def test_rows_that_show_what_the_words_say_are_not_asked_for_again() -> None:
    from doctor.checks.hang.paste_next import asked_rows
    from doctor.checks.hang.symptom_words import PASTE_NEXT
    agree = ("The paste's rows show it too.", None)
    assert asked_rows(PASTE_NEXT["grad-norm-zero"], "grad-norm-zero", agree) == "the launch command"
    # the rows before the first NaN may not be among those held: still asked for
    assert asked_rows(PASTE_NEXT["loss-nan-or-inf"], "loss-nan-or-inf", agree) == PASTE_NEXT["loss-nan-or-inf"]
    assert asked_rows(PASTE_NEXT["loss-nan-or-inf"], "loss-nan-or-inf", ("not shown", "the rows where loss is NaN")) \
        == "the rows where loss is NaN"
