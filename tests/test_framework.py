"""The report names the framework that ran (issue 15 point 5): detected from frames, launch command and log format,
and says how it knows (``framework_source``); 'assumed' when nothing points anywhere.

Cases are real logs in fixtures/devlogs (provenance in its README); each expected framework was checked by hand
against the log or command.txt named in the comment.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.swift.framework import detect, is_library_path

DEVLOGS = Path(__file__).resolve().parent.parent / "fixtures" / "devlogs"


def _case(prefix: str) -> str:
    return str(next(DEVLOGS.glob(prefix + "-*")))


@pytest.mark.parametrize("case,framework,source", [
    # command.txt: `swift rlhf --rlhf_type "grpo" ...`
    ("001", "ms-swift", None),
    # command.txt: `accelerate launch ... scripts/run_r1_grpo.py --config receipes/grpo-qwen-2.5-3b...yaml`
    ("008", "trl", "text"),
    # log line 23: `TypeError: _unsloth_get_batch_samples() takes 3 positional arguments but 4 were given`
    ("049", "unsloth", "text"),
    # 051: the Colab-rendered frame `[/usr/.../unsloth_zoo/...py](url) in <module>` is parsed (sources/traceback.py)
    ("051", "unsloth", "frames"),
    # frames in /root/rl-swarm/hivemind_exp/trainer/hivemind_grpo_trainer.py (a trl GRPOTrainer subclass)
    ("033", "trl", "frames"),
    # frames in .../envs/openr1/.../accelerate/commands/launch.py: an accelerate launch, no swift anywhere
    ("058", "trl", "frames"),
])
def test_framework_of_real_logs(case, framework, source):
    run = analyze([_case(case)]).run
    assert run["framework"] == framework
    if source:
        assert run["framework_source"] == source


def test_no_trainer_told_names_the_runtime_and_nothing_at_all_is_unknown(tmp_path):
    # 065: vLLM frames only, under a conda env that happens to be called "trl" (envs/trl/lib/...): no trainer is told,
    # the runtime that failed is vLLM (was: ms-swift, "assumed")
    run = analyze([_case("065")]).run
    assert run["framework"] == "vllm" and run["framework_source"] == "runtime"
    p = tmp_path / "words.txt"
    p.write_text("my training crashed with an error\nValueError: bad value\n")
    run = analyze([str(p)]).run
    assert run["framework"] is None and run["framework_source"] == "unknown"


def test_a_plain_transformers_trainer_job_names_transformers():
    # a Trainer script's stack: its training loop's own file, then DeepSpeed and torch under it (transformers/
    # trainer.py calls deepspeed's engine): the Trainer ran the job, not DeepSpeed
    stack = ["/home/u/train_sft.py", "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py",
             "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py",
             "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py"]
    assert detect(stack, [], {})[0::3] == ("transformers", "runtime")
    # no frames: Trainer.train's banner (transformers/trainer.py _inner_training_loop)
    assert detect([], ["***** Running training *****", "  Num examples = 1,000"], {})[0] == "transformers"
    # its logger's explicit format from the Trainer's files, and Trainer.log's rows of a run that samples nothing
    assert detect([], ["[INFO|trainer.py:2243] 2024-06-11 10:28:31,457 >> Num examples = 1,000"], {})[0] == "transformers"
    assert detect([], ["{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}"], {})[0] == \
        "transformers"
    # ...but a GRPO row is trl's, and a row with ms-swift's own keys ms-swift's
    assert detect([], ["{'loss': 0.0, 'reward': 0.5, 'reward_std': 0.1, 'epoch': 0.1}"], {})[0] == "trl"
    assert detect([], ["{'loss': 0.1, 'epoch': 0.1, 'global_step/max_steps': '1/10', 'memory(GiB)': 3.2}"], {})[0] == \
        "ms-swift"
    # a model's own file is not the Trainer: the runtime under it decides
    assert detect(["/x/site-packages/transformers/models/llama/modeling_llama.py",
                   "/x/site-packages/torch/nn/functional.py"], [], {})[0] == "torch"
    # trl's trainer subclasses Trainer: trl wins
    assert detect(stack[:2] + ["/x/site-packages/trl/trainer/sft_trainer.py"], [], {})[0] == "trl"


def test_open_r1_recipe_is_trl_with_a_recipe():
    name, _, recipe, source = detect(["/home/u/open-r1/src/open_r1/grpo.py",
                                      "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py"], [], {})
    assert (name, recipe, source) == ("trl", "open-r1", "frames")


def test_a_wrapper_over_trl_wins_and_versions_follow_the_framework():
    swift_frames = ["/opt/conda/lib/python3.10/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py",
                    "/opt/conda/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py"]
    assert detect(swift_frames, [], {"ms-swift": "3.8.1", "trl": "0.20.0"})[:2] == ("ms-swift", "3.8.1")
    trl_frames = swift_frames[1:]
    assert detect(trl_frames, [], {"ms-swift": "3.8.1", "trl": "0.20.0"})[:2] == ("trl", "0.20.0")
    unsloth = detect(trl_frames, ["==((====))==  Unsloth 2025.3.19: Fast Qwen2 patching."], {})
    assert unsloth[:2] == ("unsloth", "2025.3.19")


def test_env_named_trl_is_not_trl_and_user_frames_are_not_library():
    # not trl: the runtime that ran, vLLM (no trainer is told)
    assert detect(["/home/k/mamba/envs/trl/lib/python3.11/site-packages/vllm/v1/engine/core.py"], [], {})[:1] == ("vllm",)
    assert not is_library_path("/root/work/my_grpo/train.py")
    assert is_library_path("/usr/local/lib/python3.10/dist-packages/trl/trainer/grpo_trainer.py")
    assert is_library_path("/home/u/ms-swift/swift/trainers/rlhf_trainer/grpo_trainer.py")


def test_a_library_source_checkout_is_not_your_code():
    # fixtures/logs/edge-vllm-pydantic-model-config: trl run from a source checkout, /workspace/trl/trl/scripts/...
    assert is_library_path("/workspace/trl/trl/scripts/vllm_serve.py")
    assert is_library_path("/root/ms-swift/swift/llm/train/rlhf.py")
    assert is_library_path("/home/u/vllm/vllm/v1/engine/core.py")
    assert not is_library_path("/data/me/plugin.py")


def test_unrecognised_failure_points_at_the_frameworks_issues(tmp_path):
    # a trl GRPOTrainer stack (paths as trl 0.19 prints them) ending in an error no rule claims
    log = tmp_path / "t.log"
    log.write_text('Traceback (most recent call last):\n'
                   '  File "/home/me/train_grpo.py", line 40, in <module>\n'
                   '    trainer.train()\n'
                   '  File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 900, in '
                   '_generate_and_score_completions\n'
                   '    x = frob(y)\n'
                   'ZzqError: something nobody has a rule for\n', encoding="utf-8")
    rep = analyze([str(log)])
    gd999 = [f for f in rep.findings if f.rule_id == "GD999"]
    assert gd999 and any("Search the trl issues" in x for x in gd999[0].fix)
    assert any("/home/me/train_grpo.py:40" in x for x in gd999[0].fix)
    assert rep.run["framework"] == "trl"


@pytest.mark.parametrize("paths,texts,want", [
    # lines of real pastes (public threads): verl's Ray actor prefix and console row, LLaMA-Factory and axolotl
    ((), ["(main_task pid=129170) step:4 - batch/solve_none:128.000 - critic/score/mean:0.000"], "verl"),
    ((), ["(TaskRunner pid=2279) Training Progress:   0%|          | 0/125 [00:00<?, ?it/s]"], "verl"),
    (("/opt/conda/envs/lf/lib/python3.11/site-packages/llamafactory/train/tuner.py",), [], "llamafactory"),
    ((), ["[2023-09-17 13:15:13,336] [INFO] [axolotl.utils.dataloader._len_est:264] [PID:11100] packing"], "axolotl"),
    # verl's metric keys without its Ray prefix (fixtures/devlogs2/128, verl/trainer/ppo/metric_utils.py), and a frame
    # in verl's protocol module (fixtures/devlogs2/107: only the frame line was pasted)
    ((), ["timing_s/adv:10751.941"], "verl"),
    ((), ["step:12 - actor/pg_loss:0.013 - actor/pg_clipfrac:0.002"], "verl"),
    (("/verl/protocol.py",), [], "verl"),
    # EasyR1 keeps verl's package: its checkout names the fork
    (("/data/EasyR1/verl/utils/dataset.py",), [], "easyr1"),
    # a trainer's own timing key of another name is no verl sign
    ((), ["{'timing/gen': 1.5, 'reward': 0.2}"], None),
    # a verl frame under trl's: the wrapper wins
    (("/x/site-packages/trl/trainer/grpo_trainer.py", "/x/verl/trainer/ppo/ray_trainer.py"), [], "verl"),
    # a notebook cell's source line importing from trl, and CPython's argument error naming one of trl's trainers
    ((), ["      1 from trl import SFTTrainer"], "trl"),
    ((), ["TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'dataset_text_field'"], "trl"),
    ((), ["TypeError: CustomDPOTrainer.__init__() got an unexpected keyword argument 'x'"], None),
    # LLaMA-Factory's entry script in DeepSpeed's launcher argv (its checkout's name), src/train_bash.py before 0.6
    ((), ["[ERROR] [launch.py:321:sigkill_handler] ['/py/bin/python', '-u', '../LLaMA-Factory/src/train_bash.py', "
          "'--stage', 'ppo'] exits with return code = 1"], "llamafactory"),
    ((), ["deepspeed --num_gpus 8 src/train_bash.py --stage sft --do_train"], "llamafactory"),
    # vLLM's logger format (0.5's, without the bracket; fixtures/devlogs7/725) and an import of vllm in a pasted cell
    ((), ["WARNING 06-13 11:42:20 _custom_ops.py:11] Failed to import from vllm._C with ImportError"], "vllm"),
    ((), [" import vllm"], "vllm"),
    ((), ["INFO 2024-06-13 11:42:20 starting"], None),
])
def test_more_frameworks_from_frames_and_lines(paths, texts, want):
    assert detect(list(paths), texts, {}, False)[0] == want


def test_a_frameless_message_only_vllm_raises_names_vllm():
    """fixtures/devlogs7/729: vLLM's KV-cache refusal alone, raised by several vLLM functions (one package)."""
    from doctor.signals import ExceptionInfo, Where
    from doctor.sources.swiftconfig import RunConfig
    from doctor.swift.framework import of_run
    msg = ("The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache "
           "(3664). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.")
    exc = ExceptionInfo("ValueError", msg, (), Where("log.txt", 1), None, 1, f"ValueError: {msg}")
    assert of_run(RunConfig(), [exc])[0::3] == ("vllm", "runtime")


def test_runtime_told_by_its_own_files_and_dump_lines():
    dump = ["INFO 02-19 12:14:43 model_runner_base.py:120] Writing input of failed execution to "
            "/tmp/err_execute_model_input_20250219-121443.pkl..."]
    assert detect([], dump, {})[0] == "vllm"
    listing = ["90G\tbf16_zero_pp_rank_0_mp_rank_00_optim_states.pt", "15G\tmp_rank_00_model_states.pt"]
    assert detect([], listing, {})[0] == "deepspeed"
    assert detect([], ["15G\tmodel.safetensors"], {})[0] is None


def test_deepspeeds_logger_lines_name_the_deepspeed_runtime():
    # deepspeed/utils/logging.py's format with the file of one of DeepSpeed's own modules (huggingface/accelerate#2468,
    # dev54 5703: the launcher's sigkill_handler); the same format with a script's own file names nothing
    line = "trainer-2: [2024-02-24 04:37:50,964] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18507"
    assert detect([], [line], {})[0] == "deepspeed"
    assert detect([], ["[2024-02-24 04:37:50,964] [INFO] [real_accelerator.py:191:get_accelerator] Setting "
                       "ds_accelerator to cuda (auto detect)"], {})[0] == "deepspeed"
    assert detect([], ["[2024-02-24 04:37:50,964] [INFO] [train_dpo.py:88:main] step 1"], {})[0] is None


def test_ms_swift_reward_lookup_wording_names_ms_swift():
    assert detect([], ["reward_function my_format is not implemented in swift.llm.plugin"], {})[0] == "ms-swift"


def test_a_class_named_grpotrainer_in_a_code_line_is_not_trl():
    # Jaykef/ai-algorithms#4: a notebook's own from-scratch GRPOTrainer, called in a cell's source line (VS Code's
    # rendering); nothing else in the log names a framework
    line = ("    [591](vscode-notebook-cell:?execution_count=6&line=591) trainer = GRPOTrainer(model, tokenizer, "
            "reward_functions, config, dataset, processor)")
    assert detect([], [line], {})[0] is None
    assert detect([], ["    trainer = GRPOTrainer("], {})[0] is None
    # trl's class where the name can only be trl's: imported from trl, its module path, and a method of it in
    # CPython's argument-error words (huggingface/trl#5175, trl's own CI: a pytest summary line)
    assert detect([], ["from trl import GRPOTrainer"], {})[0] == "trl"
    assert detect([], ["from trl.trainer.grpo_trainer import GRPOTrainer"], {})[0] == "trl"
    assert detect([], ["<trl.trainer.grpo_trainer.GRPOTrainer object at 0x7f3c2c1d5e50>"], {})[0] == "trl"
    ci = ("  FAILED tests/test_grpo_trainer.py::TestGRPOTrainer::test_training_vlm_beta_non_zero[trl-internal-testing/"
          "tiny-Qwen2_5_VLForConditionalGeneration] - TypeError: GRPOTrainer._get_per_token_logps_and_entropies() got "
          "an unexpected keyword argument 'mm_token_type_ids'")
    assert detect([], [ci], {})[0] == "trl"


def test_openrlhf_ray_actor_prefixes_name_openrlhf():
    # OpenRLHF/OpenRLHF#1050: the actor's line prefix is the only sign of OpenRLHF in the paste (0.1-0.8.2 names it
    # ActorModelRayActor; openrlhf/trainer/ray/ppo_actor.py)
    assert detect([], ["(ActorModelRayActor pid=234795) "], {})[0:4:3] == ("openrlhf", "text")
    # the names since 0.8.3 (PolicyModelActor) and the rollout actor's (RolloutRayActor since 0.10.2)
    assert detect([], ["(PolicyModelActor pid=1) x"], {})[0] == "openrlhf"
    assert detect([], ["(RolloutRayActor pid=1) x"], {})[0] == "openrlhf"


def test_vllm_ray_workers_name_vllm_and_share_one_list_of_vllm_processes():
    from doctor.checks.hang._progress import VLLM_ORIGINS
    from doctor.sources.logtext import VLLM_PROCESSES

    # vllm-project/vllm#17242 and vllm-project/vllm#6042: vLLM's Ray workers (vllm/executor/ray_utils.py
    # RayWorkerWrapper), with and without Ray's ip; no trainer named: vLLM is the runtime, before torch's NCCL lines
    assert detect([], ["(RayWorkerWrapper pid=376235, ip=10.10.10.61) *** SIGSEGV received at time=1745722347 on cpu "
                       "48 ***"], {})[0::3] == ("vllm", "runtime")
    nccl = ("(RayWorkerWrapper pid=489968) [rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, "
            "we are taking the entire process down.")
    assert detect([], [nccl], {})[0] == "vllm"
    # the hang and native-crash rules read the same process names
    assert set(VLLM_PROCESSES) <= set(VLLM_ORIGINS) and "RayWorkerWrapper" in VLLM_PROCESSES


def test_llama_factory_by_its_python_api_and_its_old_launch_script():
    assert detect([], ["from llmtuner import export_model"], {})[0] == "llamafactory"
    assert detect([], ["accelerate launch --config_file ./accelerate_config.yaml train_bash.py \\"], {})[0] == \
        "llamafactory"
    assert detect([], ["python train.py --stage sft"], {})[0] != "llamafactory"


def test_a_warning_printed_from_trls_trainer_code_names_trl():
    line = ("/home/u/envs/x/lib/python3.10/site-packages/trl/trainer/ppo_trainer.py:1194: UserWarning: KL divergence is "
            "starting to become negative: -5.27")
    assert detect([], [line], {})[0] == "trl"


def test_text_marks_words_test_changes_no_answer():
    """framework._CMD's words are tested before each pattern: over every line of the fixtures and lines made to slip past
    a words test (case-blind letters, the words cut), the frameworks a line names are those of the patterns alone."""
    from pathlib import Path

    from doctor.swift import framework as fw

    def plain(t: str) -> list[str]:
        return [name for name, _, _, rx in fw._CMD if rx.search(t)]

    lines = ["LLaMA-Factory/src/train.py", "LLAMAFACTORY-CLI train x.yaml", "python src/TRAIN_BASH.PY --stage sft",
             "ACCELERATE LAUNCH run_GRPO.py", "accelerate  launch x.py --grpo", "from  trl.trainer import GRPOConfig",
             "GRPOTrainer._get_per_token_logps() got an unexpected keyword argument 'x'", "rl-swarm/ hivemind_exp",
             "genrl_swarm", "(TaskRunner pid=12)", "step:1 - critic/score/mean:0.5", "x --vllm_num_engines 2",
             "\u0130mport llmtuner", "\u017frc/train_ba\u017fh.py", "\u212aelvin llama", "accelerate launch grpo"]
    for path in sorted(Path(__file__).parent.parent.joinpath("fixtures").rglob("*")):
        if path.is_file() and path.suffix in (".log", ".txt", ".sh", ".yaml", ".md") and path.stat().st_size < 2_000_000:
            lines += path.read_text("utf-8", "replace").splitlines()
    for t in lines:
        assert fw._cmd_marks(t) == plain(t), t


def test_a_script_that_imports_trl_a_markdown_bold_unsloth_version_and_verl_entry_points_name_their_framework():
    # dev15 1807 (a Python command.txt: `import trl`, `trl.SFTTrainer(`), 1808 (an issue body: **Unsloth 2025.8.10, ...),
    # 1824 (verl's main_generation.py)
    assert detect([], ["import trl", "trainer = trl.SFTTrainer("], {})[0] == "trl"
    assert detect([], ["5. Which Unsloth version? **Unsloth 2025.8.10, Transformers: 4.56.0**"], {})[0] == "unsloth"
    assert detect([], ["python3 -m verl.trainer.main_generation trainer.nnodes=1"], {})[0] == "verl"
    assert detect([], ["When I run main_generation.py"], {})[0] == "verl"
    # a GRPOTrainer without trl's module may be a project's own (ms-swift and the recipes define theirs); trl's other
    # trainers' names are its, read last, when nothing else tells the framework
    assert detect([], ["trainer = GRPOTrainer(model)"], {})[0] != "trl"
    assert detect([], ["trainer = SFTTrainer(model)"], {})[::3] == ("trl", "named")
    assert detect([], ["trainer = SFTTrainer(model)", "swift sft --model Qwen/Qwen2.5-7B"], {})[0] == "ms-swift"


def test_vllms_async_engine_record_names_the_vllm_runtime():
    assert detect([], ["2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] Engine loop died"], {})[0::3] == \
        ("vllm", "runtime")


def test_a_pip_list_row_or_a_sentence_names_unsloth_and_a_verl_path_in_prose_names_verl():
    from doctor.swift.framework import from_text
    # fixtures/devlogs17 2105 (pip list in an unsloth issue), 2104 (a sentence), 2130 (a path inside Chinese prose)
    assert from_text(["unsloth                           2026.2.1"])[0] == "unsloth"
    assert from_text(["vLLM 0.8.0 started giving me errors when trying to run GRPO in Unsloth."])[0] == "unsloth"
    assert from_text(["当我想尝试用PPO训练的时候，会遇到来自verl/trainer/ppo/ray_trainer.py第479行的AssertionError"])[0] == "verl"
    # a sloth is not unsloth, and a word ending in verl is not verl
    assert from_text(["the unsloth_env folder", "overl/trainer/x.py"])[0] is None


def test_framework_told_by_more_of_its_own_words():
    # ms-swift's other subcommands, LLaMA-Factory's env report, verl's overrides as Hydra quotes them
    assert detect([], ["swift infer 时，使用vllm报错"], {})[0] == "ms-swift"
    assert detect([], ["- `llamafactory` version: 0.9.4.dev0"], {})[0] == "llamafactory"
    assert detect([], ["Error executing job with overrides: ['data.train_files=/d/train.parquet', "
                       "'actor_rollout_ref.actor.optim.lr=1e-6']"], {})[0] == "verl"
    # Apple's Swift toolchain is not ms-swift
    assert detect([], ["swift build -c release"], {})[0] is None


def test_text_marks_skip_a_text_without_any_word_exactly():
    """_text_marks answers a text holding none of its tests' words from one search (_ANY_WORD, _ANY_BLIND_WORD):
    the same marks as every test run in full, over each line of the development logs and each word alone."""
    from doctor.swift import framework as fw

    def in_full(t: str) -> tuple[frozenset[str], bool]:
        found = {"ms-swift"} if any(s in t for s in fw._SWIFT_LOG) else set()
        if "nsloth" in t and fw._UNSLOTH_TEXT.search(t):
            found.add("unsloth")
        found.update(fw._cmd_marks(t))
        return frozenset(found), any(s in t for s in fw._OPEN_R1)

    words = [w for _, ws, _, _ in fw._CMD for w in ws] + list(fw._SWIFT_LOG) + list(fw._OPEN_R1) + ["nsloth"]
    texts = [f"x {w} y" for w in words] + [f"X {w.upper()} Y" for w in words] + ["swift rlhf --rlhf_type grpo",
                                                                                    "LLaMA-Factory/src/train.py"]
    for log in sorted(DEVLOGS.parent.glob("devlogs*/*/log.txt")):
        texts += log.read_text(encoding="utf-8", errors="replace").splitlines()
    marked = 0
    for t in texts:
        want = in_full(t)
        assert fw._text_marks.__wrapped__(t) == want, t   # type: ignore[attr-defined]
        marked += bool(want[0] or want[1])
    assert marked > 100


def test_a_framework_named_in_words_is_the_last_reading_before_none():
    from doctor.swift.framework import detect, named_in
    # a title and an environment list that name LLaMA-Factory, with only DeepSpeed's runtime otherwise
    texts = ["[Bug] LLaMA-Factory DPO on 8 GPUs hangs", "deepspeed==0.16.4"]
    assert detect([], texts, {}) [::3] == ("llamafactory", "named")
    # the wrapper before the library it wraps; a model repository of an organisation is no framework
    assert named_in(["Unsloth GRPO with trl 0.15"]) == "unsloth"
    assert named_in(["model: unsloth/Llama-3.3-70B-Instruct-bnb-4bit"]) is None
    assert named_in(["trainer = GRPOTrainer(model=model)"]) is None   # a project's own class may bear the name
    assert named_in(["Environment: trl 0.19.1, transformers 4.53"]) == "trl"
    assert named_in(["loss is nan after 20 steps"]) is None
    # trl's other trainers by their class names (fixtures/devlogs57/6001, devlogs32/3521): the name of a wrapper that
    # reuses them comes first, and a longer class name that ends in one is not it
    assert named_in(["A bug in `__init__` method of class `DPOTrainer`?"]) == "trl"
    assert named_in(["PPOTrainer issue: objective/kl increases a lot"]) == "trl"
    assert named_in(["OpenRLHF PPOTrainer hangs at the first step"]) == "openrlhf"
    assert named_in(["class CustomDPOTrainer(Trainer): ..."]) is None
    assert named_in(["the dpotrainer of my own project"]) is None
    # transformers' own Trainer in a script's lines (fixtures/devlogs37/4925, devlogs59/6605)
    assert named_in(["from transformers import TrainingArguments"]) == "transformers"
    assert named_in(["> training_args = TrainingArguments("]) == "transformers"
    assert named_in(["from transformers import AutoModel"]) is None
    assert named_in(["LLaMA-Factory: training_args = Seq2SeqTrainingArguments("]) == "llamafactory"
    # InternLM's xtuner by name, and by its package's frames (fixtures/devlogs67/7022, 7024)
    assert named_in(["xtuner train internvl_v2_internlm2_2b_lora_finetune --deepspeed deepspeed_zero1"]) == "xtuner"
    assert detect(["/root/.conda/envs/x/lib/python3.10/site-packages/xtuner/engine/_strategy/deepspeed.py"], [], {})[::3] \
        == ("xtuner", "frames")
    # a conda env named for LLaMA-Factory (fixtures/devlogs 1310); ms-swift by its short name, read last (devlogs49
    # 6216's title, devlogs27 2916's prose), never inside another word or a path
    assert named_in(['  File "/miniconda3/envs/llama_factory/lib/python3.10/site-packages/transformers/hf_argparser.py"']) \
        == "llamafactory"
    assert named_in(["请问Swift可以实现多模态模型的dpo/simpo吗？"]) == "ms-swift"
    assert named_in(["swift DPO: grad_norm is nan with Qwen1.5-7B-Chat"]) == "ms-swift"
    assert named_in(["trl GRPO, the same run under swift works"]) == "trl"
    assert named_in(["import SwiftUI", "swift-transformer", "/opt/swift/bin"]) is None


def test_vllm_named_by_a_paste_of_no_training_and_unsloths_entry_points():
    from doctor.swift.framework import detect, named_in, runtime_named_in
    # fixtures/devlogs37/4007: a vLLM serving failure, no trainer and no training named
    assert runtime_named_in(["use error: The model's max seq len (4096) is larger than ... vllm KV cache"]) == "vllm"
    assert detect([], ["With vllm the model's max seq len (4096) is larger than the KV cache"], {})[::3] == \
        ("vllm", "named")
    # vLLM beside training words is some trainer's rollout engine; DeepSpeed is always some trainer's engine
    assert runtime_named_in(["GRPO training with vLLM runs out of memory"]) is None
    assert runtime_named_in(["DeepSpeed 0.9.5: extra fields not permitted"]) is None
    # a path is no naming; a trainer named wins
    assert runtime_named_in(["/usr/lib/python3/site-packages/vllm/worker.py"]) is None
    assert detect([], ["trl GRPO with vllm colocate OOM"], {})[::3] == ("trl", "named")
    # fixtures/devlogs37/4024: unsloth's own entry point in the title
    assert named_in(["unsloth_train(trainer, resume_from_checkpoint = True) gives a ValueError"]) == "unsloth"
