"""analyze RUN_DIR feeds the checkpoint-N/ folders it finds to the checkpoint rules (their files are still
not read as logs), and the log's own diagnosis of a forced LoRA (GD701) absorbs the checkpoint's (GD801)."""
from __future__ import annotations

import os

from ckpt_util import full_checkpoint
from conftest import ROOT

from doctor.analyze import analyze

CKPT = ROOT / "fixtures" / "ckpt"


def _in_ckpt_fixtures(*paths: str):
    old = os.getcwd()
    os.chdir(CKPT)
    try:
        return analyze(list(paths)).to_json()
    finally:
        os.chdir(old)


def test_healthy_real_lora_run_with_checkpoints():
    rep = _in_ckpt_fixtures("real-lora-healthy")
    kinds = [i["kind"] for i in rep["inputs"]]
    assert kinds.count("checkpoint") == 3 and "log" in kinds and "metrics" in kinds
    assert [f for f in rep["findings"] if f["severity"] == "error"] == []
    assert not any(i["path"].endswith((".safetensors", ".pt", ".pth", ".bin")) for i in rep["inputs"])


def test_forced_lora_log_and_checkpoint_give_one_finding():
    rep = _in_ckpt_fixtures("real-lora-forced-by-load-args")
    ids = [f["rule_id"] for f in rep["findings"]]
    assert ids[0] == "GD701" and "GD801" not in ids
    ev = [e["path"] for e in rep["findings"][0]["evidence"]]
    assert any(p.endswith("log.txt") for p in ev)
    assert any(p.endswith("checkpoint-4/adapter_model.safetensors") for p in ev)


def test_run_dir_with_only_checkpoints(tmp_path):
    d = full_checkpoint(tmp_path / "out" / "checkpoint-3", optimizer_factor=0)
    os.truncate(d / "model.safetensors", 64)
    rep = analyze([str(tmp_path / "out")]).to_json()
    # the last checkpoint's trainer_state.json is a metrics source too; this one holds no log_history
    assert rep["inputs"] == [{"path": str(d / "trainer_state.json"), "kind": "trainer-state",
                              "note": "no log_history in it: no metric rows"},
                             {"path": str(d), "kind": "checkpoint"}]
    assert [f["rule_id"] for f in rep["findings"]] == ["GD802"]


def test_fp32_from_bf16_base_when_the_base_is_at_hand():
    """Run from the training's working directory, the base model named in args.json (--model tiny-qwen2) is
    found, so the bloat finding names the bf16 base and the bf16 saving; the golden (base lookup off) does not."""
    from doctor.ckpt import check_paths
    case = CKPT / "real-full-fp32-from-bf16-base"
    old = os.getcwd()
    os.chdir(case)
    try:
        rep = check_paths(["v0-20261122-210931/checkpoint-2"])
    finally:
        os.chdir(old)
    f = [x for x in rep.findings if x.rule_id == "GD803"][0]
    # 1,354,041 bytes in checkpoint-2 / (102,976 params x 2 bytes) = 6.57 -> "6.6x" (file sizes checked by hand)
    total = sum(p.stat().st_size for p in (case / "v0-20261122-210931" / "checkpoint-2").iterdir())
    assert f"{total / (102_976 * 2):.1f}x the model's BF16 size" in f.message
    assert "float32 weights from a BF16 base (the base model's config.json" in f.message
    assert any(x.startswith("--torch_dtype bfloat16 (bf16 weights and optimizer moments): saves") for x in f.fix)


def test_forced_lora_state_stays_bounded_on_a_repeating_log(tmp_path):
    """GD701 reads the first args.json loaded (before the rank line when there is one) and the last checkpoint
    saved; a log that repeats those lines (runs appended to one file, a long run saving every few steps) leaves
    the rule holding one of each, not one per line (issue 19 point 3: it kept them all), with the same finding."""
    from conftest import feed_text

    from doctor.checks.checkpoint.forced_lora import ForcedLora
    from doctor.engine import Session

    src = (ROOT / "fixtures/logs/real-full-from-merged-load-args-true/log.txt").read_text().splitlines()
    rank = next(i for i, ln in enumerate(src) if ln.startswith("[INFO:swift] rank: "))
    extra_loaded = [f"[INFO:swift] Successfully loaded other/late-{i}/args.json." for i in range(3000)]
    saves = [f"[INFO:swift] Saving model checkpoint to <work>/runs/x/checkpoint-{10 * i}" for i in range(1, 20001)]
    sess = Session()
    sess.begin_log("log.txt")
    feed_text(sess, "\n".join(src[:rank + 1] + extra_loaded + saves + src[rank + 1:]) + "\n")
    rule = next(r for r in sess.rules if isinstance(r, ForcedLora))
    assert not [k for k, v in vars(rule).items() if isinstance(v, (list, dict, set)) and len(v) > 10]
    found = [f for f in sess.finish() if f.rule_id == "GD701"]
    assert len(found) == 1
    text = found[0].message + " ".join(found[0].fix)
    assert "bases/lora-sft-merged/args.json" in text and "late-" not in text   # the first, before the rank line
    # the last checkpoint named is the log's own last_model_checkpoint line, after the 20,000 saves
    assert "full-from-merged-load-args-true/v0-20261122-205608/checkpoint-4" in " ".join(found[0].fix)
