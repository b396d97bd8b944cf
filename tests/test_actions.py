"""Issue 20 point 1: every rule says what to do (action), how to see the fix worked (verify) and, where one
exists, the check that would have caught it (prevent); the run refines the action and writes the command."""
from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import ROOT

from doctor.analyze import analyze
from doctor.catalog_view import explain_text, rules_json
from doctor.model import Evidence, Finding, Report, Role, Severity
from doctor.registry import ACTIONS, CatalogError, find_rule, load_catalog
from doctor.render import markdown, text
from doctor.sources.swiftcmd import flag_values, parse_command
from doctor.sources.swiftconfig import Launch, RunConfig
from doctor.swift.relaunch import command_line, invalidates
from doctor.verdict import last_good, refine

LOGS = ROOT / "fixtures" / "logs"
# rules that `grpo-doctor preflight` can itself report (doctor/preflight.py: the simulated argument checks, the
# config-only rules, and the GPU rules with --gpu-snapshot)
# (checked by hand: NPROC_PER_NODE against the visible GPUs gives GD420, never GD408/GD303, so those have no prevent)
PREFLIGHT_RULES = {"GD101", "GD102", "GD103", "GD401", "GD420", "GD460", "GD461", "GD462", "GD470", "GD501", "GD503",
                   "GD603", "GD611",
                   "GD643", "GD644", "GD701"}


def test_every_rule_has_an_action_and_a_verify():
    for m in load_catalog():
        assert m.action in ACTIONS, m.path
        assert len(m.verify) > 20, m.path


def test_prevent_names_a_check_that_exists():
    from doctor.ckpt import checkpoint_rules
    CKPT_RULES = {m.id for m in checkpoint_rules()}
    ids = {m.id for m in load_catalog()}
    with_prevent = [m for m in load_catalog() if m.prevent]
    assert len(with_prevent) > 20
    for m in with_prevent:
        rule, _, command = m.prevent.partition(": ")
        assert rule in ids, m.path
        if "grpo-doctor preflight" in command:
            assert rule in PREFLIGHT_RULES, m.path
        else:
            assert command.startswith("grpo-doctor check-ckpt") and rule in CKPT_RULES, m.path


def test_keys_go_right_after_severity():
    # the outputs helper edits why/references: keeping these three lines in one place keeps merges clean
    for m in load_catalog():
        lines = open(m.path, encoding="utf-8").read().splitlines()
        i = next(i for i, line in enumerate(lines) if line.startswith("severity = "))
        after = [line.split(" = ")[0] for line in lines[i + 1:i + 4]]
        assert after[:2] == ["action", "verify"], m.path


def test_bad_action_is_refused(tmp_path):
    (tmp_path / "batch").mkdir()
    (tmp_path / "batch" / "GD190-x.toml").write_text(
        'id = "GD190"\nslug = "x"\ncategory = "other"\nseverity = "error"\naction = "retry"\nverify = "v"\n'
        'title = "t"\nwhy = "w"\n[[patterns]]\nregex = "x"\nliterals = ["x"]\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="GD190-x.toml: action 'retry' is not one of restart, resume"):
        load_catalog(str(tmp_path))


def test_rules_json_and_explain_show_them():
    rows = {r["id"]: r for r in json.loads(rules_json(list(load_catalog())))}
    assert rows["GD301"]["action"] == "restart" and "Watchdog caught" in rows["GD301"]["verify"]
    assert rows["GD101"]["prevent"] == "GD101: grpo-doctor preflight -- <command>"
    assert "prevent" not in rows["GD606"] and rows["GD606"]["action"] == "stop"
    out = explain_text(find_rule("GD802"))
    assert "Action: resume" in out and "Verify: the new checkpoint passes" in out and "Prevent: GD802: grpo-doctor check-ckpt" in out


# ---------------------------------------------------------------------------------------------- the command line
def test_relaunch_command_is_the_runs_own_with_the_computed_flag():
    # real ms-swift 4.6 run: world 1 x batch 2 x gradient_accumulation_steps 3 = 6, not a multiple of 4 (by hand:
    # 1 x 2 x 2 = 4 is); the command is command.txt with that one flag changed
    rep = analyze([str(LOGS / "real-batch-div-grad-accum")]).to_json()
    f = rep["findings"][0]
    assert f["rule_id"] == "GD101" and f["action"] == "relaunch"
    typed = (LOGS / "real-batch-div-grad-accum" / "command.txt").read_text(encoding="utf-8").strip()
    assert f["command"] == typed.replace("--gradient_accumulation_steps 3", "--gradient_accumulation_steps 2")


def test_consequence_takes_its_roots_action():
    rep = analyze([str(LOGS / "real-ddp2-batch-div-child-failed")]).to_json()
    by_id = {f["rule_id"]: f for f in rep["findings"]}
    assert by_id["GD101"]["role"] == "root" and by_id["GD307"]["role"] == "consequence"
    assert by_id["GD307"]["action"] == "relaunch" and by_id["GD307"]["command"] == by_id["GD101"]["command"]


def test_command_line_round_trips_through_the_parser():
    env = {"NPROC_PER_NODE": "2", "HOME": "/root"}
    flags = {"model": "Qwen/Qwen2.5-7B", "reward_funcs": ["accuracy", "format"], "use_vllm": True,
             "dataset": "AI-MO/NuminaMath-TIR#5000", "system": "You are 'a' helper; think.",
             "vllm_limit_mm_per_prompt": {"image": 3}, "resume_from_checkpoint": "old/checkpoint-1"}
    cmd = command_line(env, flags, [("--per_device_train_batch_size", "4"), ("--use_vllm", ""), ("MASTER_PORT", "29501")],
                       resume="out/v0/checkpoint-40")
    assert "HOME=" not in cmd  # only the variables a launch needs
    parsed = parse_command(shlex.split(cmd), env={})
    got = flag_values(parsed)
    assert parsed.inline_env == {"NPROC_PER_NODE": "2", "MASTER_PORT": "29501"}
    assert got["reward_funcs"] == ["accuracy", "format"] and got["system"] == "You are 'a' helper; think."
    assert got["per_device_train_batch_size"] == 4 and "use_vllm" not in got
    assert got["resume_from_checkpoint"] == "out/v0/checkpoint-40" and cmd.count("--resume_from_checkpoint") == 1


def test_invalidating_flags():
    assert invalidates(["--tuner_type"]) and invalidates(["NPROC_PER_NODE"]) and invalidates(["--deepspeed"])
    assert not invalidates(["--gradient_accumulation_steps", "--vllm_gpu_memory_utilization", "MASTER_PORT"])


# ---------------------------------------------------------------------------------------------- the refinement
def _finding(rule_id: str, action: str, *, category: str = "other", flags=(), role=Role.standalone,
             evidence=(), severity=Severity.error) -> Finding:
    return Finding(rule_id, "s", category, severity, "t", "m", evidence=tuple(evidence), action=action,
                   flags=tuple(flags), role=role)


def _run() -> RunConfig:
    run = RunConfig()
    run.launches.append(Launch("rlhf", {"NPROC_PER_NODE": "4"}, {"model": "m", "vllm_gpu_memory_utilization": 0.9}))
    return run


CKPTS = [("out/checkpoint-10", 10), ("out/checkpoint-30", 30), ("out/checkpoint-20", 20)]


def test_restart_becomes_resume_at_the_last_good_checkpoint():
    corrupt = _finding("GD802", "resume", category="checkpoint-corrupt",
                       evidence=[Evidence("out/checkpoint-30/model.safetensors", 0, "cut")])
    nccl = _finding("GD301", "restart", category="nccl-timeout")
    out = {f.rule_id: f for f in refine([nccl, corrupt], _run(), CKPTS)}
    assert out["GD301"].action == "resume"
    assert out["GD301"].command == ("NPROC_PER_NODE=4 swift rlhf --model m --vllm_gpu_memory_utilization 0.9 "
                                    "--resume_from_checkpoint out/checkpoint-20")
    assert out["GD802"].action == "resume" and out["GD802"].command.endswith("out/checkpoint-20")


def test_relaunch_resumes_only_when_the_fix_keeps_the_checkpoint():
    oom = _finding("GD202", "relaunch", flags=[("--vllm_gpu_memory_utilization", "0.5")])
    lora = _finding("GD701", "relaunch", flags=[("--load_args", "false")])
    dtype = _finding("GD407", "relaunch", flags=[("--torch_dtype", "float32")])
    out = {f.rule_id: f for f in refine([oom, lora, dtype], _run(), CKPTS[:1])}
    assert out["GD202"].action == "resume" and out["GD202"].command == (
        "NPROC_PER_NODE=4 swift rlhf --model m --vllm_gpu_memory_utilization 0.5 --resume_from_checkpoint out/checkpoint-10")
    assert out["GD701"].action == "relaunch" and "--resume_from_checkpoint" not in out["GD701"].command
    assert out["GD407"].action == "relaunch" and "--torch_dtype float32" in out["GD407"].command


def test_no_checkpoint_no_launch_ended_run_and_stop():
    assert refine([_finding("GD802", "resume")], _run(), []) [0].action == "relaunch"
    f = refine([_finding("GD301", "restart")], RunConfig(), CKPTS)[0]
    assert f.action == "resume" and f.command == ""  # no launch read: nothing to write
    assert refine([_finding("GD643", "relaunch")], _run(), CKPTS, ended=True)[0].action == "relaunch"
    stop = _finding("GD606", "stop")
    assert refine([stop], _run(), CKPTS)[0] is stop
    assert last_good([("out/checkpoint-5", 5), ("out/last", None)], []) == "out/checkpoint-5"


def test_checkpoints_saved_after_the_weights_broke_are_not_resumed_from():
    """A checkpoint saved at or after the first step of a NaN loss / zero grad_norm holds the diverged or dead weights:
    resuming from it repeats the fault (the scoreboard's TRL lr 1e4 run said resume; right is relaunch)."""
    gnz = _finding("GD630", "relaunch", category="grad-norm-zero")
    assert refine([gnz], _run(), CKPTS, broken_at={"grad-norm-zero": 10})[0].action == "relaunch"
    f, = refine([gnz], _run(), CKPTS, broken_at={"grad-norm-zero": 25})
    assert f.action == "resume" and f.command.endswith("out/checkpoint-20")
    nan = _finding("GD620", "relaunch", category="loss-nan-or-inf")
    assert last_good(CKPTS, [nan], {"loss-nan-or-inf": 30}) == "out/checkpoint-20"
    # the step of a category no error finding has says nothing
    assert last_good(CKPTS, [], {"loss-nan-or-inf": 5}) == "out/checkpoint-30"


def test_a_grad_norm_beyond_float_counts_as_not_finite():
    """A 400-digit integer in a row (json.loads keeps it an int) is inf, as the metric rules read it: the run's
    facts and broken_at take it, and accounting the row raises nothing (it raised OverflowError)."""
    from doctor.engine.state import RunState
    from doctor.signals import Metrics, Where
    st = RunState()
    row = {"loss": 0.1, "grad_norm": 10 ** 400, "reward_std": 0.5, "global_step/max_steps": "3/10"}
    assert st.count(Metrics(row, Where("logging.jsonl", 1), 1, "jsonl", False))
    assert st.broken_at == {"loss-nan-or-inf": 3}
    assert st.metric_facts["grad_norm"].nonfinite == 1


def test_real_trl_run_whose_grad_norm_went_to_zero_is_relaunched():
    """The real TRL run (tests/data/trl-diverged-lr-cut/README.md): grad_norm 0 from step 2, checkpoints 2 and 4, no
    normal end. Its rows carry no step number: the row's ordinal stands for it (logging_steps 1)."""
    rep = analyze([str(ROOT / "tests" / "data" / "trl-diverged-lr-cut")])
    f = rep.findings[0]
    assert f.rule_id == "GD630" and f.action == "relaunch", (f.rule_id, f.action, f.command)
    assert "--resume_from_checkpoint" not in f.command


def test_real_run_dir_with_a_checkpoint_resumes(tmp_path):
    # a real log of a run cut while it hung mid-training, placed beside a real checkpoint folder copied from a
    # real healthy ms-swift 4.6 LoRA run (fixtures/ckpt/real-lora-healthy, the same scenario as the log): the hang
    # (restart) becomes a resume from that checkpoint
    import shutil
    run = tmp_path / "run"
    shutil.copytree(LOGS / "real-hang-cut-after-step-3", run)
    src = next((ROOT / "fixtures" / "ckpt" / "real-lora-healthy").glob("v0-*/checkpoint-2"))
    shutil.copytree(src, run / "checkpoint-2")
    rep = analyze([str(run)]).to_json()
    hang = next(f for f in rep["findings"] if f["rule_id"] == "GD321")
    assert hang["action"] == "resume", rep["findings"]
    assert hang["command"].endswith(f"--resume_from_checkpoint {shlex.quote(str(run / 'checkpoint-2'))}")


# ---------------------------------------------------------------------------------------------- rendering
def test_text_and_markdown_show_the_action():
    f = _finding("GD101", "relaunch")
    f = Finding(**{**f.__dict__, "verify": "the first step is logged", "command": "swift rlhf --x `1`"})
    rep = Report("X", [], {}, [f])
    out = text.render(rep)
    assert re.search(r"action: relaunch swift rlhf --x `1`", out) and "verify: the first step is logged" in out
    md = markdown.render(rep)
    assert "Action: **relaunch** · verify: the first step is logged" in md
    assert "```\nswift rlhf --x `1`\n```" in md


def test_a_launch_mixing_colocate_and_server_flags_is_never_relaunched_as_it_is():
    def f():
        return Finding("GD322", "x", "hang-at-start", Severity.warning, "t", "m", action="restart")

    mixed = {"rlhf_type": "grpo", "model": "m", "use_vllm": True, "vllm_mode": "colocate",
             "vllm_server_host": "node1", "vllm_server_port": 8000}
    run = RunConfig()
    run.launches.append(Launch("rlhf", {}, dict(mixed)))
    (out,) = refine([f()], run)
    assert out.command == ""  # which mode was meant is unknown: no command rather than the mixed one
    run.command_texts.append("python3 -m swift.cli.rollout --model m")  # the run's rollout server: server mode
    (out,) = refine([f()], run)
    assert "--vllm_mode server" in out.command and "colocate" not in out.command
    run = RunConfig()
    run.launches.append(Launch("rlhf", {}, {**mixed, "vllm_mode": "server"}))
    (out,) = refine([f()], run)
    assert "--vllm_mode server" in out.command
