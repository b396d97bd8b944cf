"""doctor/swift: one version parser with one meaning of unknown, one flag table (values checked by hand against
swift-notes: §1.1 steps_per_generation/generation_batch_size 3.5, num_generations_eval 3.12; §7 offload 3.3)."""
from __future__ import annotations

import pytest

from doctor.swift.batch import divisors, multiples_around, nearest
from doctor.swift.flags import ADDED, flag_exists, since
from doctor.swift.version import at_least, major_minor


@pytest.mark.parametrize("text,want", [("4.6.0", (4, 6)), ("3.12.0.dev0", (3, 12)), ("v3.5", (3, 5)),
                                       (" 3.10.1 ", (3, 10)), ("4", None), ("", None), (None, None), ("x.y", None)])
def test_major_minor(text, want):
    assert major_minor(text) == want


def test_at_least_unknown_is_none():
    assert at_least((4, 6), (4, 4)) is True
    assert at_least((3, 12), (4, 0)) is False
    assert at_least(None, (4, 0)) is None
    assert at_least(None, (4, 4), major_hint=4) is None     # same major: cannot tell
    assert at_least(None, (4, 0), major_hint=3) is False
    assert at_least(None, (3, 5), major_hint=4) is True


def test_flag_table():
    assert since("steps_per_generation") == (3, 5)
    assert since("num_generations_eval") == (3, 12)
    assert since("offload_model") == (3, 3)
    assert since("per_device_train_batch_size") is None
    assert not flag_exists((3, 4), "steps_per_generation")
    assert flag_exists((3, 5), "steps_per_generation")
    assert flag_exists(None, "teacher_model")           # unknown version: a recent one
    assert all(isinstance(v[1], str) and v[1] for v in ADDED.values())


def test_batch_arithmetic():
    assert divisors(12) == [2, 3, 4, 6, 12]
    assert divisors(0) == []
    assert nearest([2, 3, 4, 6, 12], 8, k=2) == [6, 12]
    assert multiples_around(6, 4) == [4, 8]
    assert multiples_around(8, 4) == [8]


def test_a_release_a_sentence_advises_or_blames_is_not_read_as_the_installed_one():
    from conftest import feed_text

    from doctor.engine import Session
    from doctor.registry import load_catalog
    s = Session(load_catalog())
    # the words of fixtures/devlogs17 2104 (unsloth issue): the failing release is 0.8.0, 0.7.3 is advised
    feed_text(s, "I just wanted to give a warning, simply install `vllm==0.7.3` instead.\n"
                 "Pinning transformers==4.52.4 works fine for me.\n")
    assert s.run.versions == {}
    feed_text(s, "vllm==0.8.0\ntransformers==4.53.0\n")  # a pip freeze
    assert s.run.versions == {"vllm": "0.8.0", "transformers": "4.53.0"}


def test_the_release_a_sentence_says_was_moved_to_is_the_installed_one():
    from conftest import feed_text

    from doctor.engine import Session
    from doctor.registry import load_catalog
    s = Session(load_catalog())
    # the words of fixtures/devlogs18 2230: 0.7.2 ran the older model, the failure came after updating to 0.7.3
    feed_text(s, "vllm 0.7.2支持qwen2VL模型，也能跑通训练代码，但是不支持qwen2.5VL模型，尝试更新vllm至0.7.3后，出现以下问题。\n")
    assert s.run.versions == {"vllm": "0.7.3"}
    t = Session(load_catalog())
    feed_text(t, "You should upgrade vllm to 0.8.5.\n")   # advice, not a move that happened
    assert t.run.versions == {}
