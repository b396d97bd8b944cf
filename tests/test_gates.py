"""The gates (check-ckpt, preflight) refuse what they exist to refuse, and say what they checked when they pass."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from ckpt_util import full_checkpoint, torch_like_zip
from conftest import ROOT


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=ROOT, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120)


def _trainer_state_only(d):
    """What a save cut after the optimizer state leaves: no weight file at all."""
    d.mkdir(parents=True)
    torch_like_zip(d / "optimizer.pt")
    torch_like_zip(d / "scheduler.pt")
    (d / "trainer_state.json").write_text(json.dumps({"global_step": 4, "max_steps": 10}))
    return d


# ------------------------------------------------------------------ check-ckpt: a checkpoint without weights
def test_checkpoint_without_weights_fails_expect_full(tmp_path):
    d = _trainer_state_only(tmp_path / "checkpoint-4")
    p = cli("check-ckpt", str(d), "--expect", "full", "--format", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    f = json.loads(p.stdout)["findings"]
    assert [x["rule_id"] for x in f] == ["GD802"] and f[0]["severity"] == "error"
    m = f[0]["message"]
    assert "no model weights" in m and "optimizer.pt" in m and "trainer_state.json" in m and "--expect full" in m
    # without --expect the gate warns: the folder may be meant to hold the trainer state alone
    p = cli("check-ckpt", str(d), "--format", "json")
    f = json.loads(p.stdout)["findings"]
    assert p.returncode == 0 and [(x["rule_id"], x["severity"]) for x in f] == [("GD802", "warning")]
    assert cli("check-ckpt", str(d), "--fail-on", "warning").returncode == 1
    assert cli("check-ckpt", str(d), "--expect", "lora").returncode == 1


def test_good_checkpoint_gets_an_inventory(tmp_path):
    d = full_checkpoint(tmp_path / "checkpoint-2", optimizer_factor=0)
    torch_like_zip(d / "optimizer.pt")
    p = cli("check-ckpt", str(d), "--expect", "full")
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("No problem found."))
    for part in ("checkpoint-2: full weights", "102,976 params", "F16", "safetensors headers OK",
                 "optimizer state present", "step 2"):
        assert part in line, line
    size = sum(f.stat().st_size for f in d.iterdir())
    inv = json.loads(cli("check-ckpt", str(d), "-f", "json").stdout)["run"]["vitals"]["checkpoints"][0]
    assert inv == {"path": str(d), "kind": "full", "params": 102976, "bytes": size, "dtype": "F16",
                   "headers_ok": True, "optimizer": True, "step": 2}


# ------------------------------------------------------------------ preflight: GRPO without a reward
GRPO = ["swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--tuner_type", "lora",
        "--num_generations", "4", "--per_device_train_batch_size", "4", "--dataset", "d.jsonl",
        "--save_total_limit", "2"]


def test_preflight_refuses_grpo_without_a_reward():
    p = cli("preflight", "--swift-version", "4.6.0", "--gpu-mem", "80", "-f", "json", "--", *GRPO)
    assert p.returncode == 1, p.stdout + p.stderr
    f = next(x for x in json.loads(p.stdout)["findings"] if x["rule_id"] == "GD611")
    assert f["severity"] == "error" and "--reward_funcs" in f["message"] and "4.6.0" in f["message"]
    # before 4.4 ms-swift refuses it itself, after loading the model: the very error, before any GPU time
    p = cli("preflight", "--swift-version", "4.3.0", "--gpu-mem", "80", "-f", "json", "--", *GRPO)
    assert p.returncode == 1 and "GD603" in [x["rule_id"] for x in json.loads(p.stdout)["findings"]]
    for more in (["--reward_funcs", "accuracy"], ["--reward_model", "m/rm"], ["--teacher_model", "m/t"]):
        p = cli("preflight", "--swift-version", "4.6.0", "--gpu-mem", "80", "-f", "json", "--", *GRPO, *more)
        assert not {"GD611", "GD603"} & {x["rule_id"] for x in json.loads(p.stdout)["findings"]}, more


# ------------------------------------------------------------------ a metric alarm needs more than one row
FLAT_ROW = {"loss": 0.0, "grad_norm": 1.93, "learning_rate": 1e-06, "reward": 0.0, "reward_std": 0.0,
            "frac_reward_zero_std": 1.0, "rewards/MathAccuracy/mean": 0.0, "kl": 0.0,
            "global_step/max_steps": "1/100"}


def _flat(findings):
    return next(f for f in findings if f["rule_id"] == "GD610")


def test_one_flat_first_step_is_too_early_to_tell(tmp_path):
    (tmp_path / "logging.jsonl").write_text(json.dumps(FLAT_ROW) + "\n")
    p = cli("analyze", str(tmp_path), "-f", "json", "--fail-on", "warning")
    assert p.returncode == 0, p.stdout + p.stderr
    f = _flat(json.loads(p.stdout)["findings"])
    assert f["severity"] == "info" and "too early to tell" in f["message"].lower() and "action" not in f
    assert "1.93" in f["message"] and "grad_norm are 0" not in f["message"]
    assert "grad_norm is 0" not in f["message"]


def test_flat_steps_with_a_gradient_never_say_it_is_zero(tmp_path):
    rows = [dict(FLAT_ROW, **{"global_step/max_steps": f"{i}/100"}) for i in range(1, 6)]
    (tmp_path / "logging.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = cli("analyze", str(tmp_path), "-f", "json")
    f = _flat(json.loads(p.stdout)["findings"])
    assert p.returncode == 1 and f["severity"] == "error" and f["action"] == "stop"
    assert "up to 1.93" in f["message"] and "grad_norm are 0" not in f["message"]
    assert "grad_norm is 0" not in f["message"]


def test_watch_one_flat_first_step_does_not_say_stop(tmp_path):
    from watchutil import run_watch
    row = str({**FLAT_ROW})
    r = run_watch(tmp_path, [], argv=[sys.executable, "-c", f"print({row!r}, flush=True)"])
    assert r.code == 0, r.doc
    f = _flat(r.report["findings"])
    assert f["severity"] == "info" and f.get("action") != "stop" and "too early to tell" in f["message"].lower()


# ------------------------------------------------------------------ --fail-on: a hung run, a run on zero reward
def test_watch_hang_that_never_resumes_is_an_error(tmp_path):
    from conftest import FIXTURES
    from watchutil import run_watch

    from doctor.live.watchdogs import Limits
    log = FIXTURES / "real-hang-cut-after-step-3" / "log.txt"
    r = run_watch(tmp_path, ["--log", str(log), "--then", "sleep:3"], limits=Limits(steady=1.0), poll=0.2)
    f = next(f for f in r.report["findings"] if f["rule_id"] == "GD321")
    assert f["severity"] == "error" and "No progress for" in f["message"]


def test_training_on_zero_reward_by_configuration_fails_the_gate(tmp_path):
    """args.json names no reward and the one logged step has reward 0: the configuration is the evidence."""
    (tmp_path / "args.json").write_text(json.dumps({"rlhf_type": "grpo", "reward_funcs": [], "reward_model": None,
                                                    "num_generations": 4, "swift_version": "4.6.0"}))
    row = {"loss": 0.0, "grad_norm": 0.0, "reward": 0.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0,
           "global_step/max_steps": "1/50"}
    (tmp_path / "logging.jsonl").write_text(json.dumps(row) + "\n")
    p = cli("analyze", str(tmp_path), "-f", "json")
    f = next(x for x in json.loads(p.stdout)["findings"] if x["rule_id"] == "GD611")
    assert f["severity"] == "error" and p.returncode == 1, p.stdout


def test_hs_literal_escapes_every_byte_but_letters_and_digits():
    from doctor.gate import hs_literal

    def by_byte(word: bytes) -> bytes:
        return b"".join(bytes((c,)) if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 else b"\\x%02x" % c
                        for c in word)
    words = [bytes(range(256)), b"", b"abcXYZ019", b"a b", "é中\t".encode(), "中文".encode("gb18030"), b"\\x41"]
    words += [bytes((i, (i * 7) % 256, (i * 13) % 256)) for i in range(256)]
    for w in words:
        assert hs_literal(w) == by_byte(w), w


def test_the_words_database_matches_as_the_escaped_literals_do(tmp_path, monkeypatch):
    """hs_words_database (keyed by the words, escaped only to compile) finds what hs_database of the escaped words
    finds, compiled and then read back from the cache; another list of words is another cache entry."""
    import pytest
    hyperscan = pytest.importorskip("hyperscan")
    from doctor.gate import hs_database, hs_literal, hs_words_database
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    words = ["CUDA out of memory", "a.b*c", "[rank0]:", "中文 error", "x\0y", "(?:no)"]
    text = "x [rank0]: a.b*c then CUDA out of memory, 中文 error; (?:no) x\0y a_b_c".encode()

    def hits(db) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        db.scan(text, match_event_handler=lambda i, s, e, f, c: out.append((i, e)), scratch=hyperscan.Scratch(db))
        return sorted(out)
    want = hits(hs_database([hs_literal(w.encode()) for w in words]))
    assert len(want) == len(words)
    assert hits(hs_words_database(words)) == want       # compiled
    assert hits(hs_words_database(words)) == want       # from the cache
    assert hits(hs_words_database(words[:2])) == [h for h in want if h[0] < 2]
