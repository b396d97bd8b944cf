"""Issue 20 point 5: RL-health rules over the metric series (GD615, GD625-GD628).

No real run of the corpus shows these signals (checked over every real-swift run and dev-log: none fires), so
their positive fixtures are invented (fixtures/logs/edge-kl-spike, edge-entropy-collapse, edge-clip-ratio-saturated,
edge-rollout-train-mismatch, edge-reward-hacking-length; goldens reviewed by hand). tests/test_watch_replay.py
replays those logs through a real `grpo-doctor watch` child and gets the same findings: they work live.
Here: each threshold has a near miss on the other side."""
from __future__ import annotations

import json

from conftest import ROOT

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.signals import Metrics, Where

NEW = {"GD615", "GD625", "GD626", "GD627", "GD628"}


def _rows(rows: list[dict]) -> set[str]:
    metas = [m for m in load_catalog() if m.id in NEW]
    s = Session(metas)
    n = len(rows)
    for i, r in enumerate(rows, 1):
        values = {"loss": 0.01, "grad_norm": 0.3, "reward_std": 0.3, **r, "global_step/max_steps": f"{i}/{n}"}
        s.emit(Metrics(values, Where("log.txt", i), i, "console"))
    return {f.rule_id for f in s.finish()}


def test_kl_spike_against_the_runs_own_level():
    slow = [0.001 * s for s in range(1, 17)]
    assert _rows([{"kl": v} for v in slow]) == set()
    spiked = slow[:11] + [0.4] + slow[12:]
    assert _rows([{"kl": v} for v in spiked]) == {"GD625"}
    # the same jump before 8 steps of history is not judged; a run already at kl 0.3 +- 0.1 does not spike at 0.45
    assert _rows([{"kl": v} for v in [0.001, 0.002, 0.4, 0.004]]) == set()
    noisy = [0.3 + 0.1 * ((s % 3) - 1) for s in range(15)] + [0.45]
    assert _rows([{"kl": v} for v in noisy]) == set()


def test_entropy_collapse_needs_both_the_fall_and_the_floor():
    falling = [0.8 * 0.7 ** s + 0.005 for s in range(12)]
    assert _rows([{"entropy/mean": v} for v in falling]) == {"GD626"}
    # a base model starting at 0.3 that settles at 0.12: a 60 % fall, above the 0.1 floor
    settles = [0.3 - 0.018 * s for s in range(11)]
    assert _rows([{"entropy/mean": v} for v in settles]) == set()
    assert _rows([{"entropy/mean": v} for v in falling[:7]]) == set()  # fewer than 8 steps


def test_clip_ratio_saturated_in_most_steps_only():
    assert _rows([{"clip_ratio/region_mean": 0.3} for _ in range(8)]) == {"GD627"}
    assert _rows([{"clip_ratio/region_mean": 0.3 if s < 3 else 0.05} for s in range(8)]) == set()
    assert _rows([{"clip_ratio/region_mean": 0.0} for _ in range(8)]) == set()  # what the real runs log


def test_rollout_mismatch_median():
    assert _rows([{"rollout_correction/k3_kl": 0.03} for _ in range(6)]) == {"GD628"}
    # one bad step among healthy ones (bf16 noise ~1e-3) is not a mismatch
    assert _rows([{"rollout_correction/k3_kl": 0.5 if s == 2 else 0.002} for s in range(6)]) == set()


def test_reward_hacking_length_and_format():
    length = [{"reward": 0.3 + 0.04 * s, "completions/mean_length": 300.0 + 60 * s,
               "completions/clipped_ratio": min(0.95, 0.08 * s)} for s in range(1, 13)]
    assert _rows(length) == {"GD615"}
    # the same rise in length with few truncated completions: longer reasoning that pays off, not hacking
    assert _rows([{**r, "completions/clipped_ratio": 0.05} for r in length]) == set()
    fmt = [{"reward": 0.2 + 0.05 * s, "rewards/Format/mean": 0.1 + 0.05 * s,
            "rewards/MathAccuracy/mean": 0.1 - 0.004 * s} for s in range(1, 13)]
    assert _rows(fmt) == {"GD615"}
    # accuracy rising too: the policy learns the task and the format together
    assert _rows([{**r, "rewards/MathAccuracy/mean": 0.1 + 0.03 * i} for i, r in enumerate(fmt)]) == set()
    # accuracy 0 in every step: a broken reward function (GD612), not gaming
    assert _rows([{**r, "rewards/MathAccuracy/mean": 0.0} for r in fmt]) == set()


def test_no_real_fixture_shows_them():
    # every real run (fixtures/logs/real-*, dev-*) and every healthy one: none of the new rules fires
    for golden in (ROOT / "fixtures" / "logs").glob("*.expected.json"):
        if golden.name.startswith(("real-", "dev-")):
            ids = {f["rule_id"] for f in json.loads(golden.read_text(encoding="utf-8"))["findings"]}
            assert not ids & NEW, golden.name
