"""Claims with their facts (doctor/claims.py, issue 29 point 1): a sentence that states a fact of the run goes (or
is rewritten) when the run contradicts it, and stays when it does not.

Per rule family, a real rule's output (a case of rules/<family>/cases.toml or a fixture log, run through the real
engine by tests/test_rule_cases.py's ``run_case``) is fed once as it is and once with one more fact that contradicts
a claim of its text: the claim is there in the first run and gone in the second. The distributed and hang families
state no such fact in any golden or dev-log report (the scan in the commit message), so they have none here.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT
from test_rule_cases import CASES, run_case

from doctor.claims import (
    FROM_NAME,
    MetricFacts,
    Oom,
    RunFacts,
    check_finding,
    check_text,
    claims_in,
    declare,
    read_oom,
    satisfies,
    sentences,
)
from doctor.model import Finding, Severity


def _case(rule: str, i: int = 0) -> dict:
    return [c for _, c in CASES if c["rule"] == rule and c.get("fires", True)][i]


def _text(found: list[Finding]) -> str:
    assert found, "the rule did not fire"
    return " ".join([found[0].message, *found[0].fix])


def _metrics(**values: float) -> MetricFacts:
    m = MetricFacts()
    for v in values.values():
        m.add(v)
    return m


# ------------------------------------------------------------------------------------------------ the mechanism

def test_sentences_keep_abbreviations_backticks_and_brackets_whole():
    text = "A (see x. Y) b. E.g. `a. B` c. Then, e.g. MAX_PIXELS=1. Last"
    assert sentences(text) == ["A (see x. Y) b.", "E.g. `a. B` c.", "Then, e.g. MAX_PIXELS=1.", "Last"]


def test_quoted_log_text_and_conditions_are_not_claims():
    assert claims_in("Find the full `CUDA out of memory. Tried to allocate` message.") == []
    assert claims_in("Reproduce: if loss and grad_norm stay 0 while reward_std is above 0, update.") == []
    assert [c.kind for c in claims_in("so loss and grad_norm are 0 and nothing learns.")] == ["metric", "metric"]


def test_read_oom_both_wordings():
    new = read_oom("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.35 GiB of "
                   "which 66.00 GiB is free.")
    assert new is not None and new.ample and new.total == pytest.approx(79.35)
    old = read_oom("Tried to allocate 3.71 GiB (GPU 0; 23.58 GiB total capacity; 20 GiB already allocated; 2.10 GiB "
                   "free; 21 GiB reserved)")
    assert old is not None and not old.ample and old.free == pytest.approx(2.10)


def test_satisfies():
    assert satisfies("0.8.1", ">=0.7.2") and not satisfies("0.6.3", ">= 0.7.2")
    assert satisfies("0.14.0", "==0.14.0") and not satisfies("0.8.1", ">=0.4.3,<=0.7.3")
    assert satisfies("0.7.3", ">=0.4.3,<=0.7.3") and satisfies("0.7.3", "==0.7.*")


def test_an_unknown_fact_contradicts_nothing():
    text = ("MAX_PIXELS is not set. grad_norm is 0. The engine runs out of memory. world size 1 x 2 = 2. "
            "pip install 'vllm>=0.7.2'. 7B weights.")
    assert check_text(text, RunFacts()) == (text, [])


@pytest.mark.parametrize("sentence, facts, gone", [
    ("MAX_PIXELS is not set: each image is large.", RunFacts(env={"MAX_PIXELS": "262144"}), True),
    ("--vllm_max_model_len 4096: unset, vLLM sizes its KV cache for the full window.",
     RunFacts(cli={"vllm_max_model_len": 8192}), True),
    ("Leave UNSLOTH_VLLM_STANDBY unset to rule it out.", RunFacts(env={"UNSLOTH_VLLM_STANDBY": "1"}), False),
    ("grad_norm is 0 here.", RunFacts(metrics={"grad_norm": _metrics(a=1.93, b=2.1)}), True),
    ("grad_norm is 0 here.", RunFacts(metrics={"grad_norm": _metrics(a=1.93, b=0.0)}), False),
    ("reward_std stays 0.", RunFacts(metrics={"reward_std": _metrics(a=0.4)}), True),
    ("loss is NaN from step 3.", RunFacts(metrics={"loss": _metrics(a=0.1, b=0.2)}), True),
    ("loss is NaN from step 3.", RunFacts(metrics={"loss": _metrics(a=0.1, b=float("nan"))}), False),
    ("world size 1 x per_device_train_batch_size 2 = 2 (computed).", RunFacts(max_rank=15), True),
    ("world size 1 x per_device_train_batch_size 2 = 2 (computed).", RunFacts(max_rank=0), False),
    ("Use vLLM >= 0.7.2 (older releases mis-place the engine).", RunFacts(versions={"vllm": "0.8.1"}), True),
    ("Use vLLM >= 0.7.2 (older releases mis-place the engine).", RunFacts(versions={"vllm": "0.6.3"}), False),
    ("pip install trl==0.14.0.", RunFacts(versions={"trl": "0.14.0"}), True),
    ("The engine needs more: the training step runs out of memory.",
     RunFacts(ooms=(Oom(0.02, 66.0, 79.35),)), True),
    ("The engine needs more: the training step runs out of memory.", RunFacts(ooms=(Oom(3.71, 2.1, 23.6),)), False),
    ("Rerun with NCCL_DEBUG=INFO to see the failing call.", RunFacts(env={"NCCL_DEBUG": "INFO"}), True),
    ("Rerun with NCCL_DEBUG=INFO to see the failing call.", RunFacts(env={"NCCL_DEBUG": "WARN"}), False),
    ("The run already sets NCCL_IB_DISABLE=1, so NCCL uses sockets.", RunFacts(env={"NCCL_IB_DISABLE": "1"}), False),
])
def test_each_kind_against_its_fact(sentence, facts, gone):
    new, changes = check_text(sentence, facts)
    assert (new != sentence) == gone, (new, changes)
    assert bool(changes) == gone


def test_rewrites():
    facts = RunFacts(model="Qwen/Qwen2.5-7B-Instruct", versions={"vllm": "0.8.1"}, args={"sleep_level": 0},
                     cli={"vllm_gpu_memory_utilization": 0.9})
    assert check_text("full fine-tuning of 7B parameters.", facts)[0] == f"full fine-tuning of 7B {FROM_NAME} parameters."
    assert check_text("full fine-tuning of 7B parameters.", replace(facts, params_read=True))[0] == \
        "full fine-tuning of 7B parameters."
    assert check_text("Qwen/Qwen2.5-7B-Instruct is large.", facts)[0] == "Qwen/Qwen2.5-7B-Instruct is large."
    assert check_text("Upgrade vllm to 0.7.3 first.", facts)[0] == "Downgrade vllm to 0.7.3 first."
    assert check_text("Downgrade vllm to 0.9.1 first.", facts)[0] == "Upgrade vllm to 0.9.1 first."
    assert check_text("Upgrade vllm to 0.8.1 first.", facts)[0] == ""
    assert check_text("It stays (sleep_level not set: 0 (assumed), the default).", facts)[0] == \
        "It stays (sleep_level 0)."
    assert check_text("The engine shares it (vllm_gpu_memory_utilization 0.9 (assumed)).", facts)[0] == \
        "The engine shares it (vllm_gpu_memory_utilization 0.9)."
    assert check_text("The engine shares it (vllm_gpu_memory_utilization 0.5 (assumed)).", facts)[0] == ""


def test_env_advice_the_run_already_has_goes_or_is_marked():
    facts = RunFacts(env={"NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO"})
    # every setting the sentence advises is the run's: the sentence changes nothing and goes
    assert check_text("Across nodes test the network (NCCL_IB_DISABLE=1 to test). Then X.", facts)[0] == "Then X."
    # one of two is the run's: the other stays, the run's is marked
    assert check_text("Rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 to see the call.", facts)[0] == \
        "Rerun with NCCL_DEBUG=INFO (already set in this run) CUDA_LAUNCH_BLOCKING=1 to see the call."
    # a placeholder or a quoted command is not the run's setting
    text = "Set NCCL_SOCKET_IFNAME=<the interface> or run `NCCL_IB_DISABLE=1 torchrun ...`."
    assert check_text(text, facts) == (text, [])


def test_a_declared_claim_is_checked_like_a_recognised_one():
    f = Finding("GD000", "x", "other", Severity.error, "T", "The policy cannot move. Other text.",
                fix=("Look at the gradients: nothing flows.",),
                claims=(declare("policy cannot move", "metric", "grad_norm", "0"),
                        declare("nothing flows", "metric", "grad_norm", "0")))
    out, changes = check_finding(f, RunFacts(metrics={"grad_norm": _metrics(a=1.93)}))
    assert out.message == "Other text." and out.fix == () and len(changes) == 2
    assert check_finding(f, RunFacts(metrics={"grad_norm": _metrics(a=0.0)}))[0] is f
    with pytest.raises(ValueError):
        declare("x", "no-such-kind", "y")


def test_a_message_left_without_sentences_says_why():
    f = Finding("GD000", "x", "other", Severity.error, "Gradients vanish", "grad_norm is 0.")
    out, _ = check_finding(f, RunFacts(metrics={"grad_norm": _metrics(a=1.93)}))
    assert out.message.startswith("Gradients vanish. (The usual explanation of this does not fit this run: ") and "1.93" in out.message
    # what it rested on is contradicted: no surer than possible (dev15 1817 kept a contradicted finding at certain)
    assert f.confidence == "certain" and out.confidence == "possible"


# ---------------------------------------------------------------------------------- real rules, one per family

OOM = "Tried to allocate 3.71 GiB. GPU 0 has a total capacity of 23.58 GiB of which 2.10 GiB is free"
OOM_FREE = "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.35 GiB of which 66.00 GiB is free"


def test_memory_GD201_a_shortage_beside_66_gib_free_is_rewritten():
    case = _case("GD201")
    assert case["log"].count(OOM) == 1
    before = _text(run_case(case))
    assert before.startswith("Out of GPU memory") and "not a plain shortage" not in before
    after = _text(run_case({**case, "log": case["log"].replace(OOM, OOM_FREE)}))
    assert not after.startswith("Out of GPU memory")
    assert "A CUDA allocation failed in the training process" in after
    assert "66.00 GiB free of 79.35 GiB on that GPU against 0.02 GiB requested: not a plain shortage" in after


def test_memory_GD201_model_size_from_the_name_is_marked():
    case = _case("GD201")
    text = _text(run_case(case))
    assert f"7B {FROM_NAME} full on 8 GPUs" in text and f"7B {FROM_NAME} parameters" in text


def test_checkpoint_GD701_a_printed_parameter_count_needs_no_mark():
    """GD701's run prints model_parameter_info: a size it states is not taken from the name."""
    case = _case("GD701")
    found = run_case({**case, "with": ["GD201"]})
    assert FROM_NAME not in _text(found)
    assert "model_parameter_info" in case["log"]


def test_numerics_GD632_grad_norm_zero_beside_a_logged_1_93_goes():
    log = (ROOT / "fixtures/logs/real-peft-adapter-loaded-not-trainable/log.txt").read_text(encoding="utf-8")
    claim = "grad_norm is 0"
    assert claim in _text(run_case({"rule": "GD632", "log": log}))
    rows = [{"loss": 0.31, "grad_norm": 1.93, "global_step/max_steps": f"{i}/9", "learning_rate": 1e-5}
            for i in (1, 2)]
    after = run_case({"rule": "GD632", "log": log, "metrics": rows})
    assert claim not in _text(after)
    assert "trainable params: 0" in after[0].message  # the evidence sentence stays


def test_rewards_GD610_loss_and_grad_norm_are_0_goes_when_they_are_not():
    case = _case("GD610")
    claim = "so loss and grad_norm are 0"
    assert claim in _text(run_case(case))
    rows = [{**r, "grad_norm": 1.93 + i, "loss": 0.05} for i, r in enumerate(case["metrics"])]
    after = _text(run_case({**case, "metrics": rows}))
    assert claim not in after and "no completion earned any reward" in after


def test_rewards_GD610_world_size_1_assumed_goes_beside_rank_7():
    case = _case("GD610")
    claim = "world size 1 (assumed)"
    assert claim in _text(run_case(case))
    after = _text(run_case({**case, "log": "[rank7]: [INFO:swift] Start time of running main\n"}))
    assert claim not in after and "--dynamic_sample true" in after


def test_outputs_GD643_assumed_world_size_goes_beside_rank_3():
    case = _case("GD643")
    claim = "assumes world size 1"
    assert claim in _text(run_case(case))
    assert claim not in _text(run_case({**case, "log": "[rank3]: [INFO:swift] Start time of running main\n"}))


def test_batch_GD101_world_size_1_assumed_goes_beside_rank_15():
    """The error gives the generation batch alone: the rule assumes world size 1, which [rank15]: contradicts; the
    fixes built on it go, the one that needs no assumption (divisors of the batch the error printed) stays."""
    line = "ValueError: generation_batch_size (3) must be evenly divisible by num_generations (2). Valid values: [3]."
    before = _text(run_case({"rule": "GD101", "log": line + "\n"}))
    assert "world size 1 (assumed)" in before and "assumes world size 1" in before
    after = run_case({"rule": "GD101", "log": "[rank15]: " + line + "\n"})
    text = _text(after)
    assert "world size 1 " not in text and "assumes world size 1" not in text
    assert after[0].fix == ("--num_generations 3 (divisors of 3; at least 4 keeps the advantage estimate stable).",)
    assert "rank 15: world size 16 at least" in after[0].message


def test_args_GD409_one_process_goes_beside_rank_3():
    d = ROOT / "fixtures/logs/edge-vllm-with-device-map"
    case = {"rule": "GD409", "command": (d / "command.txt").read_text(encoding="utf-8"),
            "log": (d / "log.txt").read_text(encoding="utf-8")}
    claim = "(1 process)"
    assert claim in _text(run_case(case))
    assert claim not in _text(run_case({**case, "log": case["log"] + "[rank3]: [INFO:swift] still here\n"}))


def test_vllm_GD210_use_vllm_0_7_2_goes_when_0_8_1_is_installed():
    case = _case("GD210")
    claim = "Use vLLM >= 0.7.2"
    assert claim in _text(run_case(case))
    after = _text(run_case({**case, "log": "[INFO:swift] vllm version 0.8.1\n" + case["log"]}))
    assert claim not in after and "--vllm_mode colocate" in after


def test_deps_GD455_install_the_failing_trl_goes():
    case = _case("GD455")
    claim = "pip install trl==0.14.0"
    assert claim in _text(run_case(case))
    after = _text(run_case({**case, "log": "Requirement already satisfied: trl==0.14.0\n" + case["log"]}))
    assert claim not in after and "Or port the subclass" in after


def test_unset_claim_of_a_real_rule_goes_when_the_command_sets_it():
    """A flag called unset that the command sets: GD201's 'sleep_level not set: 0 (assumed)' against a launch
    whose args dump holds sleep_level (the rule reads the command only)."""
    case = _case("GD201")
    claim = "sleep_level not set"
    assert claim in _text(run_case(case))
    dump = "[INFO:swift] args: RLHFArguments(\nsleep_level=0,\n)\n"
    after = _text(run_case({**case, "log": dump + case["log"]}))
    assert claim not in after


def test_unset_is_not_claimed_when_no_configuration_was_read():
    from doctor.claims import RunFacts, check_text
    blind = RunFacts(config_read=False)
    out, dropped = check_text("MAX_PIXELS is not set, so each image is encoded at up to 12845056 pixels.", blind)
    assert out.startswith("MAX_PIXELS not read from the inputs, so") and dropped
    out, _ = check_text("--vllm_max_model_len 4096: unset, vLLM plans for the whole window.", blind)
    assert out.startswith("--vllm_max_model_len 4096: not read from the inputs")
    # a run whose command was read and does not hold it: "unset" is what the inputs show
    assert check_text("MAX_PIXELS is not set.", RunFacts())[0] == "MAX_PIXELS is not set."


def test_claims_of_a_sentence_are_recognised_once_and_come_back_equal(monkeypatch):
    # watch checks the same findings' sentences at every live evaluation: the claims of a text are kept (claims are
    # frozen, their recognition reads the text alone); a caller's list is its own
    from doctor import claims
    monkeypatch.setattr(claims, "_FOUND", {})
    s = "so loss and grad_norm are 0 and nothing learns."
    first = claims_in(s)
    first.append("a caller's own item")
    again = claims_in(s)
    assert [c.kind for c in again] == ["metric", "metric"] and again == first[:2]
    assert list(claims._FOUND) == [s]
    monkeypatch.setattr(claims, "_FOUND_MAX", 1)
    claims_in("Reproduce: if loss and grad_norm stay 0 while reward_std is above 0, update.")
    assert list(claims._FOUND) == ["Reproduce: if loss and grad_norm stay 0 while reward_std is above 0, update."]


@pytest.mark.parametrize("command,given", [
    ("trl grpo --model_name_or_path Qwen/Qwen2-0.5B --output_dir out", True),   # trl's CLI (trl/cli.py)
    ("tune run lora_finetune_single_device --config llama3/8B_lora", True),      # torchtune's CLI
    ("$ CUDA_VISIBLE_DEVICES=0 llamafactory-cli train examples/x.yaml", True),
    ("bash scripts/train_grpo.sh", False),   # a script's name: its contents are the command
])
def test_a_frameworks_cli_pasted_on_its_own_line_is_a_launch_command_given(tmp_path, command, given):
    from doctor.analyze import analyze
    (tmp_path / "log.txt").write_text(f"Training fails with a strange error, I do not know why.\nMy command:\n{command}\n",
                                      encoding="utf-8")
    text = " ".join(" ".join([f.message, *f.fix]) for f in analyze([str(tmp_path)]).findings)
    assert ("launch command" not in text) == given


def test_a_request_for_the_launch_command_goes_when_the_command_was_read():
    from doctor.claims import without_given_requests
    ask = "Share the lines where the run stopped or went wrong (a traceback, an exit code) and the launch command."
    assert without_given_requests(ask, RunFacts(command_given=True)) == (
        "Share the lines where the run stopped or went wrong (a traceback, an exit code).")
    assert without_given_requests(ask, RunFacts()) == ask   # no command read: the request stands
    side = "Read the lines just before the error line: the cause is usually printed there; share them with the launch command."
    assert without_given_requests(side, RunFacts(command_given=True)).endswith("usually printed there.")


def test_nccls_own_info_lines_show_nccl_debug_info_is_already_set():
    from conftest import run_text
    # the shape of NCCL's INFO and WARN lines before a system error (devlogs25 3125, devlogs 234): the run printed them,
    # so it ran under NCCL_DEBUG=INFO
    error = ("[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
             "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n")
    info = ("node1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
            "node1:2001:2090 [0] NCCL INFO Channel 00/02 :    0   1\n"
            "node1:2001:2090 [0] init.cc:1234 NCCL WARN Cuda failure 'invalid argument'\n")
    said = lambda found: " ".join(" ".join((f.message, *f.fix)) for f in found)  # noqa: E731
    alone = said(run_text(error))
    assert "rerun with NCCL_DEBUG=INFO" in alone and "already set in this run" not in alone
    assert "NCCL_DEBUG=INFO (already set in this run)" in said(run_text(info + error))
