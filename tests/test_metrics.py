"""Rewards, training metrics and outputs (GD601-GD699): the thresholds, the arithmetic in the fixes,
and the cases that must stay silent (healthy runs, the loss-0 control)."""
from __future__ import annotations

import math

import pytest
from conftest import feed_text

from doctor.checks import _runargs as A
from doctor.checks import _series as S
from doctor.checks.outputs import degenerate as O
from doctor.checks.rewards import _flags as R
from doctor.checks.rewards.collapse import kendall_tau
from doctor.engine import Session
from doctor.model import Severity
from doctor.registry import find_rule, load_catalog
from doctor.signals import Metrics, Where
from doctor.sources import metrics as msrc
from doctor.sources.swiftconfig import RunConfig

CAT = load_catalog()


def run_cfg(**args) -> RunConfig:
    rc = RunConfig()
    for k, v in args.items():
        rc.set_arg(k, v, "command")
        rc.cli[k] = v
    return rc


def session(rule_ids, run=None, console=True):
    metas = [find_rule(r, CAT) for r in rule_ids]
    return Session(metas, run=run or RunConfig(), console_metrics=console)


def feed_rows(s: Session, rows):
    for i, r in enumerate(rows, 1):
        s.emit(Metrics({k: msrc.to_number(v) for k, v in r.items()}, Where("logging.jsonl", i), i, "jsonl"))


def row(step, total, **kv):
    d = {"loss": 0.0, "grad_norm": 0.0, "learning_rate": 1e-5, "global_step/max_steps": f"{step}/{total}"}
    d.update(kv)
    return d


def by_id(findings):
    return {f.rule_id: f for f in findings}


# ------------------------------------------------------------------------------ series helpers
def test_reward_key_names_all_versions():
    assert S.reward_key_name("rewards/Format/mean") == "Format"
    assert S.reward_key_name("rewards/accuracy_reward") == "accuracy_reward"   # 3.1-3.2 / trl
    assert S.reward_key_name("rewards/Format/std") is None
    assert S.reward_std_key_name("rewards/Format/std") == "Format"
    assert S.reward_key_name("reward") is None


def test_longest_streak_and_kendall():
    assert S.longest_streak([True, True, False, True, True, True]) == (3, 5)
    assert S.longest_streak([]) == (0, -1)
    assert kendall_tau([1, 2, 3, 4]) == 1.0
    assert kendall_tau([4, 3, 2, 1]) == -1.0


def test_more_generations_keeps_batch_divisible():
    rc = run_cfg(per_device_train_batch_size=4, num_generations=4)
    # 1 x 4 x 1 = 4 is not a multiple of 8: GA 2 gives 8
    assert "--gradient_accumulation_steps 2" in A.more_generations(rc, 4)
    rc = run_cfg(per_device_train_batch_size=8, num_generations=4)
    assert A.more_generations(rc, 4).startswith("--num_generations 8 (generation batch 1 (assumed) x 8 x 1 (assumed) = 8 (assumed)")
    rc = run_cfg(per_device_train_batch_size=4)
    rc.versions["ms-swift"] = "3.2.2"   # 3.1-3.3 count only world x batch
    assert "--per_device_train_batch_size 8" in A.more_generations(rc, 4)


# ------------------------------------------------------------------------------ GD610 / GD611 / GD612
ZERO = dict(reward=0.0, reward_std=0.0, frac_reward_zero_std=1.0, **{"rewards/MathAccuracy/mean": 0.0,
            "rewards/Format/mean": 0.0, "completions/clipped_ratio": 1.0, "completions/mean_length": 16.0})


def test_all_zero_reward_is_error_with_run_numbers():
    rc = run_cfg(num_generations=4, per_device_train_batch_size=4, max_completion_length=16, temperature=0.9,
                 reward_funcs=["accuracy", "format"])
    s = session(["GD610", "GD611", "GD612"], rc)
    feed_rows(s, [row(i, 4, **ZERO) for i in range(1, 5)])
    f = by_id(s.finish())
    assert set(f) == {"GD610"}
    g = f["GD610"]
    assert g.severity == Severity.error
    assert "in all 4 logged steps (steps 1-4 of 4)" in g.message
    fixes = " ".join(g.fix)
    assert "from 16 to 512" in fixes and "clipped_ratio averaged 1" in fixes
    assert "Format" in fixes and "'solution'" in fixes
    assert "--dynamic_sample true" in fixes


def test_two_flat_steps_only_warn_and_one_flat_line_is_info():
    s = session(["GD610"])
    feed_rows(s, [row(i, 2, **ZERO) for i in (1, 2)])
    assert [x.severity for x in s.finish()] == [Severity.warning]
    # one flat row with a gradient, of a longer run: named, at info: one row cannot tell whether it lasts
    s = session(["GD610"])
    feed_rows(s, [row(1, 9, reward=1.0, reward_std=0.0, frac_reward_zero_std=1.0, grad_norm=0.2)])
    assert [x.severity for x in s.finish()] == [Severity.info]
    # one flat row whose grad_norm is 0 too: named (an excerpt judged by what it shows), at info
    s = session(["GD610"])
    feed_rows(s, [row(1, 9, reward=1.0, reward_std=0.0, frac_reward_zero_std=1.0)])
    assert [x.severity for x in s.finish()] == [Severity.info]


def test_healthy_pattern_with_isolated_flat_steps_is_silent():
    stds = [0.0, 0.0, 0.96, 0.0, 0.0, 0.82]   # grpo_lora_healthy
    s = session(["GD610", "GD612", "GD630"])
    feed_rows(s, [row(i, 6, reward=1.0, reward_std=v, frac_reward_zero_std=1.0 if v == 0 else 0.0,
                      grad_norm=0.0 if v == 0 else 0.4) for i, v in enumerate(stds, 1)])
    assert s.finish() == []


def test_flat_streak_at_end_is_error_in_middle_warning():
    def rows(flags):
        return [row(i, len(flags), reward=1.0, reward_std=0.0 if f else 0.5) for i, f in enumerate(flags, 1)]
    s = session(["GD610"])
    feed_rows(s, rows([False] * 4 + [True] * 6))
    (f,) = s.finish()
    assert f.severity == Severity.error and "6 consecutive logged steps (steps 5-10 of 10" in f.message
    s = session(["GD610"])
    feed_rows(s, rows([False] * 2 + [True] * 5 + [False] * 5))
    (f,) = s.finish()
    assert f.severity == Severity.warning


def test_no_reward_funcs_46_is_its_own_finding():
    s = session(["GD610", "GD611"], run_cfg(num_generations=4))
    feed_rows(s, [row(i, 4, reward=0.0, reward_std=0.0, frac_reward_zero_std=1.0) for i in range(1, 5)])
    f = by_id(s.finish())
    assert set(f) == {"GD611"} and f["GD611"].severity == Severity.error
    # with --reward_funcs set, missing rewards/* keys are not blamed on a missing flag
    s = session(["GD610", "GD611"], run_cfg(reward_funcs="accuracy"))
    feed_rows(s, [row(i, 4, reward=0.0, reward_std=0.0, frac_reward_zero_std=1.0) for i in range(1, 5)])
    assert set(by_id(s.finish())) == {"GD610"}


def test_always_zero_needs_five_steps_and_a_moving_other_reward():
    def rows(n):
        return [row(i, n, reward=0.5, reward_std=0.3, **{"rewards/MathAccuracy/mean": 0.0,
                                                        "rewards/Format/mean": 0.1 * i}) for i in range(1, n + 1)]
    s = session(["GD612"], run_cfg(dataset="data/x.jsonl"))
    feed_rows(s, rows(4))
    assert s.finish() == []
    s = session(["GD612"], run_cfg(dataset="data/x.jsonl"))
    feed_rows(s, rows(6))
    (f,) = s.finish()
    assert "rewards/MathAccuracy was 0 in every one of the 6" in f.message and "data/x.jsonl" in f.fix[0]


def test_v3_console_keys_all_zero():
    text = "\n".join("{'loss': 0.0, 'grad_norm': 0.0, 'completion_length': 256.0, 'response_clip_ratio': 1.0, "
                     f"'rewards/Format': 0.0, 'reward': 0.0, 'reward_std': 0.0, 'kl': 0.0, "
                     f"'global_step/max_steps': '{i * 5}/100'}}" for i in range(1, 5))
    s = session(["GD610", "GD641"], run_cfg(max_completion_length=256))
    feed_text(s, text)
    f = by_id(s.finish())
    assert f["GD610"].severity == Severity.error and "rewards/Format 0" in f["GD610"].message
    assert "response_clip_ratio" in f["GD641"].evidence[0].text


# ------------------------------------------------------------------------------ GD613: cases in rules/rewards/cases.toml

# ------------------------------------------------------------------------------ GD620 / GD621 / GD622
# (NaN rows, fp16 inf and a reward of None: cases in rules/numerics/cases.toml)
def test_probability_tensor_assert_glued_to_tqdm():
    text = ("Train:   7%|▋         | 82/1218 [18:06:05<227:39:40, 721.46s/it]/pytorch/aten/src/ATen/native/cuda/"
            "TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion "
            "`probability tensor contains either `inf`, `nan` or element < 0` failed.\n")
    s = session(["GD621"])
    feed_text(s, text)
    (f,) = s.finish()
    assert "after 82 of 1218 steps, 18:06:05 into the run" in f.message
    assert f.evidence[0].text.startswith("/pytorch/aten")
    s = session(["GD621"])
    feed_text(s, "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n")
    assert len(s.finish()) == 1


def test_fp16_unscale_pattern_skips_the_source_line():
    text = ('  File "/x/torch/amp/grad_scaler.py", line 260, in _unscale_grads_\n'
            '    raise ValueError("Attempting to unscale FP16 gradients.")\n'
            "ValueError: Attempting to unscale FP16 gradients.\n")
    s = session(["GD622"], run_cfg(torch_dtype="float16"))
    feed_text(s, text)
    (f,) = s.finish()
    assert f.count == 1 and "--torch_dtype float16" in f.message


# ------------------------------------------------------------------------------ GD630 / GD631
def test_grad_norm_zero_with_reward_spread_dev005():
    rc = run_cfg(use_vllm=True, vllm_mode="colocate", offload_optimizer=True, train_type="lora", lora_rank=8)
    s = session(["GD630", "GD610"], rc)
    feed_rows(s, [row(5, 3766, loss=-0.0, grad_norm=0.0, reward=0.34, reward_std=0.4398, frac_reward_zero_std=0.0,
                      kl=0.0)])
    (f,) = s.finish()
    assert f.rule_id == "GD630" and "in the only logged step (step 5/3766)" in f.message
    assert "vllm==0.7.3" in f.fix[0] and "--offload_optimizer" in f.fix[0]


def test_grad_norm_zero_with_flat_rewards_is_expected():
    s = session(["GD630"])
    feed_rows(s, [row(i, 4, grad_norm=0.0, reward_std=0.0, frac_reward_zero_std=1.0) for i in range(1, 5)])
    assert s.finish() == []
    s = session(["GD630"])   # two scattered zero steps among healthy ones
    gns = [0.0, 0.3, 0.0, 0.2, 0.4, 0.5]
    feed_rows(s, [row(i, 6, grad_norm=g, reward_std=0.4) for i, g in enumerate(gns, 1)])
    assert s.finish() == []


def test_loss_zero_with_gradients_is_info_only_dev018():
    s = session(["GD631", "GD630", "GD610"], run_cfg(beta=0.04))
    feed_rows(s, [{"loss": 0.0, "grad_norm": 0.95, "reward": 0.9, "reward_std": 0.83, "kl": 8.6e-05},
                  {"loss": 0.0, "grad_norm": 0.49, "reward": 0.7, "reward_std": 0.74, "kl": 1.0e-04}])
    (f,) = s.finish()
    assert f.rule_id == "GD631" and f.severity == Severity.info and "beta 0.04" in f.message


# ------------------------------------------------------------------------------ GD640-GD644
# (GD640's completions tables and more: cases in rules/outputs/cases.toml)
def test_looping_detector():
    assert O.looping("<think>\nLet me compute. " + "Wait, let me check again. " * 30)[0]
    assert not O.looping("<think>\n2+7=9, then 9*3=27 and 27-4=23.\n</think>\n<answer>23</answer>")[0]
    assert not O.looping("short")[0]


def test_truncated_and_length_collapse():
    s = session(["GD641"], run_cfg(max_completion_length=1024))
    feed_rows(s, [row(i, 3, **{"completions/clipped_ratio": 0.95, "completions/mean_length": 1020.0})
                  for i in range(1, 4)])
    (f,) = s.finish()
    assert "from 1024 to 2048" in f.fix[0]
    s = session(["GD641"])
    lens = [300, 280, 250, 200, 120, 60, 40, 30]
    feed_rows(s, [row(i, 8, **{"completions/clipped_ratio": 0.0, "completions/mean_length": float(v)})
                  for i, v in enumerate(lens, 1)])
    (f,) = s.finish()
    assert "collapsed from 290" in f.message


def test_low_group_diversity_kl_jump_dev023():
    s = session(["GD642"], run_cfg())
    feed_rows(s, [
        {"loss": 4.76e-06, "grad_norm": 16.8, "learning_rate": 1e-05, "reward": 0.6086, "reward_std": 0.0338,
         "rewards/V/mean": 0.6086, "rewards/V/std": 0.3234, "kl": 0.0, "global_step/max_steps": "1/3820"},
        {"loss": 0.0054, "grad_norm": 12.9, "learning_rate": 1e-05, "reward": 0.5421, "reward_std": 0.0468,
         "rewards/V/mean": 0.5421, "rewards/V/std": 0.2824, "kl": 0.5355},
    ])
    (f,) = s.finish()
    assert f.severity == Severity.error and "kl jumped from 0" in f.message
    assert "from 1e-05 to 1e-06" in f.fix[0]


def test_sampling_config_warnings_only_after_training_started():
    rc = run_cfg(num_generations=2, temperature=0.1, per_device_train_batch_size=4)
    s = session(["GD643", "GD644"], rc)
    assert s.finish() == []        # nothing trained: no advice next to a startup error
    s = session(["GD643", "GD644"], rc)
    feed_rows(s, [row(1, 9, reward=0.5, reward_std=0.2)])
    f = by_id(s.finish())
    assert set(f) == {"GD643", "GD644"} and all(x.severity == Severity.warning for x in f.values())
    assert f["GD643"].fix[0].startswith("--num_generations 4 (generation batch 1 (assumed) x 4 x 1 (assumed) = 4 (assumed)")


# ------------------------------------------------------------------------------ reward-function errors
# (a reward call that raises, an OOM or a rollout error that is not one: cases in rules/rewards/cases.toml)
def test_not_registered_versions_and_plugin_file():
    rc = run_cfg(external_plugins="/data/plugin.py", reward_funcs=["my_format"])
    s = session(["GD601"], rc)
    feed_text(s, "[rank0]: ValueError: reward_function my_format is not implemented in swift.plugin\n"
                 "    raise ValueError(f'reward_function {reward_func} is not implemented in swift.rewards')\n")
    (f,) = s.finish()
    assert f.count == 1 and "'my_format'" in f.message and "3.7-3.12" in f.message
    assert any("/data/plugin.py" in x and "from swift.plugin import ORM, orms" in x for x in f.fix)


def test_weights_fix_counts():
    s = session(["GD602"], run_cfg(reward_funcs=["accuracy", "format"], reward_weights=[1.0]))
    feed_text(s, "ValueError: Number of reward weights (1) must match number of reward functions (2)\n")
    (f,) = s.finish()
    assert any("--reward_weights 1.0 1.0" in x for x in f.fix)


def _tb(frames, exc):
    out = ["Traceback (most recent call last):"]
    for path, fn, code in frames:
        out.append(f'  File "{path}", line 10, in {fn}')
        out.append(f"    {code}")
    out.append(exc)
    return "\n".join(out) + "\n"


CALL = [("/x/site-packages/swift/rlhf_trainers/grpo_trainer.py", "_compute_rewards_per_func",
         "local_rewards_per_func = score_completions("),
        ("/x/site-packages/swift/rl_core/grpo_algorithm.py", "compute_rewards_per_func",
         "output = reward_func(completions, **reward_kwargs)")]


def test_reward_exception_names_column_and_file():
    s = session(["GD606"], run_cfg(external_plugins="/root/my_reward.py", dataset="d.jsonl"))
    feed_text(s, _tb(CALL + [("/root/my_reward.py", "__call__", "sols = kwargs['solution']")], "KeyError: 'solution'"))
    (f,) = s.finish()
    assert "/root/my_reward.py:10" in f.message and "column 'solution'" in f.message
    assert "every row of d.jsonl" in f.fix[0]


def test_as_list_variants():
    assert R.as_list("accuracy format") == ["accuracy", "format"]
    assert R.as_list(["a", "b"]) == ["a", "b"]
    assert R.as_list("['a', 'b']") == ["a", "b"]
    assert R.as_list(None) == []


def test_long_run_is_thinned_but_nan_step_is_exact():
    n = S.MAX_ROWS * 2 + 10
    s = session(["GD620", "GD610"])
    rows = [row(i, n, loss=0.01, grad_norm=0.5, reward=0.5, reward_std=0.3) for i in range(1, n + 1)]
    rows[n - 7] = row(n - 6, n, loss=math.nan, grad_norm=math.nan, reward=0.5, reward_std=0.3)
    feed_rows(s, rows)
    (f,) = s.finish()
    # the six rows after it are finite again: the NaN step is named exactly, and not as "from then on"
    assert f.rule_id == "GD620" and f"first at step {n - 6}/{n} (" in f.message and "1 of" in f.message
    assert "finite again" in f.message and f"from step {n - 6}/{n} on" not in f.message
    rule = next(r for r in s.rules if r.meta.id == "GD610")
    assert rule.s.n <= S.MAX_ROWS and rule.s.stride >= 2


def test_reward_paths_do_not_match_unrelated_files():
    s = session(["GD606"])
    feed_text(s, _tb([("/usr/lib/python3.11/platform.py", "system", "return uname().system")],
                     "RuntimeError: boom"))
    assert s.finish() == []


def test_reward_output_of_wrong_length_at_call_frame():
    frames = CALL[:1] + [("/x/site-packages/swift/rl_core/grpo_algorithm.py", "compute_rewards_per_func",
                          "rewards_per_func[:, i] = torch.tensor(output, dtype=torch.float32, device=device)")]
    s = session(["GD606"])
    feed_text(s, _tb(frames, "RuntimeError: The expanded size of the tensor (16) must match the existing size (8) at "
                             "non-singleton dimension 0.  Target sizes: [16].  Tensor sizes: [8]"))
    (f,) = s.finish()
    assert "length differs from the number of completions" in f.message
    s = session(["GD606"])
    feed_text(s, _tb(frames[:1], "RuntimeError: NCCL communicator was aborted on rank 3."))
    assert s.finish() == []


def test_loss_scale_and_anomaly_fixes():
    s = session(["GD623", "GD624"], run_cfg(deepspeed="zero2", learning_rate=1e-5))
    feed_text(s, "[rank0]: Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
                 "Exiting run.\nRuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.\n")
    f = by_id(s.finish())
    assert "zero2" in f["GD623"].message and sum("bf16" in x or "bfloat16" in x for x in f["GD623"].fix) == 1
    assert "LogSoftmaxBackward0" in f["GD624"].message


def test_step_time_growing_with_length():
    s = session(["GD650"], run_cfg(max_completion_length=4096))
    feed_rows(s, [row(i, 12, step_time=30.0 if i == 1 else 10.0 + 2.0 * i,
                      **{"completions/mean_length": 300.0 + 150.0 * i}) for i in range(1, 13)])
    (f,) = s.finish()
    assert "mean_length grew" in f.message and "(now 4096)" in f.fix[0]
    s = session(["GD650"])
    feed_rows(s, [row(i, 12, step_time=10.0 + (i % 2)) for i in range(1, 13)])
    assert s.finish() == []


# ------------------------------------------------------------------------------ one series per session
SERIES_RULES = ["GD610", "GD611", "GD612", "GD613", "GD630", "GD631", "GD641", "GD642", "GD650"]


def _mixed_rows(n):
    """Train rows with a reward function that appears late, an int value, a text value, eval rows between."""
    out = []
    for i in range(1, n + 1):
        r = row(i, n, reward=0.5 + (i % 3) / 10, reward_std=0.0 if i % 4 == 0 else 0.3, kl=i,
                frac_reward_zero_std=0.25, step_time=2.0 + i / 10, **{"completions/mean_length": 100 + i,
                                                                          "rewards/Format/mean": 1.0,
                                                                          "rewards/Format/std": 0.0})
        if i > n // 2:
            r["rewards/MathAccuracy/mean"] = 0.25
        if i % 5 == 0:
            r["grad_norm"] = "big"           # text where a number is expected: read as missing
        out.append(r)
        if i % 7 == 0:
            out.append({"eval_loss": 0.5, "eval_reward": 0.3, "epoch": 1.0})
    return out


def _as_metrics(rows):
    return [Metrics({k: msrc.to_number(v) for k, v in r.items()}, Where("logging.jsonl", i), i, "jsonl")
            for i, r in enumerate(rows, 1)]


@pytest.mark.parametrize("n", [30, 260])
def test_series_rules_share_one_store_and_each_sees_what_its_own_series_held(monkeypatch, n):
    monkeypatch.setattr(S, "MAX_ROWS", 50)   # 260 rows: compacted at rows 51, 101 and 201
    ms = _as_metrics(_mixed_rows(n))
    s = session(SERIES_RULES)
    for m in ms:
        s.emit(m)
    rules = [r for r in s.rules if isinstance(r, S.SeriesRule)]
    assert len(rules) == len(SERIES_RULES)
    assert len({id(r.s.store) for r in rules}) == 1                 # one store for the session
    assert sum(1 for r in rules if r.kinds) == 1                    # and one rule adds the rows to it
    for r in rules:
        own = S.Series(r.series_keys, r.want_rewards)                # what the rule kept before sharing
        for m in ms:
            own.add(m)
        v = r.s
        assert (v.n, v.stride, v.steps, v.where, v.max_steps) == (own.n, own.stride, own.steps, own.where,
                                                                  own.max_steps), r.meta.id
        assert v.cols == own.cols and v.rmean == own.rmean and v.rstd == own.rstd, r.meta.id
        for key in ("step_time", "kl", "rewards/Format/mean", "nothing"):
            assert v.col(key) == own.col(key), (r.meta.id, key)   # keys outside its own read as before
        assert v.evidence(v.n - 1, ("loss", "kl", "step_time", "rewards/Format/mean")) == \
            own.evidence(own.n - 1, ("loss", "kl", "step_time", "rewards/Format/mean"))
    if n == 260:
        assert rules[0].s.stride == 8 and rules[0].s.n <= 50
    gd630 = next(r for r in rules if r.meta.id == "GD630")
    assert gd630.s.col("step_time") == [None] * gd630.s.n and gd630.s.rmean == {}
    gd650 = next(r for r in rules if r.meta.id == "GD650")
    assert gd650.s.col("step_time")[0] == 2.1 and gd650.s.col("grad_norm") == [None] * gd650.s.n


def test_series_findings_are_those_of_rules_with_their_own_series():
    rows = [row(i, 12, reward=0.0, reward_std=0.0, frac_reward_zero_std=1.0, step_time=10.0 + 3 * i,
                **{"completions/clipped_ratio": 0.95, "rewards/Format/mean": 0.0}) for i in range(1, 13)]
    ms = _as_metrics(rows)
    shared = session(SERIES_RULES)
    for m in ms:
        shared.emit(m)
    alone = []
    for rid in SERIES_RULES:                # a session per rule: nothing shared between rules
        one = session([rid])
        for m in ms:
            one.emit(m)
        alone.extend(one.finish())
    got = shared.finish()
    assert {f.rule_id for f in got} >= {"GD610", "GD641", "GD650"}
    assert sorted(map(repr, got)) == sorted(map(repr, alone))


def test_the_same_metrics_object_fed_twice_is_two_rows():
    (m,) = _as_metrics([row(1, 2, reward=0.5, reward_std=0.1)])
    s = session(["GD610", "GD630"])
    s.emit(m)
    s.emit(m)
    assert [r.s.n for r in s.rules] == [2, 2]


def test_a_series_rule_built_alone_keeps_its_own_series():
    from doctor.rules import build_rule
    r = build_rule(find_rule("GD630", CAT))
    assert r.kinds == {Metrics}
    for m in _as_metrics([row(i, 3, grad_norm=0.0, reward_std=0.4) for i in (1, 2, 3)]):
        r.feed(m)
    assert r.s.n == 3 and r.s.col("grad_norm") == [0.0, 0.0, 0.0]


def test_nan_console_row_after_a_learned_layout_still_trips_gd620():
    def line(step, loss, gn):
        return (f"{{'loss': '{loss}', 'grad_norm': '{gn}', 'learning_rate': '1e-05', 'reward': '0.5', "
                f"'reward_std': '0.2', 'kl': '0.01', 'global_step/max_steps': '{step}/9'}}\n")
    text = "".join(line(i, "0.01", "0.5") for i in range(1, 6)) + line(6, "0.01", "1e999") + line(7, "nan", "nan")
    s = session(["GD620", "GD610"])
    feed_text(s, text)
    (f,) = s.finish()
    # 1e999 overflows to inf: step 6 is the first non-finite one (grad_norm only), step 7 the second
    assert f.rule_id == "GD620" and "from step 6/9 on" in f.message and "2 of 7 logged steps" in f.message


def test_other_loggers_names_of_the_trainer_keys_make_a_metrics_row():
    from doctor.sources.metrics import parse_console
    row = parse_console("train stats after 160768 examples: {'loss/train': 'nan', 'grad_norm': 'nan', "
                        "'counters/examples': 160768}")
    assert row is not None and row["loss"] != row["loss"] and "loss/train" not in row
    wandb = parse_console("{'train/loss': 0.5, 'train/grad_norm': 1.25, 'train/epoch': 0.1}")
    assert wandb == {"loss": 0.5, "grad_norm": 1.25, "epoch": 0.1}
    assert parse_console("{'loss/train': 0.5, 'note': 'x'}") is None  # one trainer key is not a row
