"""What a paste says was tried without success (doctor/classify/tried_said.py), read per clause from sentences of
real threads, and a fix bullet naming such a lever told so."""
from __future__ import annotations

from doctor.classify.tried_said import mark_tried, tried
from doctor.model import Finding, Severity
from doctor.signals import LogLine, Where


def _lines(*texts: str) -> list[LogLine]:
    return [LogLine(t, t, Where("log.txt", i), None, i) for i, t in enumerate(texts, 1)]


def test_a_lever_tried_in_vain_is_read_per_clause() -> None:
    # the GD327 rule case's Chinese description (batch already 1, still out of memory)
    assert tried(_lines("用vllm跑grpo的时候显存不足，已经把batch调到1了还是不行")) == [
        ("the batch size", "已经把batch调到1了还是不行")]
    # devlogs50/5314 (ms-swift): ZeRO-3 tried in vain, float32 seemed to work: only ZeRO is ruled out
    got = dict(tried(_lines("请问 gme 训练时遇到 grad norm = nan, loss = 0.0。可以从哪些方面排查呢？试过 zero3 不行，"
                            "float32 好像可以但是显存耗费太多。")))
    assert list(got) == ["DeepSpeed ZeRO / offload"]


def test_a_lever_that_helped_is_not_read_as_tried_in_vain() -> None:
    # devlogs55/5906 (trl): gradient checkpointing solved the memory problem
    assert tried(_lines("Hi. I had the same issue. gradient_checkpointing=True does solve the memory issue but "
                        "afterwards I am unable to continue a previous run.")) == []


def test_the_bullet_naming_the_lever_is_told_so_and_the_others_are_not() -> None:
    f = Finding(rule_id="GD327", slug="s", category="cuda-oom", severity=Severity.warning, title="t", message="m",
                fix=("Lower the per-device batch size.", "Turn on gradient checkpointing."))
    got = mark_tried(f, _lines("I tried batch size 1, still OOM on the first step."))
    assert "already tried without success" in got.fix[0] and "batch size 1" in got.fix[0]
    assert got.fix[1] == "Turn on gradient checkpointing."
