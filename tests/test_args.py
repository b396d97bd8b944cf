"""Argument, GPU-layout, dataset, dependency and load_args checks (GD401-GD457, GD701-GD702).

The fixes must carry this run's numbers and flags that exist in the version at hand; these tests feed
small command/log texts through the real engine and check the arithmetic and the version switches.
"""
from __future__ import annotations

from conftest import REAL_SWIFT
from conftest import run_text as _run_text

from doctor.checks.args.unknown_flag import flag_advice, split_argv
from doctor.registry import find_rule
from doctor.sources.argv import group_flags
from doctor.sources.swiftconfig import RunConfig

REAL = REAL_SWIFT
SP = "/usr/local/lib/python3.10/site-packages"


def run_text(log: str = "", command: str | None = None, rules: tuple[str, ...] | None = None):
    return _run_text(log, command=command, rules=rules)


def only(findings, rid):
    got = [f for f in findings if f.rule_id == rid]
    assert len(got) == 1, [f.rule_id for f in findings]
    return got[0]


def v4() -> RunConfig:
    r = RunConfig()
    r.major_hint = 4
    return r


# ---------------------------------------------------------------- GD401 remaining_argv

def test_split_and_group_remaining_argv():
    toks = split_argv("'--vllm_device', 'auto', '--num_infer_workers', '2', 'stray'")
    flags, stray = group_flags(toks, short=True)
    assert flags == [("vllm_device", ["auto"]), ("num_infer_workers", ["2", "stray"])]
    flags, stray = group_flags(split_argv("'accuracy', '--foo=1'"), short=True)
    assert stray == ["accuracy"] and flags == [("foo", ["1"])]
    # the one grouping serves both: the rule keeps -h-style flags, the command reader argparse's dest names
    assert group_flags(["-h", "--a-b", "1"], short=True) == ([("-h", []), ("a-b", ["1"])], [])
    assert group_flags(["-h", "--a-b", "1"], normalize=True) == ([("a_b", ["1"])], ["-h"])


def test_flag_advice_versions_and_typos():
    r = v4()
    assert "`--tuner_type full`" in flag_advice("train_type", ["full"], r)
    assert "--vllm_gpu_memory_utilization 0.5" in flag_advice("gpu_memory_utilization", ["0.5"], r)
    assert "did you mean --num_generations" in flag_advice("num_generation", ["8"], r)
    r3 = RunConfig()
    r3.versions["ms-swift"] = "3.9.2"
    # a 4.x flag on 3.x: the 3.x name, not an upgrade hint
    assert "--train_type full" in flag_advice("tuner_type", ["full"], r3)
    # exists in 4.6 but this 3.9 rejected it
    assert "pip install -U 'ms-swift>=3.12'" in flag_advice("num_generations_eval", ["4"], r3)
    assert "but not of the version installed here (ms-swift 3.9.2)" in flag_advice("vllm_enable_expert_parallel", [], r3)


def test_remaining_argv_real_log_names_tuner_type():
    f = only(run_text((REAL / "legacy_train_type_flag" / "log.txt").read_text()), "GD401")
    assert "--train_type" in f.message and "ms-swift 4.x" in f.message
    assert f.fix == ("Replace `--train_type full` with `--tuner_type full` (ms-swift 4.0 renamed --train_type to "
                     "--tuner_type; 4.0.x still accepted the old name with a deprecation warning, 4.1 removed it).",)


def test_source_code_line_is_not_evidence():
    # the traceback prints the raising source line, which holds the same words as the message
    log = ("  File \"x/swift/arguments/rlhf_args.py\", line 447, in _init_rollout\n"
           "    raise ValueError('vllm_mode is required when use_vllm is true')\n"
           "ValueError: vllm_mode is required when use_vllm is true\n")
    f = only(run_text(log, rules=("GD403",)), "GD403")
    assert [e.line for e in f.evidence] == [3]


# ---------------------------------------------------------------- GD402 argparse

def test_argparse_choices_py312_format_without_quotes():
    f = only(run_text("rlhf.py: error: argument --vllm_mode/--vllm-mode: invalid choice: 'x' "
                      "(choose from server, colocate)\n", rules=("GD402",)), "GD402")
    assert f.fix[0] == "Use --vllm_mode server or colocate (the values are case-sensitive)."


# ---------------------------------------------------------------- GD408 / GD410 / GD421 arithmetic

def test_ngpu_assert_more_procs_than_gpus():
    f = only(run_text("AssertionError: n_gpu: 2, local_world_size: 4\n", rules=("GD408",)), "GD408")
    assert "NPROC_PER_NODE is 4 but only 2 GPU(s)" in f.message
    assert f.fix[0].startswith("NPROC_PER_NODE=2 ") and "CUDA_VISIBLE_DEVICES=0,1,2,3" in f.fix[0]


def test_ngpu_assert_not_multiple():
    f = only(run_text("AssertionError: n_gpu: 8, local_world_size: 3\n", rules=("GD408",)), "GD408")
    assert "8 is not a multiple of 3" in f.message
    assert "(2, 4, 8)" in f.fix[1]


def test_tp_divisors():
    f = only(run_text("ValueError: vllm_tensor_parallel_size (4) must divide world size (6) evenly.\n",
                      rules=("GD410",)), "GD410")
    assert "6 % 4 = 2" in f.message
    assert f.fix[0].startswith("--vllm_tensor_parallel_size 1 or 2 or 3 or 6")
    assert "= 8)" in f.fix[1]


def test_deepspeed_device_map_numbers():
    f = only(run_text("ValueError: DeepSpeed is not compatible with `device_map`. n_gpu: 8, local_world_size: 2.\n",
                      rules=("GD421", "GD408")), "GD421")
    assert "over 4 GPUs" in f.message and f.fix[0].startswith("NPROC_PER_NODE=8")


# ---------------------------------------------------------------- GD420 GPU layout from the config
# (more layouts, and GD414's comment inside a command, are cases in rules/args/cases.toml)

CMD = """CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \\
NPROC_PER_NODE={n} \\
swift rlhf --rlhf_type grpo --model m --per_device_train_batch_size 1 --gradient_accumulation_steps 8 \\
  --num_generations 8 {extra}"""


def test_idle_gpus_seed02_numbers():
    f = only(run_text(command=CMD.format(n=3, extra="")), "GD420")
    assert "only 3 are used" in f.message and "5 GPU(s) per node sit idle" in f.message
    assert f.fix[0].startswith("NPROC_PER_NODE=8") and "CUDA_VISIBLE_DEVICES=0,1,2 " in f.fix[1]
    assert "8 x per_device_train_batch_size 1 x gradient_accumulation_steps 8 = 64" in f.fix[2]


def test_single_process_many_gpus():
    f = only(run_text(command="CUDA_VISIBLE_DEVICES=0,1,2,3 swift rlhf --rlhf_type grpo --model m"), "GD420")
    assert "NPROC_PER_NODE is not set" in f.message and f.fix[0].startswith("NPROC_PER_NODE=4 ")


def test_openrlhf_ray_roles_count_toward_the_visible_gpus():
    from doctor.sources.launchers import openrlhf_gpus
    # actor 2 + reference 1 + one vLLM engine of TP 1 = 4: every visible GPU has a role
    base = ("CUDA_VISIBLE_DEVICES=0,1,2,3 python3 -m openrlhf.cli.train_ppo_ray --ref_num_nodes 1 "
            "--ref_num_gpus_per_node 1 --actor_num_nodes 1 --actor_num_gpus_per_node 2 --vllm_num_engines 1 "
            "--vllm_tensor_parallel_size 1 --pretrain m")
    assert not [f for f in run_text(command=base) if f.rule_id == "GD420"]
    assert openrlhf_gpus({"actor_num_gpus_per_node": "2", "ref_num_gpus_per_node": "1", "vllm_num_engines": "1"}) == 4
    # roles sharing GPUs: the count cannot be told
    assert openrlhf_gpus({"actor_num_gpus_per_node": "2", "colocate_all_models": True}) is None
    # a critic counts only when the job runs one
    assert openrlhf_gpus({"actor_num_gpus_per_node": "2", "critic_num_gpus_per_node": "2"}) == 2
    assert openrlhf_gpus({"actor_num_gpus_per_node": "2", "critic_num_gpus_per_node": "2",
                          "critic_pretrain": "m"}) == 4


def test_tp_warning_from_config_and_silence_after_the_error():
    cmd = ("NPROC_PER_NODE=6 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 swift rlhf --rlhf_type grpo --model m --use_vllm true "
           "--vllm_mode colocate --vllm_tensor_parallel_size 4")
    f = only(run_text(command=cmd), "GD420")
    assert "does not divide the world size 6" in f.message
    found = run_text("ValueError: vllm_tensor_parallel_size (4) must divide world size (6) evenly.\n", command=cmd)
    assert not [x for x in found if x.rule_id == "GD420"] and [x for x in found if x.rule_id == "GD410"]


# ---------------------------------------------------------------- GD432 length: error vs warning

def test_max_length_rows_skipped_in_a_run_that_trains_is_a_warning():
    log = ("swift.template.base.MaxLengthError: Current length of row(3000) is larger than the max_length(2048).\n"
           "[INFO:swift] End time of running main: 2026-01-01 00:00:00\n")
    f = only(run_text(log, command="swift rlhf --rlhf_type grpo --max_completion_length 1024 --max_length 2048",
                      rules=("GD432",)), "GD432")
    assert f.severity.name == "warning"
    assert "--max_length 3072" in f.fix[0] and "3072 + 1024 = 4096" in f.fix[2]


def test_max_length_resample_giving_up_is_an_error():
    # ms-swift 4.6's GRPO resamples rows that fail to encode and gives up with this RuntimeError
    # (swift/rl_core/resample.py): every row longer than --max_length with --truncation_strategy delete
    log = ("[INFO:swift] Encoding failed for one sample; will resample. Current length of row(35) is larger than the "
           "max_length(4).\n"
           "RuntimeError: resample: only collected 0/4 valid samples after 44 attempts (44 failed). Increase "
           "`max_length` or adjust `truncation_strategy`.\n")
    found = run_text(log, command="swift rlhf --rlhf_type grpo --max_length 4 --truncation_strategy delete")
    assert found[0].rule_id == "GD432" and found[0].severity.name == "error", [(f.rule_id, f.severity) for f in found]
    assert "resample: only collected 0/4" in " ".join(e.text for e in found[0].evidence)


# ---------------------------------------------------------------- deps

def test_swift_3x_module_on_4x():
    log = (f'  File "{SP}/swift/pipelines/base.py", line 18, in __init__\n'
           "ModuleNotFoundError: No module named 'swift.llm'\n")
    f = only(run_text(log, rules=("GD450",)), "GD450")
    assert "ms-swift 3.x module" in f.message and "swift.plugin (ORM, orms) -> swift.rewards" in f.fix[0]


def test_trl_require_version_keeps_the_readme_cap():
    f = only(run_text("ImportError: trl>=0.20 is required for a normal functioning of this module, but found "
                      "trl==0.19.1.\n", rules=("GD452",)), "GD452")
    assert f.fix[0] == "pip install 'trl>=0.20,<0.29'"
    assert f.message.startswith("trl==0.19.1 is installed, but trl>=0.20 is required.")


# ---------------------------------------------------------------- GD701 load_args
# (the runs it must not flag: cases in rules/checkpoint/cases.toml)

DUMP = "[INFO:swift] args: RLHFArguments(\n{kv}\n)\n"


def test_forced_lora_names_the_args_json_and_version_default():
    log = ("[INFO:swift] Successfully loaded /ckpt/qwen-sft/checkpoint-500-merged/args.json.\n"
           "[INFO:swift] rank: -1, local_rank: -1, world_size: 1, local_world_size: 1\n"
           + DUMP.format(kv="load_args=True,\ntrain_type=lora,") +
           "[INFO:swift] swift.__version__: 3.1.1\n"
           "[INFO:swift] model_parameter_info: PeftModelForCausalLM: 7000.1M Params (20.1M Trainable [0.2871%]), "
           "0.0000M Buffers.\n")
    f = only(run_text(log, command="swift rlhf --rlhf_type grpo --model /ckpt/qwen-sft/checkpoint-500-merged "
                                   "--train_type full", rules=("GD701",)), "GD701")
    assert "--train_type full" in f.message and "/ckpt/qwen-sft/checkpoint-500-merged/args.json" in f.message
    assert "swift export --merge_lora" in f.message
    assert "3.0-3.1.x training loads args.json by default" in f.fix[0]


def test_real_merged_load_args_false_is_not_flagged():
    log = (REAL / "full_from_merged_load_args_false" / "log.txt").read_text()
    cmd = (REAL / "full_from_merged_load_args_false" / "command.txt").read_text()
    assert not run_text(log, command=cmd, rules=("GD701",))


def test_catalog_rules_of_this_area_exist():
    for rid in ("GD401", "GD414", "GD420", "GD436", "GD455", "GD701", "GD702"):
        assert find_rule(rid) is not None


def test_hfargumentparser_unused_args_in_a_trl_script():
    f = only(run_text("ValueError: Some specified arguments are not used by the HfArgumentParser: "
                      "['--vllm_device', 'cuda:7', '--num_generation', '8']\n", rules=("GD401",)), "GD401")
    # the flags as typed (in code spans: no framework's term is put in their place)
    assert f.message.startswith("The argument parser does not know `--vllm_device`, `--num_generation`")
    assert "trl vllm-serve" in f.fix[0] and "did you mean --num_generations" in f.fix[1]
    assert "ms-swift 3.6" not in " ".join(f.fix)


def test_the_parser_failure_names_its_own_kind_and_check():
    # dev11 1317 (OpenRLHF's argparse: unknown flags, not a refused value), 1313 (a CRLF script under HfArgumentParser)
    f = only(run_text("train_ppo_ray.py: error: unrecognized arguments: --logging_path /x.jsonl --intrinsic_reward riv\n"),
             "GD402")
    assert f.title == "The argument parser does not know these flags"
    assert "unrecognized arguments" in f.verify and "invalid choice" not in f.verify
    f = only(run_text("ValueError: Some specified arguments are not used by the HfArgumentParser: ['--lora_rnk', '8']\n"),
             "GD401")
    assert "HfArgumentParser` line" in f.verify and "RLHFArguments" not in f.verify
    assert "GRPOConfig, ModelConfig" not in f.message


def test_a_launch_echoed_over_continuation_lines_is_read_whole_and_vllm_on_a_training_gpu_is_named():
    # open-r1 (trl 0.14-0.15): accelerate with one process on two visible GPUs, vLLM placed on the training GPU
    log = ("export CUDA_VISIBLE_DEVICES=4,5\n"
           "accelerate launch --config_file configs/zero2.yaml --num_processes=1 src/open_r1/grpo.py \\\n"
           "    --output_dir out \\\n    --use_vllm \\\n    --vllm_device cuda:0 \\\n"
           "    --vllm_gpu_memory_utilization 0.3\n")
    f = only(run_text(log), "GD420")
    assert "vLLM is placed on cuda:0" in f.message and f.fix[0].startswith("--vllm_device cuda:1")
    # vLLM on the spare GPU: every visible GPU has its process
    assert not [x for x in run_text(log.replace("cuda:0", "cuda:1")) if x.rule_id == "GD420"]
