"""A symptom said by a subject and a predicate in one sentence (doctor/checks/hang/said_pairs.py), read where no phrase
pattern names one: what it places, and the sentences whose words only look alike."""
from __future__ import annotations

import pytest

from doctor.checks.hang.said_pairs import pair_symptom


@pytest.mark.parametrize(("text", "category"), [
    ("The model's answers become shorter and shorter during GRPO training", "output-degenerate"),
    ("After training, the model answers in a weird mix of languages", "output-degenerate"),
    ("Completions are mostly whitespace and newlines", "output-degenerate"),
    ("model only produces the eos token immediately", "output-degenerate"),
    ("Responses keep getting longer until they hit the max length and are cut off", "output-degenerate"),
    ("All completions in a group get identical rewards", "reward-zero-or-flat"),
    ("GPU usage goes to 0 during reward computation", "gpu-underutilized"),
    ("utilization of the training GPUs is only around 30%", "gpu-underutilized"),
    ("ETA shows 150 hours for 3 epochs", "slow-training"),
    ("Is it expected that one epoch takes 2 days on 4 GPUs?", "slow-training"),
    ("Rollout generation dominates step time: about 95% of each step", "slow-training"),
    ("the process just sits there after step 42, no crash", "hang"),
])
def test_a_subject_and_what_is_wrong_with_it_in_one_sentence(text: str, category: str) -> None:
    got = pair_symptom(text)
    assert got is not None and got[0] == category, text


@pytest.mark.parametrize("text", [
    # (each from a development log the first version of the pairs misread)
    "I believe they arise when using math_verify in a GRPO reinforcement learning loop to grade symbolic math responses.",
    "前几天用3.13.0dev还可以正常训练，今天尝试了拉取4.0.0dev和3.12.2，都出现了这个问题。",       # "a few days ago"
    "Using a slow image processor as `use_fast` is unset and a slow processor was saved with this model.",
    "The tokenizer has new PAD/BOS/EOS tokens that differ from the model config and generation config.",
    "verified within-group reward spread on most steps, max(abs(lora_b)) == 0.0",
    "The reward is 0.5 and the answers look fine.",
    "training finished 3 days ago and the checkpoint loads fine",
])
def test_words_that_only_look_alike_name_nothing(text: str) -> None:
    assert pair_symptom(text) is None, text


def test_the_pair_must_be_in_one_sentence() -> None:
    assert pair_symptom("The answers are long. It is weird that the loss is fine.") is None
    assert pair_symptom("The answers are weird.") == ("output-degenerate", "the completions degenerate")


def test_only_a_pasted_excerpt_is_read_by_pairs(tmp_path) -> None:
    from doctor.analyze import analyze
    said = "The model's answers become shorter and shorter during GRPO training\n"
    excerpt = tmp_path / "excerpt.log"
    excerpt.write_text(said, encoding="utf-8")
    assert [f.category for f in analyze([str(excerpt)]).findings][:1] == ["output-degenerate"]
    # the same sentence inside a whole log (the program's own launch line first): a line it printed, such as a
    # completion, is no person's description
    whole = tmp_path / "whole.log"
    whole.write_text("run sh: `/usr/bin/python /usr/lib/python3/site-packages/swift/cli/rlhf.py --rlhf_type grpo "
                     "--model Qwen/Qwen2.5-7B`\n" + said, encoding="utf-8")
    assert "output-degenerate" not in [f.category for f in analyze([str(whole)]).findings]
