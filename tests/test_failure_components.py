"""Failures placed by the component that raised them or the line that failed: vLLM's engine loop and engine calls, a
batch share rounded down to zero, OpenRLHF's remote reward client."""
from __future__ import annotations

from conftest import run_text

SP = "/usr/local/lib/python3.10/dist-packages"


def _tb(frames: list[tuple[str, int, str, str]], exc: str | None, prefix: str = "") -> str:
    out = [prefix + "Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {code}"]
    if exc:
        out.append(prefix + exc)
    return "\n".join(out) + "\n"


def test_vllm_v0_engine_loop_death_is_an_engine_failure_not_an_argument_check():
    text = _tb([(f"{SP}/vllm/engine/multiprocessing/client.py", 150, "run_heartbeat_loop", "await self._check_success("),
                (f"{SP}/vllm/engine/multiprocessing/client.py", 314, "_check_success", "raise response")],
               "RuntimeError: Engine loop has died")
    first = run_text(text)[0]
    assert first.category == "vllm-engine-error" and "Engine loop has died" in first.message


def test_a_cut_stack_through_vllm_engine_core_into_a_trainer_extension_is_the_engine_call():
    text = _tb([(f"{SP}/vllm/v1/engine/core.py", 456, "_handle_client_request", "output.result = method("),
                (f"{SP}/vllm/v1/engine/core.py", 271, "wake_up", "self.model_executor.wake_up(tags)"),
                ("/workspace/verl/verl/workers/rollout/vllm_rollout/vllm_async_server.py", 98, "collective_rpc",
                 "return ray.get(")], None, prefix="(AsyncvLLMServer pid=4343) ")
    first = run_text(text)[0]
    assert first.category == "vllm-engine-error" and first.rule_id == "GD991"


def test_a_batch_share_rounded_down_to_zero_is_batch_divisibility_and_says_which_operand():
    text = _tb([("/data/RAGEN/verl/workers/critic/dp_critic.py", 54, "__init__",
                 "assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0")],
               "ZeroDivisionError: integer division or modulo by zero", prefix="(main_task pid=3666690) ")
    first = run_text(text)[0]
    assert first.category == "batch-divisibility"
    assert "`self.config.ppo_micro_batch_size` was 0" in first.message
    assert "The failed assertion wants" not in first.message


def test_openrlhf_remote_reward_client_giving_up_names_the_unreachable_server():
    retry = ("(remote_rm_fn_ray pid=98924) INFO 03-01 10:00:00 remote_rm_utils.py:24] Request error, please check: "
             "HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries exceeded with url: /get_reward (Caused by "
             "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
             "connection: [Errno 111] Connection refused')) [repeated 15x across cluster]\n")
    text = retry + _tb([("/root/lmm-r1/openrlhf/trainer/ppo_utils/experience_maker.py", 400, "make_experience",
                         "rewards = remote_rm_fn(self.remote_rm_url, queries=queries)"),
                        ("/root/lmm-r1/openrlhf/utils/remote_rm_utils.py", 29, "request_api_wrapper",
                         'raise Exception(f"Request error for {try_max_times} times")')],
                       "Exception: Request error for 5 times, returning None. Please check the API server.")
    first = run_text(text)[0]
    assert first.rule_id == "GD606"
    assert "http://127.0.0.1:5000/get_reward: Connection refused" in first.message
    assert first.fix[0].startswith("Start the reward server")


def test_any_assertion_in_verl_dataproto_chunk_is_the_split_into_workers_and_no_other_protocol_assertion():
    chunk = _tb([("/root/VisionThink/verl/single_controller/base/decorator.py", 60, "_split_args_kwargs_data_proto",
                  "splitted_args.append(arg.chunk(chunks=chunks))"),
                 ("/root/VisionThink/verl/protocol.py", 907, "chunk", "assert len(non_tensor_lst) == chunks")],
                "AssertionError")
    first = run_text(chunk)[0]
    assert first.rule_id == "GD104" and "`assert len(non_tensor_lst) == chunks`" in first.message
    assert "?" not in first.message
    union = _tb([("/root/verl/verl/protocol.py", 500, "union", "assert self.batch.batch_size == other.batch.batch_size")],
                "AssertionError")
    assert all(f.rule_id != "GD104" for f in run_text(union))


def test_a_checkout_of_ms_swift_under_a_release_folder_is_ms_swift_not_the_users_code():
    from doctor.classify.component import package_of
    assert package_of("/ms-swift-main/swift/llm/argument/base_args/model_args.py") == "swift"
    assert package_of("/home/u/ms-swift-3.2/swift/llm/train/sft.py") == "swift"
    assert package_of("/home/u/myproject/swift/train.py") is None


def test_axolotl_and_llamafactory_folders_without_src_are_theirs():
    # the package folder followed by one of its own subpackages (a docker image's path, a shortened paste)
    from doctor.classify.component import package_of
    assert package_of("/axolotl/prompt_strategies/dpo/chat_template.py") == "axolotl"
    assert package_of("/app/llamafactory/data/aligner.py") == "llamafactory"
    assert package_of("/home/u/axolotl/my_rewards.py") is None
    assert package_of("/home/u/llamafactory/run.py") is None


def test_ms_swift_2x_module_layout_tells_the_major_version(tmp_path):
    from doctor.analyze import analyze
    log = tmp_path / "paste.txt"
    log.write_text('Traceback (most recent call last):\n'
                   '  File "/root/swift/swift/llm/utils/preprocess.py", line 232, in preprocess\n'
                   '    conversations = d[self.conversations_key]\n'
                   "KeyError: 'conversations'\n")
    assert analyze([str(log)]).run["framework_major"] == 2


def test_nccl_system_error_of_a_multi_node_job_leads_with_the_network_not_docker_shm():
    err = ("[rank13]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
           "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n")
    info = "g105:26924:27251 [0] NCCL INFO comm 0x55e1fc06b510 rank 11 nranks 16 cudaDev 3 busId 5d000 - Abort COMPLETE\n"
    f = next(x for x in run_text(info + err) if x.rule_id == "GD302")
    assert "nranks 16" in f.message and "Docker" not in f.message
    assert f.fix[0].startswith("Check the network NCCL picks")
    one_node = next(x for x in run_text(info.replace("nranks 16", "nranks 4") + err) if x.rule_id == "GD302")
    assert "container" in one_node.message and one_node.fix[0].startswith("Give the container more shared memory")


def test_a_missing_trl_name_outside_ms_swift_names_the_trl_release_not_ms_swift_pins():
    f = run_text("ImportError: cannot import name 'GRPOConfig' from 'trl' "
                 "(/usr/local/lib/python3.10/site-packages/trl/__init__.py)\n")[0]
    assert f.rule_id == "GD456" and "first shipped in trl 0.14" in f.message
    assert "ms-swift" not in " ".join(f.fix) and "trl>=0.14" in f.fix[0]


def test_image_token_mismatch_outside_ms_swift_gives_both_levers_without_ms_swift_env_defaults():
    text = _tb([("/envs/llama_fac/lib/python3.9/site-packages/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py",
                 1665, "forward", "raise ValueError(")],
               "ValueError: Image features and image tokens do not match: tokens: 2005, features 2695")
    f = run_text(text)[0]
    assert f.rule_id == "GD441" and len(f.fix) >= 2
    assert f.fix[0].startswith("Raise the maximum sequence length") and "2695 tokens" in f.fix[0]
    assert "MAX_PIXELS unset" not in " ".join(f.fix)


def test_disk_full_fixes_name_shared_memory_only_for_its_files_and_verl_checkpoint_keys_for_verl():
    ckpt = ("RuntimeError: [enforce fail at inline_container.cc:857] . PytorchStreamWriter failed writing file data/37: "
            "file write failed\n")
    f = run_text(ckpt)[0]
    assert f.rule_id == "GD806" and not any("shm-size" in x for x in f.fix)
    shm = run_text("RuntimeError: unable to write to file </torch_3915_2891347622_0>: No space left on device (28)\n")[0]
    assert any("shm-size" in x for x in shm.fix)
    verl = run_text("(WorkerDict pid=77) " + ckpt, command="python3 -m verl.trainer.main_ppo trainer.save_freq=10")
    assert any(x.startswith("Keep fewer checkpoints: trainer.max_actor_ckpt_to_keep=2") for x in verl[0].fix)


def test_validation_summaries_all_zero_and_not():
    pp = ("(TaskRunner pid=1) (\"Initial validation metrics: {'val/test_score/openai/gsm8k': \"\n"
          "(TaskRunner pid=1)  '0.0}')\n")
    f = run_text(pp)[0]
    assert f.rule_id == "GD617" and "before training" in f.message
    assert "val/test_score/openai/gsm8k 0" in f.message
    some = pp.replace("'0.0}'", "'0.3199393479909022}'")
    assert all(x.rule_id != "GD617" for x in run_text(some))
    # spreads are not scores: a std of 0 beside a mean above 0 is not "all zero"
    mixed = ("(TaskRunner pid=1) Initial validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.25, "
             "'val-aux/openai/gsm8k/reward/std@1': 0.0}\n")
    assert all(x.rule_id != "GD617" for x in run_text(mixed))


def test_rays_memory_monitor_kill_is_not_blamed_on_the_kernel_oom_killer():
    line = ("(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) "
            "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 351e406b19, IP: "
            "10.0.0.1) over the last time period.\n")
    f = run_text(line)[0]
    assert f.rule_id == "GD310" and "RAY_memory_usage_threshold" in f.message
    assert "Linux OOM killer" not in f.message and "dmesg" not in f.fix[0]
    # the look at Ray's log is not a fix by itself: what lowers the node's memory follows it
    assert f.fix[0].startswith("Find what filled") and "CPU offload" in f.fix[1] and "RAY_memory_usage_threshold" in f.fix[1]


def test_a_failed_cpu_allocation_is_host_memory_with_its_size_and_phase():
    text = _tb([("/opt/venv/lib/python3.10/site-packages/transformers/modeling_utils.py", 4000, "from_pretrained",
                 "model = cls(config, *model_args, **model_kwargs)")],
               "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
               "you tried to allocate 268435456 bytes. Error code 12 (Cannot allocate memory)")
    f = run_text(text)[0]
    assert f.rule_id == "GD313" and f.category == "host-oom-killed"
    assert "256 MiB (268435456 bytes" in f.message and "while the model's weights were loading" in f.message
    bare = run_text(_tb([("train.py", 3, "<module>", "x = [0] * 10**12")], "MemoryError"))[0]
    assert bare.rule_id == "GD313"
    cuda = run_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                    "capacity of 79.19 GiB of which 3.06 MiB is free.\n")
    assert all(x.rule_id != "GD313" for x in cuda)


def test_a_source_checkout_of_llamafactory_or_rllm_and_its_entry_script_are_not_the_users_code():
    from doctor.classify.component import component, user_frames
    from doctor.signals import Frame
    assert component("E:/project/LLaMA-Factory/src/llmtuner/data/loader.py") == "LLaMA-Factory"
    assert component("/app/LLaMA-Factory/src/llamafactory/train/tuner.py") == "LLaMA-Factory"
    assert component("/home/u/rllm/rllm/trainer/verl/train_agent_ppo.py") == "rLLM"
    stack = (Frame("/c1/LLaMA-Efficient-Tuning/src/train_bash.py", 14, "main"),
             Frame("/c1/LLaMA-Efficient-Tuning/src/llmtuner/tuner/ppo/trainer.py", 172, "get_inputs"),
             Frame("/home/u/my_reward.py", 3, "score"))
    assert [f.func for f in user_frames(stack)] == ["score"]
    # started from the checkout: its entry script printed relative to it
    relative = (Frame("src/train_bash.py", 5, "main"),) + stack[1:2]
    assert user_frames(relative) == []
    # a script of the user's beside an installed LLaMA-Factory stays theirs
    installed = (Frame("/home/u/train.py", 9, "main"),
                 Frame("/usr/lib/python3.10/site-packages/llamafactory/train/tuner.py", 50, "run_exp"))
    assert [f.func for f in user_frames(installed)] == ["main"]


def test_a_compiled_modules_cython_source_is_no_users_code():
    # vLLM's API server on uvloop (public vLLM threads: the only frame outside site-packages is uvloop/loop.pyx)
    from doctor.classify.component import user_frames
    from doctor.signals import Frame
    stack = (Frame("uvloop/loop.pyx", 1518, "uvloop.loop.Loop.run_until_complete"),
             Frame("/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", 1078, "run_server"))
    assert user_frames(stack) == []
    assert [f.func for f in user_frames((Frame("my_ext/fast.pyx", 3, "f"),))] == []
    assert [f.func for f in user_frames((Frame("/home/u/train.py", 9, "main"),))] == ["main"]


# dev14 1616 (modelscope/ms-swift thread): a Qwen2-VL sequence-classification checkpoint served with vLLM's generative
# class; the traceback's message is wrapped in markdown bold and the shard bar follows it
LOAD = [(f"{SP}/vllm/model_executor/models/utils.py", 261, "load_weights",
         'autoloaded_weights = set(self._load_module("", self.module, weights))'),
        (f"{SP}/vllm/model_executor/models/utils.py", 250, "_load_module", "raise ValueError(msg)")]
SCORE = "ValueError: **There is no module or parameter named 'score' in Qwen2VLForConditionalGeneration**"


def test_a_weight_name_refused_while_the_checkpoint_loads_is_the_checkpoint_not_a_weight_sync():
    text = _tb(LOAD, SCORE) + "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:01<?, ?it/s]\n"
    first = run_text(text)[0]
    assert first.category == "vllm-engine-error"
    assert "`ValueError: There is no module or parameter named 'score'" in first.message  # the bold is taken off
    assert "loading the model's checkpoint at start" in first.message and "the trainer pushed" not in first.message
    assert not any("flattened" in line for line in first.fix)


def test_the_same_refusal_under_a_weight_sync_request_stays_the_sync():
    text = "POST /update_named_param/ HTTP/1.1\" 500\n" + _tb(LOAD, SCORE)
    first = run_text(text)[0]
    assert "weights the trainer pushed" in first.message


def test_an_oom_inside_data_parallel_says_one_process_drives_every_gpu():
    # torch re-raises a replica's error in the main thread as "Caught <type> in replica <i> on device <d>."
    # (torch/nn/parallel/parallel_apply.py ExceptionWrapper; devlogs70/7320 pasted it with its frames on one line)
    text = _tb([("/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/data_parallel.py", 171, "forward",
                 "outputs = self.parallel_apply(replicas, inputs, kwargs)"),
                ("/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/parallel_apply.py", 89, "parallel_apply",
                 "output.reraise()")],
               "torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.")
    f = run_text(text)[0]
    assert f.rule_id == "GD201" and "nn.DataParallel" in f.message
    assert f.fix[0].startswith("Start one process per GPU") and "torchrun --nproc_per_node" in f.fix[0]
    bare = run_text("torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 1 on device 1.\n")[0]
    assert bare.rule_id == "GD201" and "nn.DataParallel" in bare.message
    plain = run_text("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")[0]
    assert "DataParallel" not in plain.message and not plain.fix[0].startswith("Start one process per GPU")


def test_garbled_output_is_read_by_what_the_run_shows_it_was():
    garbage = ("the output keeps repeating:\n"
               "assistant: It It It It It It It It It It It It It It It It It It It It It It It It It It It\n")
    neutral = run_text(garbage)[0]
    assert neutral.rule_id == "GD645" and "chat template" in neutral.fix[0]
    assert neutral.fix[1].startswith("If these are an RL run's rollouts")        # nothing says which training ran
    sft = run_text("After SFT with LoRA, " + garbage)[0]
    assert sft.rule_id == "GD645" and len(sft.fix) == 1 and "weight sync" not in sft.message
    rl = run_text("GRPO rollouts after the first weight sync: " + garbage)[0]
    assert rl.rule_id == "GD645" and rl.fix[0].startswith("Log the rollouts of the very first step")


def test_a_nan_gradient_norm_beside_a_finite_loss_names_zero2s_overlapped_reduction():
    # devlogs70/7317 and deepspeedai/DeepSpeed#5347: the first row's loss finite, its grad_norm NaN, then a loss of 0
    rows = ("{'loss': 1.0446, 'grad_norm': nan, 'learning_rate': 1.49e-08, 'epoch': 0.0}\n"
            "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2.98e-08, 'epoch': 0.01}\n")
    f = run_text(rows, command="swift sft --model Qwen/Qwen2-VL-7B-Instruct --deepspeed zero2 --tuner_type lora")[0]
    assert f.rule_id == "GD620" and "the gradients did not" in f.message
    assert f.fix[0].startswith("--deepspeed zero2 is ZeRO-2: set \"overlap_comm\": false")
    unknown = run_text(rows)[0]
    assert unknown.fix[-1].startswith("If the run uses DeepSpeed ZeRO-1 or -2")     # not read: a condition, last
    zero3 = run_text(rows, command="swift sft --model Qwen/Qwen2-VL-7B-Instruct --deepspeed zero3")[0]
    assert not any("overlap_comm" in x for x in zero3.fix)                           # ZeRO-3 reduces another way
    both = run_text("{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05}\n{'loss': nan, 'grad_norm': nan}\n",
                    command="swift sft --deepspeed zero2")[0]
    assert not any("overlap_comm" in x for x in both.fix)                            # the loss itself is NaN


def test_overflow_after_overflow_to_the_end_of_a_log_is_fp16_overflow_not_a_wait():
    # devlogs71/7410: DeepSpeed's loss scaler halving 65536 -> 1024 and nothing after (deepspeed/runtime/fp16/
    # loss_scaler.py update_scale's "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: X, reducing to Y")
    scales = [65536, 32768, 16384, 8192, 4096, 2048, 1024]
    lines = "".join(f"[INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted "
                    f"loss scale: {a}, reducing to {b}\n" for a, b in zip(scales, scales[1:]))
    f = run_text(lines)[0]
    assert (f.rule_id, f.category, f.confidence) == ("GD623", "loss-nan-or-inf", "likely")
    assert "from 65536 to 1024" in f.message and f.fix[0].startswith("Switch to bf16")
    # three halvings are the scaler finding its level; a step logged after them is training going on
    short = "".join(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {a}, reducing to {b}\n"
                    for a, b in zip(scales[:4], scales[1:4]))
    assert not any(x.rule_id == "GD623" for x in run_text(short))
    trained = lines + "{'loss': 1.23, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
    assert not any(x.rule_id == "GD623" for x in run_text(trained))


def test_a_log_that_stops_as_every_rank_joins_the_process_group_is_a_start_hang():
    # devlogs71/7440 (PyTorch Lightning 1.x ddp.py's line before init_process_group, on each rank, then nothing)
    text = ("GPU available: True, used: True\nLOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]\n"
            "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/2\ninitializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2\n")
    f = run_text(text)[0]
    assert (f.rule_id, f.category) == ("GD323", "hang-at-start") and "init_process_group" in f.title
    assert any("MASTER_ADDR" in x and "NCCL_P2P_DISABLE=1" in x for x in f.fix)
    assert not any(x.rule_id == "GD323" for x in run_text(text + "Epoch 0:  10%|#         | 10/100 [00:10<01:30]\n"))


def test_a_wandb_run_summary_is_a_metrics_row_and_a_bare_finding_gets_its_categorys_actions(tmp_path):
    # devlogs71/7421: verl's keys in wandb's end-of-run summary (wandb/sdk/wandb_run.py "Run summary:", one
    # "wandb: <key> <value>" line each), every score 0; ms-swift's flat-reward flags have no verl spelling, so the
    # finding would have no fix left
    keys = ["actor/entropy_loss 0.1888", "actor/lr 0.0", "actor/pg_loss 0", "critic/score/max 0", "critic/score/mean 0",
            "critic/score/min 0", "critic/rewards/mean 0"]
    log = tmp_path / "log.txt"
    log.write_text("wandb: Run summary:\n" + "".join(f"wandb: {k:>30}\n" for k in keys), encoding="utf-8")
    from doctor.analyze import analyze
    f = analyze([str(log)]).findings[0]
    assert (f.rule_id, f.category) == ("GD610", "reward-zero-or-flat") and "reward was 0 and reward_std 0" in f.message
    assert f.fix and f.fix[0].startswith("Print a few completions beside their rewards")


def test_an_attribute_asked_of_a_training_wrapper_says_to_unwrap_the_model():
    # devlogs71/7412: torch's Module.__getattr__ on the DDP wrapper (the model is its .module)
    text = _tb([("/opt/venv/lib/python3.8/site-packages/torch/nn/modules/module.py", 1614, "__getattr__",
                 "raise AttributeError(\"'{}' object has no attribute '{}'\".format(")],
               "AttributeError: 'DistributedDataParallel' object has no attribute 'generate'")
    f = run_text(text)[0]
    assert "not of the model inside it" in f.message and f.fix[0].startswith("Call it on the unwrapped model")
    assert "`model.module.generate`" in f.fix[0]
    other = run_text(_tb([("/work/train.py", 10, "main", "x.foo")], "AttributeError: 'Config' object has no attribute 'foo'"))
    assert not any("unwrapped model" in x for x in other[0].fix)


def test_completions_of_only_exclamation_marks_are_nan_logits_and_say_bfloat16():
    # devlogs71/7439 (vLLM, DeepSeek-V2 in float16) and devlogs12/1417 (open-r1 GRPO): "!" is token id 0
    text = "".join(f"Prompt: '{p}', Generated text: '!!!!!!!!!!!!!!!!!!'\n" for p in ("Hello", "The capital of France is"))
    f = run_text(text)[0]
    assert f.rule_id == "GD645" and "token id 0" in f.message and f.fix[0].startswith("Run the model in bfloat16")
    assert len(f.fix) == 1                                                # nothing says RL: no weight-sync step
    rl = run_text("GRPO rollouts after the first update:\n" + text)[0]
    assert rl.fix[0].startswith("Run the model in bfloat16") and "weight sync" in rl.fix[1]


def test_an_oom_while_the_model_moves_to_the_gpu_is_weights_not_a_step():
    # devlogs71/7409 (DeepSpeed-Chat step 3 on V100s), devlogs19/2129, devlogs21/2912: the innermost frame is
    # Module.to()'s `convert` (or transformers' loader), so no gradient, optimizer state or activation exists yet
    text = _tb([("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", 987, "convert",
                 "return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None, non_blocking)")],
               "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB (GPU 6; 31.75 GiB total "
               "capacity; 30.95 GiB already allocated; 21.75 MiB free; 30.98 GiB reserved in total by PyTorch)")
    f = run_text(text)[0]
    assert f.rule_id == "GD201" and f.title == "Out of GPU memory while the model's weights were moved to the GPU"
    assert "this allocation was weights" in f.message and "gradients and optimizer states and the activations" not in f.message
    # an earlier phase of the same process may have left its state (devlogs21/2912: training, then a load to predict)
    assert "exist yet" not in f.message and "a finished training's state" in f.message
    assert f.fix[0].startswith("Place fewer weights on each GPU at load")


def test_a_first_nan_row_glued_to_a_bar_past_step_one_had_updates_before_it():
    # devlogs71/7403: the row's epoch (0.01) reads as the first logging point, its bar says step 9 of 860
    bar = "  1%|#         | 9/860 [00:43<1:05:18,  4.60s/it]"
    rows = (bar + "{'loss': nan, 'reward': 0.2684, 'learning_rate': 9.96e-06, 'epoch': 0.01}\n"
            "  2%|##        | 19/860 [01:30<1:07:22,  4.81s/it]{'loss': nan, 'reward': -0.31, 'learning_rate': 9.8e-06, "
            "'epoch': 0.02}\n")
    f = run_text(rows)[0]
    assert f.rule_id == "GD620" and "no update preceded it" not in f.message
    unglued = run_text(rows.replace(bar, "").replace("  2%|##        | 19/860 [01:30<1:07:22,  4.81s/it]", ""))[0]
    assert "no update preceded it" in unglued.message          # the epoch alone still places it first


def test_nccl_debug_lines_that_end_at_p2p_setup_name_the_peer_to_peer_path():
    # devlogs71/7413: NCCL's p2p transport ("Could not enable P2P between dev 1(=1b000) and dev 0(=1a000)"), then nothing
    text = ("host:538448:538448 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
            "host:538448:538448 [1] NCCL INFO NET/IB : No device found.\n"
            "host:538448:538448 [1] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
            "host:538448:538448 [1] NCCL INFO Using network Socket\n"
            "host:538447:538499 [0] NCCL INFO Could not enable P2P between dev 1(=1b000) and dev 0(=1a000)\n"
            "host:538447:538499 [0] NCCL INFO Could not enable P2P between dev 0(=1a000) and dev 1(=1b000)\n")
    f = run_text(text)[0]
    assert f.rule_id == "GD308" and "could not enable P2P between them" in f.message
    assert f.fix[0].startswith("Test the GPUs' peer-to-peer path") and "NCCL_P2P_DISABLE=1" in f.fix[0]
