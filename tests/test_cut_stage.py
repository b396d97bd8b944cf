"""A traceback cut before its exception line is read by the stage of its deepest frames (doctor/data/cut_stages.toml,
doctor/classify/cut_stage.py, doctor/checks/fallback/cut_stage_text.py): "<stage> failed; the exception is not in
the excerpt", what usually fails there, what to paste next. The log lines are real, from the public threads named
above each test."""
from __future__ import annotations

from conftest import run_text

from doctor.classify.cut_stage import load
from doctor.classify.hints import phase_of
from doctor.registry import CATEGORIES


def _first(findings):
    return next(f for f in findings if f.severity.name in ("error", "warning"))


def test_every_stage_is_backed_and_names_known_categories():
    stages = load()
    assert len({s.id for s in stages}) == len(stages) >= 7
    for s in stages:
        assert s.backed_by and s.does and s.usual, s.id
        assert s.position or s.funcs or s.frames or s.code, f"{s.id}: nothing reads it"
        for c in (s.category, s.server_category):
            assert not c or c in CATEGORIES, f"{s.id}: {c}"


# openpsi-project/ReaLHF#44: a model worker instantiating the model from the HF checkpoint (safetensors'
# MetadataIncompleteBuffer in the title); the deepest frame's code line is ReaLHF's per-family loader
REALHF = '''  File "/root/ReaLHF/realhf/system/model_worker.py", line 798, in _poll
    self.__lazy_setup()
  File "/root/ReaLHF/realhf/system/model_worker.py", line 318, in __lazy_setup
    model.module.instantiate()
  File "/root/ReaLHF/realhf/impl/model/nn/real_llm_api.py", line 219, in instantiate
    h()
  File "/root/ReaLHF/realhf/impl/model/nn/real_llm_api.py", line 893, in <lambda>
    lambda: getattr(m, f"from_{hf_model_family}")(
'''


def test_a_from_family_loader_in_the_code_line_is_model_weight_loading():
    f = _first(run_text("Traceback (most recent call last):\n" + REALHF))
    assert f.rule_id == "GD999" and f.category == "other" and f.confidence == "possible"
    assert f.title == "Model weight loading failed; the exception is not in the excerpt"
    assert "MetadataIncompleteBuffer" in f.message and "checkpoint-corrupt" in f.alternatives
    # what to check in the stage first, the paste that would settle it last
    assert f.fix[0].startswith("Check the weight files")
    paste = next(i for i, x in enumerate(f.fix) if x.startswith("Paste next"))
    assert paste > 0 and f.fix[paste].startswith(
        'Paste next: the lines after `File "/root/ReaLHF/realhf/impl/model/nn/real_llm_api.py", line 893, in <lambda>`')


# huggingface/trl#3214: a trl GRPO run in server mode, rank 0 inside an HTTP request to `trl vllm-serve`
HTTP = '''Traceback (most recent call last):
[rank0]:   File "/mnt/efs/env-i-0aa14a56f6c410033/lib/python3.11/site-packages/urllib3/connectionpool.py", line 787, in urlopen
[rank0]:     response = self._make_request(
[rank0]:                ^^^^^^^^^^^^^^^^^^^
[rank0]:   File "/mnt/efs/env-i-0aa14a56f6c410033/lib/python3.11/site-packages/urllib3/connectionpool.py", line 534, in _make_request
[rank0]:     response = conn.getresponse()
[rank0]:                ^^^^^^^^^^^^^^^^^^
[rank0]:   File "/mnt/efs/env-i-0aa14a56f6c410033/lib/python3.11/site-packages/urllib3/connection.py", line 516, in getresponse
[rank0]:     httplib_response = super().getresponse()
[rank0]:                        ^^^^^^^^^^^^^^^^^^^^^
[rank0]:   File "/home/ec2-user/.local/share/uv/python/cpython-3.11.11-linux-x86_64-gnu/lib/python3.11/http/client.py", line 1395, in getresponse
[rank0]:     response.begin()
[rank0]:   File "/home/ec2-user/.local/share/uv/python/cpython-3.11.11-linux-x86_64-gnu/lib/python3.11/http/client.py", line 325, in begin
[rank0]:     version, status, reason = self._read_status()
[rank0]:                               ^^^^^^^^^^^^^^^^^^^
[rank0]:   File "/home/ec2-user/.local/share/uv/python/cpython-3.11.11-linux-x86_64-gnu/lib/python3.11/http/client.py", line 286, in _read_status
'''
HTTP_CMD = ('accelerate launch --config_file "configs/deepspeed_config_zero2.yaml"  --num_processes=3 train2.py '
            '--reward_funcs accuracy format --max_completion_length 1024 --vllm_server_timeout 500 --use_vllm True')


def test_a_stack_in_http_client_reading_the_status_line_waits_for_the_server_and_names_the_rollout_server():
    f = _first(run_text(HTTP, command=HTTP_CMD))
    assert f.title == "Waiting for an HTTP server's answer failed; the exception is not in the excerpt"
    assert "RemoteDisconnected" in f.message and "most likely the rollout server" in f.message
    alone = _first(run_text(HTTP))  # no vLLM server in the run: any server, no rollout-server reading
    assert alone.title == f.title and "rollout server" not in alone.message and not alone.alternatives


# JIA-Lab-research/LongLoRA#68: get_peft_model -> PeftModel.__init__ -> LoraModel.__init__ (peft 0.5), cut there;
# the title gives `Target modules ['query_key_value', 'dense'] not found in the base model`
LORA = '''Traceback (most recent call last):
  File "/workspace/LongLoRA/supervised-fine-tune.py", line 290, in train
    model = get_peft_model(model, config)
  File "/root/miniconda3/envs/longlora/lib/python3.10/site-packages/peft/mapping.py", line 106, in get_peft_model
    return MODEL_TYPE_TO_PEFT_MODEL_MAPPING[peft_config.task_type](model, peft_config, adapter_name=adapter_name)
  File "/root/miniconda3/envs/longlora/lib/python3.10/site-packages/peft/peft_model.py", line 889, in __init__
    super().__init__(model, peft_config, adapter_name)
  File "/root/miniconda3/envs/longlora/lib/python3.10/site-packages/peft/peft_model.py", line 111, in __init__
    self.base_model = PEFT_TYPE_TO_MODEL_MAPPING[peft_config.peft_type](
  File "/root/miniconda3/envs/longlora/lib/python3.10/site-packages/peft/tuners/lora.py", line 274, in __init__
    super().__init__(model, config, adapter_name)
'''


def test_a_stack_cut_in_peft_lora_wrapping_reads_the_target_modules_as_the_argument_error():
    f = _first(run_text(LORA))
    assert f.title.startswith("Wrapping the model with a peft adapter (LoRA) failed")
    assert f.category == "argument-error-other" and f.confidence == "possible"
    assert "Target modules" in f.message and "all-linear" in " ".join(f.fix)


# OpenRLHF/OpenRLHF#1050: the last epoch's bar reaches 8/8, then the driver's traceback (cut after its first frame)
END = '''Train epoch [3/3]:  88%|████████▊ | 7/8 [00:15<00:01,  1.83s/it, act_loss=-0.722, reward=0.35, return=0.722, gen_len=420, tot_len=2445.75, kl=0, act_lr=2.67e-7]
Train epoch [3/3]: 100%|██████████| 8/8 [00:15<00:00,  1.85s/it, act_loss=-0.722, reward=0.35, return=0.722, gen_len=420, tot_len=2445.75, kl=0, act_lr=2.67e-7]
(ActorModelRayActor pid=234795) 
Train epoch [3/3]: 100%|██████████| 8/8 [00:15<00:00,  1.88s/it, act_loss=-0.722, reward=0.35, return=0.722, gen_len=420, tot_len=2445.75, kl=0, act_lr=2.67e-7]
Traceback (most recent call last):
  File "/root/miniconda3/lib/python3.10/runpy.py", line 196, in _run_module_as_main
'''


def test_a_traceback_right_after_the_last_epochs_bar_reached_its_total_is_the_end_of_training():
    f = _first(run_text(END))
    assert f.title.startswith("The end of training (final save or weight gather) failed")
    assert "cuda-oom" in f.alternatives and f.category == "other"
    assert [e.line for e in f.evidence] == [6, 4]  # the stack's frame, then the finished bar
    # the same bar in an earlier epoch: the run goes on to the next epoch, nothing places the stack
    earlier = _first(run_text(END.replace("[3/3]", "[2/3]")))
    assert earlier.title == "A traceback cut before its exception line"


# shangshang-wang/Tina#10: a user TrainerCallback's on_step_end calls generate -> _sample (hard-wrapped at 90 columns)
SAMPLE = '''[rank0]:   File "/home/nick11roberts/miniconda3/envs/tina/lib/python3.10/site-packages/trans
formers/trainer_callback.py", line 556, in call_event
[rank0]:     result = getattr(callback, event)(
[rank0]:   File "/home/nick11roberts/github.com/shangshang-wang/Tina/tina/post_train_hf/call
back.py", line 42, in on_step_end
[rank0]:     completion = self.eval_prompt(model, processing_class)
[rank0]:   File "/home/nick11roberts/github.com/shangshang-wang/Tina/tina/post_train_hf/call
back.py", line 54, in eval_prompt
[rank0]:     outputs = model.generate(
[rank0]:   File "/home/nick11roberts/miniconda3/envs/tina/lib/python3.10/site-packages/peft/
peft_model.py", line 1973, in generate
[rank0]:     outputs = self.base_model.generate(*args, **kwargs)
[rank0]:   File "/home/nick11roberts/miniconda3/envs/tina/lib/python3.10/site-packages/torch
/utils/_contextlib.py", line 116, in decorate_context
[rank0]:     return func(*args, **kwargs)
[rank0]:   File "/home/nick11roberts/miniconda3/envs/tina/lib/python3.10/site-packages/trans
formers/generation/utils.py", line 2634, in generate
[rank0]:     result = self._sample(
[rank0]:   File "/home/nick11roberts/miniconda3/envs/tina/lib/python3.10/site-packages/trans
formers/generation/utils.py", line 3660, in _sample
'''


def _analyzed(tmp_path, text: str):
    """The findings of analyze() over the text as a log file (its paste reader rejoins hard-wrapped lines)."""
    from doctor.analyze import analyze
    p = tmp_path / "log.txt"
    p.write_text(text, encoding="utf-8")
    return analyze([str(p)]).findings


def test_a_stack_cut_in_sampling_inside_a_trainer_callback(tmp_path):
    f = _first(_analyzed(tmp_path, SAMPLE))
    assert f.title == "Sampling the next token in generate failed; the exception is not in the excerpt"
    assert "a trainer callback (on_step_end)" in f.message and "rollout generation" not in f.message
    assert f.category == "other" and "loss-nan-or-inf" in f.alternatives
    # with the frame's code line (transformers' own source at that line; the paste cut it) the stage leaves one
    # reading, non-finite probabilities
    code = "[rank0]:     next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)\n"
    clear = _first(_analyzed(tmp_path, SAMPLE + code))
    assert clear.category == "loss-nan-or-inf" and clear.confidence == "possible"
    assert "torch.multinomial" in clear.message


def test_phase_of_a_stack_inside_a_trainer_callback_event():
    from doctor.signals import Frame
    frames = (Frame("/x/site-packages/transformers/trainer_callback.py", 556, "call_event"),
              Frame("/x/tina/post_train_hf/callback.py", 42, "on_step_end"),
              Frame("/x/site-packages/transformers/generation/utils.py", 2634, "generate"))
    assert phase_of(frames) == "a trainer callback (on_step_end)"
    assert phase_of(frames[2:]) == "rollout generation"  # generate outside any callback is still a rollout


# vllm-project/vllm#6106: a Ray worker of `vllm serve` on a two-node Volta cluster, cut in execute_method after
# vLLM's `Error executing method init_device`
INIT_DEVICE = '''(RayWorkerWrapper pid=4139, ip=128.1.219.180) INFO 07-03 14:43:49 utils.py:637] Found nccl from library libnccl.so.2
(RayWorkerWrapper pid=4139, ip=128.1.219.180) INFO 07-03 14:43:49 pynccl.py:63] vLLM is using nccl==2.20.5
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] Error executing method init_device. This might cause deadlock in distributed execution.
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] Traceback (most recent call last):
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]   File "/model/anaconda3/envs/vllm/lib/python3.11/site-packages/vllm/worker/worker_base.py", line 140, in execute_method
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]     return executor(*args, **kwargs)
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]            ^^^^^^^^^^^^^^^^^^^^^^^^^
'''


def test_vllm_init_device_is_its_distributed_init_not_engine_memory():
    found = run_text(INIT_DEVICE)
    assert "GD205" not in [f.rule_id for f in found]
    f = _first(found)
    assert f.category == "vllm-engine-error"
    assert "vLLM's distributed init" in f.message and "Bfloat16 is only supported" in f.message


# huggingface/trl#3603 (fixtures/devlogs/013): `trl vllm-serve` building its engine, the stack cut at `llm = LLM(`
SERVE = '''Traceback (most recent call last):
  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run
    self._target(*self._args, **self._kwargs)
  File "/workspace/trl/trl/scripts/vllm_serve.py", line 290, in llm_worker
    llm = LLM(
          ^^^^
'''


def test_an_engine_built_by_a_server_is_not_a_colocated_trainers_engine():
    assert "GD205" not in [f.rule_id for f in run_text(SERVE)]
    assert "GD205" not in [f.rule_id for f in run_text(SERVE, command="trl vllm-serve --model Qwen/Qwen2.5-Math-1.5B")]


# verl-project/verl#1079 (fixtures/devlogs13/1521): verl's demo, Ray's RayTaskError(NotImplementedError) header, then
# the remote task's own frames, cut at the reward call
VERL = '''Traceback (most recent call last):
  File "/data/verl/verl/trainer/main_ppo.py", line 83, in run_ppo
    ray.get(runner.run.remote(config))
  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 929, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(NotImplementedError): ray::TaskRunner.run() (pid=14879, ip=10.92.86.191, actor_id=c582b07705fd2e31af60880701000000, repr=<main_ppo.TaskRunner object at 0x7ef98545fa30>)
  File "/data/verl/verl/trainer/main_ppo.py", line 187, in run
    trainer.fit()
  File "/data/verl/verl/trainer/ppo/ray_trainer.py", line 894, in fit
    reward_tensor = self.reward_fn(batch)
'''


def test_a_ray_task_cut_at_the_reward_call_is_the_reward_computation_with_the_wrapped_type():
    f = _first(run_text(VERL))
    assert f.rule_id == "GD999" and f.category == "reward-function-error" and f.confidence == "possible"
    assert f.title == "The reward computation failed; the exception is not in the excerpt"
    assert "Ray's RayTaskError line above these frames names the exception: NotImplementedError" in f.message
    assert [e.line for e in f.evidence] == [6, 9, 10]  # the header, the last frame's File line and its statement
    assert not any(g.rule_id == "GD312" and g.severity.name in ("error", "warning") for g in run_text(VERL))


def test_a_ray_task_error_whose_own_frames_are_absent_keeps_the_wrapper_notice():
    head = VERL.split("  File \"/data/verl/verl/trainer/main_ppo.py\", line 187")[0]
    f = _first(run_text(head))
    assert f.rule_id == "GD312" and "NotImplementedError" in f.message


def test_a_warning_that_something_could_not_be_loaded_right_before_a_cut_stack_is_what_failed_first():
    log = ("2025-02-28 05:55:16 WARNING loader.py:32 could not load plugin my_plugin\n"
           "Traceback (most recent call last):\n"
           '  File "/work/run.py", line 8, in <module>\n'
           "    main()\n")
    f = _first(run_text(log))
    assert f.rule_id == "GD999" and "The warning printed just before the traceback says what failed first" in f.message
    assert f.evidence[0].line == 1 and f.fix[0].startswith("Start from the warning before the traceback")
    # a warning of another kind is not read as the cause
    other = _first(run_text(log.replace("could not load plugin my_plugin", "this is slow")))
    assert "what failed first" not in other.message


# dev15 1802 (trl's examples/scripts/sft.py of June 2024): SFTTrainer's constructor tokenizing the dataset, cut there
SFT = '''Map:   0%|          | 0/9846 [00:00<?, ? examples/s]
Traceback (most recent call last):
  File "/home/u/trl/examples/scripts/sft.py", line 157, in <module>
    trainer = SFTTrainer(
  File "/home/u/.venv/lib/python3.10/site-packages/trl/trainer/sft_trainer.py", line 360, in __init__
    train_dataset = self._prepare_dataset(
'''


def test_a_stack_cut_where_a_trainer_prepares_its_dataset_is_the_dataset_stage():
    f = _first(run_text(SFT))
    assert f.category == "dataset-or-template-error"
    assert f.title == "Loading or preparing the dataset failed; the exception is not in the excerpt"


def test_datasets_own_error_record_before_a_cut_loader_stack_is_quoted_first():
    # dev15 1815: datasets' json builder logs the ArrowInvalid it re-raises, glued after the split's bar
    log = ("Generating train split: 0 examples [00:00, ? examples/s]Failed to load JSON from file '/d/train.jsonl' "
           "with error <class 'pyarrow.lib.ArrowInvalid'>: JSON parse error: Column(/query) changed from string to "
           "number in row 125\n"
           "Traceback (most recent call last):\n"
           '  File "/x/site-packages/datasets/packaged_modules/json/json.py", line 160, in _generate_tables\n')
    f = _first(run_text(log))
    assert f.category == "dataset-or-template-error" and f.evidence[0].line == 1
    assert "changed from string to number in row 125" in f.message


def test_a_notebook_stack_cut_in_the_trainers_resume_with_a_valueerror_header_is_the_resume_folder():
    # dev15 1803 (an Idefics2 LoRA notebook): IPython's header names ValueError, the stack stops in Trainer.train
    log = ("---------------------------------------------------------------------------\n"
           "ValueError                                Traceback (most recent call last)\n"
           "Cell In[16], line 1\n"
           "----> 1 trainer.train(resume_from_checkpoint=True)\n\n"
           "File /opt/conda/lib/python3.11/site-packages/transformers/trainer.py:1920, in Trainer.train(self, "
           "resume_from_checkpoint, trial, ignore_keys_for_eval, **kwargs)\n"
           "   1918 if resume_from_checkpoint is not None:\n")
    f = _first(run_text(log))
    assert f.title == "Resuming from a checkpoint failed; the exception is not in the excerpt"
    assert f.category == "checkpoint-adapter-only-load-args"


def test_a_stack_cut_while_deepspeed_opens_the_zero_shards_is_the_checkpoint():
    # dev15 1825 (TransPeeder): engine.load_checkpoint(..., load_module_only=True) still opens the ZeRO-1 shards
    log = ("Traceback (most recent call last):\n"
           '  File "/w/train.py", line 109, in main\n'
           "    engine.load_checkpoint(model_args.init_ckpt, load_module_only=True)\n"
           '  File "/x/site-packages/deepspeed/runtime/engine.py", line 2780, in load_checkpoint\n'
           "    success = self._load_zero_checkpoint(\n"
           '  File "/x/site-packages/deepspeed/runtime/engine.py", line 2950, in _get_all_zero_checkpoints\n'
           "    return self._get_all_zero_checkpoint_state_dicts(zero_ckpt_names)\n")
    f = _first(run_text(log))
    assert f.title == "DeepSpeed loading a checkpoint failed; the exception is not in the excerpt"
    assert f.category == "checkpoint-corrupt" and "zero_pp_rank" in f.message


def test_a_stack_cut_in_mmengines_resume_under_deepspeed_is_the_checkpoint():
    # bytedance/Sa2VA#138 (dev67 7024): xtuner's DeepSpeed strategy resuming from a single iter_N.pth file, the stack
    # cut in mmengine's DeepSpeedStrategy.resume
    log = ("There is not any deepspeed fromat checkpoint (*.pt) saved.\n"
           "[rank2]: Traceback (most recent call last):\n"
           '[rank2]:   File "/d/.venv/lib/python3.11/site-packages/mmengine/runner/_flexible_runner.py", line 1141, '
           "in load_or_resume\n"
           "[rank2]:     self.resume(resume_from)\n"
           '[rank2]:   File "/d/.venv/lib/python3.11/site-packages/xtuner/engine/_strategy/deepspeed.py", line 60, '
           "in resume\n"
           "[rank2]:     checkpoint = super().resume(*args, **kwargs)\n"
           '[rank2]:   File "/d/.venv/lib/python3.11/site-packages/mmengine/_strategy/deepspeed.py", line 472, '
           "in resume\n"
           "[rank2]: \n")
    f = _first(run_text(log))
    assert f.category == "checkpoint-corrupt"
    assert f.title.startswith("Resuming the run from a checkpoint in mmengine")
    assert "load_from" in " ".join(f.fix) and "iter_N.pth" in f.message


def test_a_headless_rich_box_quoted_in_a_reply_is_still_read():
    # dev15 1830's rich box (DeepSpeed's load_checkpoint), every line behind a reply's "> " quote mark
    box = ["│ /x/site-packages/deepspeed/runtime/engine.py:                                          │",
           "│ 2605 in load_checkpoint                                                                 │",
           "│                                                                                         │",
           "│ ❱ 2605 │   │   load_path, client_states = self._load_checkpoint(load_dir,               │",
           "│ /x/site-packages/deepspeed/runtime/engine.py:                                          │",
           "│ 2664 in _load_checkpoint                                                                │"]
    f = _first(run_text("\n".join("> " + ln for ln in box) + "\n"))
    assert f.title == "DeepSpeed loading a checkpoint failed; the exception is not in the excerpt"


# fixtures/devlogs16/1907 (a TRL DPO example under FSDP, PR comment): the stack stops in torch's backward
DPO_BACKWARD = """Traceback (most recent call last):
  File "/home/u/dpo/example.py", line 134, in main
    trainer.train()
  File "/opt/conda/envs/trl/lib/python3.10/site-packages/transformers/trainer.py", line 3687, in training_step
    self.accelerator.backward(loss, **kwargs)
  File "/opt/conda/envs/trl/lib/python3.10/site-packages/accelerate/accelerator.py", line 2248, in backward
    loss.backward(**kwargs)
  File "/home/u/.local/lib/python3.10/site-packages/torch/_tensor.py", line 492, in backward
    torch.autograd.backward(
  File "/home/u/.local/lib/python3.10/site-packages/torch/autograd/__init__.py", line 251, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
"""


def test_a_stack_cut_in_a_non_grpo_backward_is_the_backward_pass_with_no_guessed_cause():
    f = _first(run_text(DPO_BACKWARD))
    assert (f.rule_id, f.category, f.confidence) == ("GD999", "other", "possible")
    assert f.title == "The backward pass failed; the exception is not in the excerpt"
    assert "does not require grad" in f.message and "out of GPU memory" in f.message
    # the same cut inside GRPO's loss: its memory peak makes out of memory the likely reading (GD204)
    grpo = DPO_BACKWARD.replace("transformers/trainer.py", "trl/trainer/grpo_trainer.py")
    assert _first(run_text(grpo)).rule_id == "GD204"


# fixtures/devlogs17 2109 (LLaMA-Factory issue "transformer version conflict when using qwen-3"): cut in its version check
VERSION_CHECK = """Traceback (most recent call last):
  File "/home/u/LLaMA-Factory/src/llamafactory/hparams/parser.py", line 46, in <module>
    check_dependencies()
  File "/home/u/LLaMA-Factory/src/llamafactory/extras/misc.py", line 97, in check_dependencies
    check_version("transformers>=4.41.2,<=4.51.3,!=4.46.0")
"""


def test_a_stack_cut_in_the_frameworks_version_check_is_a_version_problem():
    f = _first(run_text(VERSION_CHECK))
    assert (f.category, f.confidence) == ("import-or-dependency-error", "possible")
    assert f.title == "The check of the installed packages' versions failed; the exception is not in the excerpt"
    assert "DISABLE_VERSION_CHECK" in f.fix[0]
    # the range the check was called with, read from the stack's own statement
    assert "`pip install 'transformers>=4.41.2,<=4.51.3,!=4.46.0'` (read from /home/u/LLaMA-Factory/src/llamafactory/" \
           "extras/misc.py:97 in check_dependencies)" in f.fix[0]


# fixtures/devlogs17 2106 (an unsloth issue): the title names the failure, the [rank0] stack below is cut in a forward
TITLED = """[Issue] GRPO Qwen QwQ torch Out of Memory Error
I am getting the following error:
[rank0]: Traceback (most recent call last):
[rank0]:   File "/root/grpo.py", line 492, in <module>
[rank0]:     trainer.train()
[rank0]:   File "/usr/local/lib/python3.11/dist-packages/torch/nn/modules/module.py", line 1739, in _wrapped_call_impl
[rank0]:     return self._call_impl(*args, **kwargs)
"""


def test_a_title_that_names_the_failure_above_a_cut_stack_is_its_reading():
    f = _first(run_text(TITLED))
    assert (f.rule_id, f.category, f.confidence) == ("GD999", "cuda-oom", "possible")
    assert f.evidence[0].line == 1 and "The words above the stack say the GPU runs out of memory" in f.message
    # the same stack with no words above it is no out of memory
    assert _first(run_text(TITLED.split("\n", 2)[2])).category == "other"


def test_a_title_of_two_words_above_a_cut_stack_is_read():
    # fixtures/devlogs23 2929 (an OpenRLHF issue titled "PPO OOM"): a title need not be a sentence of four words
    text = "PPO OOM\n" + TITLED.split("\n", 2)[2]
    f = _first(run_text(text))
    assert (f.category, f.evidence[0].line) == ("cuda-oom", 1)
    # two words further down a paste are no title
    assert _first(run_text("Traceback below\n\nPPO OOM\n" + TITLED.split("\n", 2)[2])).category == "other"


def test_words_above_a_stack_pasted_without_its_header_are_read_too():
    # fixtures/devlogs17 2107 (trl issue): the title line, then frames with no "Traceback" header, cut in the trainer
    text = ("When using GRPOTrainer+use_vllm, a self.group.barrier wait is triggered\n"
            '  File "/data/u/full.py", line 82, in main\n'
            "      trainer.train()\n"
            '    File "/opt/env/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 653, in _prepare_inputs\n'
            "      inputs = self._generate_and_score_completions(inputs)\n")
    f = _first(run_text(text))
    assert (f.category, f.confidence) == ("nccl-timeout", "possible") and f.evidence[0].line == 1


def test_a_stack_cut_at_an_assert_statement_with_its_message_is_that_assertion():
    # dev18 2209 (LLaMA-Factory, then LLaMA-Efficient-Tuning): the last frame's source line is the assert itself
    text = ("Traceback (most recent call last):\n"
            '  File "/c/LLaMA-Efficient-Tuning-main/src/llmtuner/tuner/core/loader.py", line 213, in '
            "load_model_and_tokenizer\n"
            '    assert load_valuehead_params(model, model_args.reward_model), "Reward model is not correctly loaded."\n')
    f = _first(run_text(text))
    assert "`AssertionError: Reward model is not correctly loaded.`" in f.message
    assert "the statement that raised it" in f.message and "notebook" not in f.message


def test_stacks_cut_in_deepspeeds_engine_construction_and_in_a_zero3_gather_name_their_stage():
    # axolotl-ai-cloud/axolotl#954 (dev18 2223): cut at `engine = DeepSpeedEngine(` in deepspeed.initialize
    init = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.8/dist-packages/accelerate/accelerator.py", line 1571, in _prepare_deepspeed\n'
            "    engine, optimizer, _, lr_scheduler = deepspeed.initialize(**kwargs)\n"
            '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/__init__.py", line 171, in initialize\n'
            "    engine = DeepSpeedEngine(args=args,\n")
    f = _first(run_text(init))
    assert f.title == "DeepSpeed building its engine failed; the exception is not in the excerpt"
    assert "deepspeed-config-error" in f.alternatives and "_batch_assertion" in f.message
    # allenai/open-instruct#393 (dev18 2226): cut inside ZeRO-3's all-gather of the whole policy
    gather = ("Traceback (most recent call last):\n"
              '  File "/env/lib/python3.11/site-packages/deepspeed/runtime/zero/partition_parameters.py", line 2235, in __enter__\n'
              "    self.params[0].all_gather(param_list=self.params)\n"
              '  File "/env/lib/python3.11/site-packages/deepspeed/runtime/zero/partition_parameters.py", line 1143, in all_gather\n'
              "    return self._all_gather(param_list, async_op=async_op, hierarchy=hierarchy)\n")
    f = _first(run_text(gather))
    assert f.title == "DeepSpeed ZeRO-3 gathering full parameters failed; the exception is not in the excerpt"
    assert "cuda-oom" in f.alternatives and "Gather fewer parameters" in f.fix[0]


def test_a_stack_cut_with_no_deeper_stage_is_read_by_the_trainer_phase_its_frames_are_in():
    # fixtures/devlogs17 2103 (trl GRPO, eval_on_start): cut in transformers' evaluate with torch frames below it
    evaluation = ("Traceback (most recent call last):\n"
                  '  File "/env/lib/python3.12/site-packages/transformers/trainer.py", line 4471, in evaluate\n'
                  "    output = eval_loop(\n"
                  '  File "/env/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl\n'
                  "    return self._call_impl(*args, **kwargs)\n")
    f = _first(run_text(evaluation))
    assert (f.category, f.title) == ("other", "The evaluation loop failed; the exception is not in the excerpt")
    assert f.fix[0].startswith("Run once with evaluation off") and sum("eval_strategy" in x for x in f.fix) == 1
    # a deeper stage still wins: the backward pass under the training step
    deeper = ("Traceback (most recent call last):\n"
              '  File "/env/lib/python3.12/site-packages/transformers/trainer.py", line 3687, in training_step\n'
              "    self.accelerator.backward(loss, **kwargs)\n"
              '  File "/env/lib/python3.12/site-packages/torch/autograd/__init__.py", line 251, in backward\n'
              "    Variable._execution_engine.run_backward(\n")
    assert _first(run_text(deeper)).title == "The backward pass failed; the exception is not in the excerpt"


# modelscope/ms-swift#2968: a DPO run's stack cut while the data loader fetched the next batch
LOADER = '''Traceback (most recent call last):
[rank0]:   File "/root/anaconda3/envs/t/lib/python3.9/site-packages/transformers/trainer.py", line 2472, in _inner_training_loop
[rank0]:     batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches)
[rank0]:   File "/root/anaconda3/envs/t/lib/python3.9/site-packages/accelerate/data_loader.py", line 563, in __iter__
[rank0]:     next_batch = next(dataloader_iter)
[rank0]:   File "/root/anaconda3/envs/t/lib/python3.9/site-packages/torch/utils/data/dataloader.py", line 630, in __next__
[rank0]:     data = self._next_data()
'''


def test_a_stack_cut_in_the_data_loaders_next_batch_is_the_datas():
    f = _first(run_text(LOADER))
    assert f.category == "dataset-or-template-error" and f.confidence == "possible"
    assert f.title == "Fetching the next training batch from the data loader failed; the exception is not in the excerpt"
    assert "num_workers 0" in " ".join(f.fix)


def test_a_traceback_header_right_after_a_dataset_map_is_a_crash_of_the_datas_step():
    bar = "Map (num_proc=8):  37%|███▋      | 3712/10000 [00:04<00:07, 800.12 examples/s]\n"
    f = _first(run_text(bar + "Traceback (most recent call last):\n"))
    assert (f.rule_id, f.category) == ("GD326", "dataset-or-template-error") and "host-oom-killed" in f.alternatives
    # the same header after a model-loading bar: no data reading
    shards = "Loading checkpoint shards:  50%|█████     | 2/4 [00:04<00:04,  2.01s/it]\n"
    assert _first(run_text(shards + "Traceback (most recent call last):\n")).category != "dataset-or-template-error"


# hiyouga/LlamaFactory#2751 (fixtures/devlogs20/2511): a full PPO with a fully trained reward model, the stack cut in
# LLaMA-Factory's argument parser (its check of reward_model_type raised there)
LF_PARSER = '''Traceback (most recent call last):
  File "/workspace/LLaMA-Factory/src/train_bash.py", line 14, in <module>
    main()
  File "/workspace/LLaMA-Factory/src/train_bash.py", line 5, in main
    run_exp()
  File "/workspace/LLaMA-Factory/src/llmtuner/train/tuner.py", line 26, in run_exp
    model_args, data_args, training_args, finetuning_args, generating_args = get_train_args(args)
  File "/workspace/LLaMA-Factory/src/llmtuner/hparams/parser.py", line 92, in get_train_args
'''


def test_a_stack_cut_in_the_argument_parser_is_an_argument_error():
    f = _first(run_text(LF_PARSER))
    assert f.category == "argument-error-other" and f.confidence == "possible"
    assert f.message.startswith("Parsing and checking the run's arguments failed; the exception is not in the excerpt")
    # one frame above it (the trainer's run_exp) is not the parser: no argument reading there
    above = LF_PARSER.rsplit('  File "/workspace/LLaMA-Factory/src/llmtuner/hparams', 1)[0]
    assert _first(run_text(above)).category != "argument-error-other"


# unslothai/unsloth#1708 (fixtures/devlogs26/3207): unsloth_zoo's compiler imports a module it generated; the stack is
# cut in the import system's look-up, before any code of that module runs
IMPORTLIB = '''Traceback (most recent call last):
  File "/usr/local/lib/python3.11/dist-packages/unsloth_zoo/compiler.py", line 259, in create_new_function
    new_module = importlib.import_module(UNSLOTH_COMPILE_LOCATION + "." + name)
                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import
  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load
  File "<frozen importlib._bootstrap>", line 1140, in _find_and_load_unlock
'''


def test_a_stack_cut_in_the_import_systems_look_up_is_an_import_failure():
    f = _first(run_text(IMPORTLIB))
    assert f.category == "import-or-dependency-error"
    assert f.message.startswith("Importing a module failed; the exception is not in the excerpt")
    # the module's own code running (exec_module) is not the look-up: no import reading from that frame alone
    running = IMPORTLIB.replace('  File "<frozen importlib._bootstrap>", line 1140, in _find_and_load_unlock\n',
                                '  File "<frozen importlib._bootstrap_external>", line 940, in exec_module\n'
                                '  File "/usr/lib/python3.11/site-packages/x/model.py", line 3, in <module>\n')
    assert _first(run_text(running)).category != "import-or-dependency-error"


# nlzy/vllm-gfx906#44 (fixtures/devlogs34/3716): a V1 worker's stack printed line by line through its logger, with the
# worker's parallel ranks in its prefix, cut in the CUDA graph capture
CAPTURE = "\n".join(
    f"(VllmWorker PP0_TP1 pid=4798) ERROR 09-29 05:54:49 [multiproc_executor.py:596] {line}" for line in (
        '  File "/opt/torchenv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 315, in compile_or_warm_up_model',
        "    self.model_runner.capture_model()",
        '  File "/opt/torchenv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2691, in capture_model',
        "    self._capture_cudagraphs(",
        '  File "/opt/torchenv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2741, in _capture_cudagraphs',
        "    self._dummy_run(num_tokens,",
        '  File "/opt/torchenv/lib/python3.12/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)")) + "\n"


def test_a_worker_stack_cut_in_vllms_cuda_graph_capture_is_an_engine_failure_with_enforce_eager():
    f = _first(run_text(CAPTURE))
    assert f.category == "vllm-engine-error"
    assert f.message.startswith("The CUDA graph capture of vLLM failed; the exception is not in the excerpt")
    assert any("--enforce-eager" in x for x in f.fix)


# unslothai/unsloth#1923 (fixtures/devlogs34/3729): a notebook's `from unsloth import FastLanguageModel`, IPython 8's
# module-level frames ("File <path>:<line>" with no ", in <func>"), cut inside unsloth's patching at import
NOTEBOOK_IMPORT = '''---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
Cell In[1], line 3
      1 ### Unsloth
----> 3 from unsloth import FastLanguageModel
      4 import torch

File /usr/local/lib/python3.11/dist-packages/unsloth/__init__.py:214
    211     raise ImportError("Unsloth: Please install unsloth_zoo via `pip install unsloth_zoo`")
--> 214 from .models import *

File /usr/local/lib/python3.11/dist-packages/unsloth/models/llama.py:2683
   2682 from .rl import PatchFastRL
-> 2683 PatchFastRL(FastLanguageModel = FastLlamaModel)
'''


def test_a_stack_through_an_import_statement_cut_below_it_is_importing_a_package():
    f = _first(run_text(NOTEBOOK_IMPORT))
    assert f.category == "import-or-dependency-error"
    assert f.message.startswith("Importing a package failed; the exception is not in the excerpt")
    assert "unsloth/models/llama.py:2683 in <module>" in f.message  # the module-level frames are read


KV_CUT = '''\
ERROR 11-26 14:34:34 [core.py:387] EngineCore hit an exception: Traceback (most recent call last):
ERROR 11-26 14:34:34 [core.py:387]   File "/root/env/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 378, in run_engine_core
ERROR 11-26 14:34:34 [core.py:387]     engine_core = EngineCoreProc(*args, **kwargs)
ERROR 11-26 14:34:34 [core.py:387]   File "/root/env/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 71, in __init__
ERROR 11-26 14:34:34 [core.py:387]     self._initialize_kv_caches(vllm_config)
ERROR 11-26 14:34:34 [core.py:387]   File "/root/env/lib/python3.10/site-packages/vllm/
'''


def test_a_vllm_stack_cut_in_the_kv_cache_sizing_is_memory_not_a_generic_engine_failure():
    # the second vLLM instance on one GPU of fixtures/devlogs49/5217: the engine's constructor calling the sizing
    f = _first(run_text(KV_CUT))
    assert f.category == "vllm-oom-or-kv-cache"
    assert f.title == "Failure in vLLM's KV cache sizing (traceback cut, from its stack)"
    assert "gpu_memory_utilization" in " ".join(f.fix)


JIT_CUT = '''\
Traceback (most recent call last):
  File "/env/lib/python3.8/site-packages/deepspeed/ops/op_builder/builder.py", line 446, in load
    return self.jit_load(verbose)
  File "/env/lib/python3.8/site-packages/deepspeed/ops/op_builder/builder.py", line 489, in jit_load
    op_module = load(name=self.name,
  File "/env/lib/python3.8/site-packages/torch/utils/cpp_extension.py", line 1508, in _jit_compile
    _write_ninja
'''


def test_a_stack_cut_in_an_extensions_jit_build_is_the_build_environment():
    f = _first(run_text(JIT_CUT))
    assert f.category == "import-or-dependency-error"
    assert "just-in-time build" in f.message


def test_a_traceback_after_swift_end_lines_is_a_crash_not_a_finished_run():
    # ms-swift logs last_model_checkpoint in a finally path: a rank's traceback after it is the run failing
    # (modelscope/ms-swift#9892: the bar stopped at 39/247, the traceback cut before its first frame)
    from conftest import run_text
    text = ("Train:  16%|#####     | 39/247 [02:13<10:49,  3.12s/it][INFO:swift] last_model_checkpoint: None\n"
            "[INFO:swift] best_model_checkpoint: None\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/code/myenvs/ms-swift/swift/cli/sft\n')
    ids = [f.rule_id for f in run_text(text)]
    assert "GD326" in ids and "GD703" not in ids, ids


def test_a_stack_cut_while_a_distributed_checkpoint_plans_its_load_is_the_checkpoint():
    # fixtures/devlogs58 6128 (an RLinf issue): an FSDP actor resuming through torch.distributed.checkpoint, the Ray
    # actor's stack cut at the plans' reduce_scatter
    text = ("(Actor pid=9860) Traceback (most recent call last):\n"
            '(Actor pid=9860)   File "/w/rlinf/hybrid_engines/fsdp/strategy/base.py", line 257, in load_checkpoint\n'
            "(Actor pid=9860)     dcp.load(state_dict, checkpoint_id=path)\n"
            '(Actor pid=9860)   File "/v/lib/python3.11/site-packages/torch/distributed/checkpoint/state_dict_loader.py",'
            " line 229, in _load_state_dict\n"
            '(Actor pid=9860)     central_plan: LoadPlan = distW.reduce_scatter("plan", local_step, global_step)\n')
    f = _first(run_text(text))
    assert (f.category, f.title) == ("checkpoint-corrupt",
                                     "Loading a distributed checkpoint failed; the exception is not in the excerpt")
    assert "Missing key in checkpoint state_dict" in f.message


_NO_SYNC_STACK = (
    '[rank2]:   File "/home/u/train.py", line 862, in main\n'
    "[rank2]:     with accelerator.accumulate(unet):\n"
    '[rank2]:   File "/env/lib/python3.10/site-packages/accelerate/accelerator.py", line 973, in no_sync\n'
    "[rank2]:     with context():\n"
    '[rank2]:   File "/env/lib/python3.10/contextlib.py", line 135, in __enter__\n'
    "[rank2]:     return next(self.gen)\n")


def test_a_headerless_stack_cut_in_accelerates_no_sync_is_read_with_the_title_above_it():
    # fixtures/devlogs59 6224 (JyChen9811/FaithDiff): the issue body starts at a frame, no "Traceback" header; the title
    # names DeepSpeed ZeRO-2, whose engine refuses no_sync (deepspeed 0.16+ runtime/engine.py)
    titled = _first(run_text("DeepSpeed ZeRO stage 2 与 Accelerate 的梯度累积机制冲突\n" + _NO_SYNC_STACK))
    assert titled.category == "deepspeed-config-error" and titled.confidence == "possible"
    assert "GradientAccumulationPlugin(sync_each_batch=True)" in " ".join(titled.fix)
    # nothing names DeepSpeed: the stage, its candidate only considered
    bare = _first(run_text("my training fails\n" + _NO_SYNC_STACK))
    assert bare.category == "other" and "deepspeed-config-error" in bare.alternatives


def test_a_stack_cut_in_the_rendezvous_store_is_that_stage_with_its_port_and_address_readings(tmp_path):
    # huggingface/accelerate#2468 (dev54 5703): the same frames, here without the DistNetworkError line that ends them
    log = ("main_process_ip not working\n"
           'trainer-2:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/rendezvous.py", line 246, in '
           "_env_rendezvous_handler\n"
           "trainer-2:     store = _create_c10d_store(master_addr, master_port, rank, world_size, timeout, use_libuv)\n"
           'trainer-2:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/rendezvous.py", line 174, in '
           "_create_c10d_store\n"
           "trainer-2:     return TCPStore(\n")
    # pdsh's host label on the stack's lines only (the title above is the person's): taken off, the frames are read
    f = _first(_analyzed(tmp_path, log))
    assert "rendezvous" in f.title and "the exception is not in the excerpt" in f.title
    assert f.confidence == "possible" and "EADDRINUSE" in f.message
    assert any("master_port" in x for x in f.fix)


def test_a_stack_stopped_at_safetensors_safe_open_is_a_broken_weight_file_and_one_above_it_only_weight_loading():
    # safetensors' safe_open parses only the header (src/tensor.rs): stopped there, the file is not a whole one
    frames = ('  File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", line 4706, in '
              '_load_pretrained_model\n    state_dict = load_state_dict(shard_file, is_quantized=is_quantized)\n')
    at_open = ('  File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", line 555, in '
               'load_state_dict\n    with safe_open(checkpoint_file, framework="pt") as f:\n')
    f = _first(run_text("Traceback (most recent call last):\n" + frames + at_open))
    assert f.rule_id == "GD999" and f.category == "checkpoint-corrupt" and f.confidence == "possible"
    g = _first(run_text("Traceback (most recent call last):\n" + frames))
    assert g.category == "other" and "checkpoint-corrupt" in g.alternatives


def test_a_stack_cut_in_vllms_engine_core_start_after_the_kv_cache_was_measured_is_the_caches_sizing():
    # dev 4619: `Available KV cache memory: 13.69 GiB`, then `EngineCore failed to start` with a stack cut in
    # EngineCore.__init__: the weights were loaded, so what failed is the cache's sizing for max_model_len
    stack = ('(EngineCore_DP0 pid=1) ERROR 10-11 10:42:14 [core.py:708] Traceback (most recent call last):\n'
             '(EngineCore_DP0 pid=1) ERROR 10-11 10:42:14 [core.py:708]   File "/x/site-packages/vllm/v1/engine/core.py", '
             'line 699, in run_engine_core\n'
             '(EngineCore_DP0 pid=1) ERROR 10-11 10:42:14 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)\n'
             '(EngineCore_DP0 pid=1) ERROR 10-11 10:42:14 [core.py:708]   File "/x/site-packages/vllm/v1/engine/core.py", '
             'line 92, in __init__\n')
    measured = "(Worker pid=2) INFO 10-11 10:42:14 [gpu_worker.py:298] Available KV cache memory: 13.69 GiB\n"
    f = _first(run_text(measured + stack))
    assert f.category == "vllm-oom-or-kv-cache" and "Available KV cache memory: 13.69 GiB" in f.message
    assert f.fix[0].startswith("Lower --max-model-len")
    # without the measurement the start-up's stage is named, its two usual failures listed, the engine's category kept
    g = _first(run_text(stack))
    assert g.category == "vllm-engine-error" and "the start-up of vLLM's engine core" in g.message
