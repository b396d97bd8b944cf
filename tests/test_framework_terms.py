"""Fixes in the terms of the framework that ran (doctor/swift/terms.py, issue 15 point 5).

Every dev-log case and every golden fixture whose run is detected as a framework other than ms-swift (trl, open-r1 on
trl, unsloth, verifiers) is analyzed, and no finding's message or fix line may name an ms-swift-only flag, environment
variable or command, except a line that names both frameworks side by side ("ms-swift --vllm_max_model_len, trl
vllm-serve --max_model_len").
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.swift.terms import in_terms, say

ROOT = Path(__file__).resolve().parent.parent
# ms-swift-only: its launcher's environment, its commands, its flags with no trl field of the same name
SWIFT_ONLY = re.compile(
    r"\bNPROC_PER_NODE\b|\bNNODES\b|\bNODE_RANK\b|`swift (?:rollout|rlhf|sft)\b|(?<![\w-])--(?:vllm_mode|"
    r"vllm_server_host|vllm_server_port|vllm_gpu_memory_utilization|vllm_max_model_len|vllm_tensor_parallel_size|"
    r"sleep_level|offload_model|offload_optimizer|move_model_batches|dynamic_sample|async_generate|"
    r"external_plugins|tuner_type|train_type|vllm_enable_lora|ddp_timeout)\b")


def _non_swift_runs() -> list[Path]:
    # dev-log cases taken from a thread outside ms-swift's repository (the label's source names it)
    out = [p for p in sorted((ROOT / "fixtures" / "devlogs").iterdir()) if (p / "label.json").is_file()
           and not json.loads((p / "label.json").read_text(encoding="utf-8"))["source"].startswith("modelscope/")]
    for exp in sorted((ROOT / "fixtures" / "logs").glob("*.expected.json")):
        fw = json.loads(exp.read_text(encoding="utf-8")).get("run", {}).get("framework")
        if fw not in (None, "ms-swift"):
            out.append(exp.with_name(exp.name[: -len(".expected.json")]))
    return out


def _offending(report) -> list[str]:
    bad = []
    for f in report.findings:
        for line in (f.message, *f.fix, f.command):
            for m in SWIFT_ONLY.finditer(line or ""):
                if "ms-swift" not in line[max(0, m.start() - 12):m.start()] and not (
                        "ms-swift" in line and re.search(r"\btrl\b", line)):
                    bad.append(f"{f.rule_id}: {line}")  # unlabelled: not "ms-swift --flag" nor a side-by-side line
            if "{v}" in (line or "") or "{tuner}" in (line or ""):
                bad.append(f"{f.rule_id}: unfilled hole: {line}")
    return bad


@pytest.mark.parametrize("case", _non_swift_runs(), ids=lambda p: p.name)
def test_no_swift_only_terms_in_a_non_swift_run(case: Path):
    report = analyze([str(case)])
    if report.run.get("framework") == "ms-swift":
        pytest.skip("the run reads as ms-swift")
    assert _offending(report) == []  # a framework not told gets labelled ms-swift flags, never bare ones


def test_say_translates_drops_and_keeps():
    assert say("Make NPROC_PER_NODE=4 equal to the GPUs", "trl") == (
        "Make the number of training processes (accelerate launch --num_processes 4, torchrun --nproc_per_node 4) "
        "equal to the GPUs")
    assert say("--num_generations 16 with --gradient_accumulation_steps 16; keep --temperature at 0.9.", "trl") == (
        "GRPOConfig(num_generations=16, gradient_accumulation_steps=16); keep GRPOConfig.temperature at 0.9.")
    assert say("--offload_model true --offload_optimizer true: move states to CPU", "trl") is None  # no equivalent
    assert say("ms-swift: `swift rollout` on other GPUs.", "trl") is None
    assert say("--vllm_max_model_len 4096", "unsloth") == "FastLanguageModel.from_pretrained(max_seq_length=4096)"
    assert say("--sleep_level 1", "trl") == "GRPOConfig(vllm_enable_sleep_mode=True)"
    assert say("--sleep_level 1", "unsloth") is None
    side = "max_model_len (ms-swift --vllm_max_model_len, trl vllm-serve --max_model_len)."
    assert say(side, "trl") == "max_model_len (trl vllm-serve --max_model_len)."  # the other spellings for trl
    assert say(side, None) == "max_model_len."  # the framework not told: no trainer's spelling (issue 29, point 5)
    # vllm-serve's own options stay as they are
    assert say("`trl vllm-serve --max_model_len 8192 --gpu_memory_utilization 0.8`", "trl") == (
        "`trl vllm-serve --max_model_len 8192 --gpu_memory_utilization 0.8`")
    assert say("eval off (eval_strategy=\"no\"; ms-swift --eval_strategy no)", "trl") == (
        "eval off (eval_strategy=\"no\")")  # ms-swift's spelling left out of a trl run's report
    # a LLaMA-Factory run reads its own spelling only (its YAML's cutoff_len, not trl's field)
    assert say("cut (trl: max_prompt_length; LLaMA-Factory: cutoff_len; ms-swift: --max_length), or", "llamafactory") == (
        "cut (LLaMA-Factory: cutoff_len), or")
    # a quote of the log in a code span is what the run wrote: never translated
    assert say("The parser does not take `--vllm_gpu_memory_utilization 0.8`.", None) == (
        "The parser does not take `--vllm_gpu_memory_utilization 0.8`.")
    assert say("It refused `--num_generations 16`; use --num_generations 8.", "trl") == (
        "It refused `--num_generations 16`; use GRPOConfig(num_generations=8).")
    # ms-swift: unchanged
    assert say("NPROC_PER_NODE=4 --sleep_level 1", "ms-swift") == "NPROC_PER_NODE=4 --sleep_level 1"


def test_a_framework_not_told_gets_neutral_names_never_an_ms_swift_flag():
    assert say("--num_generations 4 and --vllm_gpu_memory_utilization 0.5.", None) == (
        "num_generations 4 and vLLM's gpu_memory_utilization 0.5.")
    assert say("lower --vllm_gpu_memory_utilization so vLLM fits", None) == "lower vLLM's gpu_memory_utilization so vLLM fits"
    assert say("--offload_model true: move states to CPU", None) is None  # an ms-swift-only lever has no neutral name
    assert say("ms-swift: `swift rollout` on other GPUs.", None) is None
    assert say("`trl vllm-serve --max_model_len 8192`", None) == "`trl vllm-serve --max_model_len 8192`"
    assert say("Set NPROC_PER_NODE=4.", None) == "Set the number of training processes (4)."


def test_a_vllm_run_gets_vllm_serve_options_and_openrlhf_its_own_flags():
    # vllm/engine/arg_utils.py EngineArgs as `vllm serve` options; openrlhf/cli/train_ppo_ray.py argparse
    assert say("lower --vllm_gpu_memory_utilization or set --vllm_max_model_len 4096.", "vllm") == (
        "lower --gpu-memory-utilization or set --max-model-len 4096.")
    assert say("--num_generations 8 and --max_completion_length 1024", "openrlhf") == (
        "--n_samples_per_prompt 8 and --generate_max_len 1024")
    assert say("--gradient_accumulation_steps 4", "openrlhf") is None


def test_verl_gets_its_hydra_overrides_from_ppo_trainer_yaml():
    # names from verl/trainer/config/ppo_trainer.yaml (verl 0.3-0.4)
    assert say("--vllm_gpu_memory_utilization 0.4 or --vllm_max_model_len 4096.", "verl") == (
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.4 or actor_rollout_ref.rollout.max_model_len=4096.")
    assert say("Make NPROC_PER_NODE=4 equal to the GPUs", "verl") == "Make trainer.n_gpus_per_node=4 equal to the GPUs"
    assert say("--num_generations 8 and --max_completion_length 1024", "verl") == (
        "actor_rollout_ref.rollout.n=8 and data.max_response_length=1024")
    assert say("--gradient_accumulation_steps 4", "verl") is None  # no verl counterpart: the line goes
    assert say("ms-swift: `swift rollout` on other GPUs.", "verl") is None


def test_in_terms_keeps_swift_findings_and_drops_a_swift_command():
    from doctor.model import Finding, Severity
    f = Finding("GD1", "x", "other", Severity.error, "t", "NPROC_PER_NODE=2", fix=("--sleep_level 1",),
                command="NPROC_PER_NODE=2 swift rlhf --rlhf_type grpo")
    assert in_terms([f], "ms-swift") == [f]
    (g,) = in_terms([f], "trl")
    assert g.command == "" and g.fix == ("GRPOConfig(vllm_enable_sleep_mode=True)",)
    assert "NPROC_PER_NODE" not in g.message


def test_the_metric_rows_format_names_the_framework_when_nothing_else_does():
    from doctor.swift.framework import detect, row_format
    hf = ["{'loss': 0.0, 'grad_norm': 1.9, 'rewards/accuracy_reward': 0.0,", " 'reward': 0.0, 'reward_std': 0.0}"]
    swift = ["{'loss': 0.0, 'reward': 0.3, 'reward_std': 0.4, 'global_step/max_steps': '5/3766'}"]
    assert row_format(hf) == "trl" and row_format(swift) == "ms-swift"
    assert row_format(["{'loss': 1.2, 'grad_norm': 0.3}"]) is None  # no GRPO row: says nothing
    assert row_format(hf + swift) == "ms-swift"
    assert detect([], hf, {})[0::3] == ("trl", "log format")
    assert detect([], hf + ["[INFO:swift] Setting args.ddp_timeout"], {})[0] == "ms-swift"  # the log line decides
    # LLaMA-Factory's CLI module under its name before 0.6 (llmtuner/cli.py), run with python -m
    assert detect([], ["python -m llmtuner.cli train examples/x.yaml"], {})[0] == "llamafactory"
    # LLaMA-Factory's trainer_log.jsonl row (LogCallback: current_steps beside total_steps); a step count alone is not
    lf = '{"current_steps": 10, "total_steps": 1287, "loss": -0.1994, "reward": 0.13, "remaining_time": "22:34:33"}'
    assert row_format([lf]) == "llamafactory" and detect([], [lf], {})[0::3] == ("llamafactory", "log format")
    assert row_format(['{"current_steps": 10, "loss": 0.0, "grad_norm": 1.0}']) is None


def test_a_value_hole_is_always_filled_and_tuner_type_keeps_its_meaning():
    # a lever named without its value: its plain name, never a "{v}" left in the sentence
    assert say("Set --tuner_type explicitly so the run cannot change it.", None) == \
        "Set tuner_type explicitly so the run cannot change it."
    # trl has no --tuner_type: a full run passes no peft_config (it was "a peft LoraConfig" whatever the value)
    full = say("Use --tuner_type full for a full run.", "trl")
    assert "no peft_config" in full and "LoraConfig" not in full
    assert "LoraConfig" in say("Use --tuner_type lora.", "trl")
    for fw in (None, "trl", "unsloth", "verl", "openrlhf", "vllm"):
        for flag in ("--tuner_type", "--train_type", "--vllm_gpu_memory_utilization", "--deepspeed", "--num_generations"):
            out = say(f"Check {flag} first.", fw) or ""
            assert "{v}" not in out and "{tuner}" not in out, (fw, flag, out)


def test_attention_implementation_is_said_in_each_framework_own_terms():
    line = "Or avoid flash-attn: --attn_impl sdpa."
    assert say(line, None) == ('Or avoid flash-attn: the model\'s attention implementation sdpa (transformers: '
                               'attn_implementation="sdpa").')
    assert say(line, "trl") == 'Or avoid flash-attn: GRPOConfig(model_init_kwargs={"attn_implementation": "sdpa"}).'
    assert say(line, "verl") is None  # verl has no such override in its table: the line goes


def test_dtype_and_reward_functions_outside_ms_swift():
    line = "Train in bfloat16 (--torch_dtype bfloat16), not float16, which overflows easily."
    # an instruction, not the run's current setting (which the log may not show)
    assert say(line, None) == "Train in bfloat16 (load the model with torch_dtype=bfloat16), not float16, which overflows easily."
    assert 'model_init_kwargs={"torch_dtype": "bfloat16"}' in say(line, "trl")
    funcs = "check that --reward_funcs is set"
    assert say(funcs, None) == "check that reward_funcs is set"
    assert say(funcs, "trl") == "check that GRPOTrainer(reward_funcs=[...]) is set"
    assert say(funcs, "verl") is None  # verl has no such flag: its reward is custom_reward_function


def test_the_process_group_timeout_in_verls_terms():
    line = "Raise it only if a step legitimately takes longer: --ddp_timeout 3600 (seconds)."
    assert say(line, "verl") == "Raise it only if a step legitimately takes longer: actor_rollout_ref.nccl_timeout=3600 (seconds)."


@pytest.mark.parametrize("line, want", [
    # a pair written "A (trl) / B (ms-swift)", in either order, and an ms-swift entry after the trl one
    ("Or cut the prompts: max_prompt_length (trl) / max_length with truncation_strategy (ms-swift), or filter them.",
     "Or cut the prompts: max_prompt_length (trl), or filter them."),
    ("Or cut the prompts: max_length with truncation_strategy (ms-swift) / max_prompt_length (trl), or filter them.",
     "Or cut the prompts: max_prompt_length (trl), or filter them."),
    ("must be a multiple of num_generations (trl >= 0.17 also counts gradient_accumulation_steps; ms-swift >= 3.4 too).",
     "must be a multiple of num_generations (trl >= 0.17 also counts gradient_accumulation_steps)."),
])
def test_the_ms_swift_half_of_a_pair_leaves_a_trl_run(line, want):
    assert say(line, "trl") == want
    assert say(line, "ms-swift") == line        # an ms-swift run keeps both


def test_only_the_runs_own_spelling_of_a_labelled_alternative_is_kept():
    line = ("If it is host memory: less CPU offload (verl: actor_rollout_ref.actor.fsdp_config.param_offload=False; "
            "OpenRLHF: without --adam_offload), a smaller rollout batch.")
    assert say(line, "openrlhf") == "If it is host memory: less CPU offload (OpenRLHF: without --adam_offload), a smaller rollout batch."
    assert say("less CPU offload (verl actor_rollout_ref.actor.fsdp_config.param_offload=False), a smaller batch", "openrlhf") == (
        "less CPU offload, a smaller batch")                      # another framework's only spelling goes
    assert say(line, None) == "If it is host memory: less CPU offload, a smaller rollout batch."  # not told: neutral
    assert say(line, "torch") == say(line, None)                  # a runtime, not a trainer: the same
    # a runtime's spelling beside the frameworks' holds under every one of them
    mixed = "less offload (DeepSpeed offload_param; OpenRLHF --adam_offload; verl fsdp_config.param_offload), or more RAM"
    assert say(mixed, "openrlhf") == "less offload (DeepSpeed offload_param; OpenRLHF --adam_offload), or more RAM"
    assert say(mixed, "trl") == "less offload (DeepSpeed offload_param), or more RAM"
    cited = "Nothing to fix: judge by the reward, not by the loss (ms-swift FAQ: loss approx. 0 is normal in GRPO)."
    assert say(cited, "trl") == cited                             # a source cited, not a spelling
    assert say("set it (trl: beta=0.0; verl: actor_rollout_ref.actor.use_kl_loss=False)", "ms-swift") == (
        "set it (trl: beta=0.0)")                                 # ms-swift's trainers are trl's: its fields apply


def test_llama_factory_under_its_old_package_name_is_told():
    from doctor.swift.framework import detect
    line = "03/12/2024 11:24:33 - INFO - llmtuner.extras.callbacks - {'loss': 0.0000, 'learning_rate': 4.9999e-02}"
    assert detect([], [line], {})[0] == "llamafactory"


def test_a_vllm_only_run_drops_the_clauses_about_a_trainers_release():
    from doctor.swift.terms import say
    line = ("Upgrade vLLM to a release whose supported-models list has X, together with the trainer versions that "
            "support that vLLM (ms-swift's README table, trl's vllm extra); or check config.json's `architectures` "
            "against the model card.")
    assert say(line, "vllm") == ("Upgrade vLLM to a release whose supported-models list has X; or check config.json's "
                                 "`architectures` against the model card.")
    retry = ("Retry with the smallest change to the vLLM side: --enforce-eager (no CUDA graphs), vLLM LoRA off, one GPU "
             "per engine; then check that the vLLM version is one the trainer release supports.")
    assert say(retry, "vllm").endswith("one GPU per engine.")
    assert "trainer release" in say(retry, "trl")  # a trainer ran: the clause stays
