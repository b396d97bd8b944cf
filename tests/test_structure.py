"""The structural classifier (doctor/classify/structure.py, doctor/data/structure.toml, GD990-GD996): an
exception no signature rule claims gets the category its structure shows; GD999 only when nothing does."""
from __future__ import annotations

import io

import pytest

from doctor.classify.component import component, deepest_library, package_of
from doctor.classify.structure import keyed, load
from doctor.engine import Session
from doctor.model import Severity
from doctor.registry import load_catalog
from doctor.signals import Frame
from doctor.sources.logtext import LineReader

SP = "/opt/conda/lib/python3.11/site-packages"



def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def tb(frames: list[tuple[str, int, str, str]], exc: str | None, rank: int = 0) -> str:
    p = f"[rank{rank}]: "
    out = [p + "Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append(f'{p}  File "{path}", line {line}, in {func}')
        out.append(f"{p}    {code}")
    if exc:
        out.append(p + exc)
    return "\n".join(out) + "\n"


def test_every_table_category_has_its_rule_and_every_entry_is_backed():
    structural = {m.category: m.id for m in load_catalog() if m.check and m.check.startswith("fallback.structural:")}
    entries = load()
    assert len(entries) >= 10
    for e in entries:
        assert e.category in structural, f"{e.id}: no GD99x rule has category {e.category}"
        assert e.backed_by and e.doc, e.id
        for rx in (e.message, e.not_message, e.code):   # compiled on first use at run time: a bad one fails here
            assert rx is None or rx.search("") is None or rx.pattern, e.id
    assert len({e.id for e in entries}) == len(entries)


def test_component_of_paths():
    assert package_of(f"{SP}/vllm/v1/engine/core.py") == "vllm"
    assert component("/home/u/ms-swift/swift/llm/base.py") == "ms-swift"
    assert component("/home/u/open-r1/src/open_r1/grpo.py") == "the script's code"
    frames = (Frame(f"{SP}/vllm/engine/llm_engine.py", 1, "step"), Frame("/usr/lib/python3.11/concurrent/futures/_base.py", 2, "result"))
    assert deepest_library(frames).path.endswith("llm_engine.py")  # plumbing (futures) skipped
    # torch.nn.Module's call path is plumbing too (a stack cut there stopped before the forward it calls), but not a
    # failure raised by module.py itself (its __getattr__, load_state_dict)
    called = (Frame(f"{SP}/vllm/model_executor/models/llama.py", 447, "sample"),
              Frame(f"{SP}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl"),
              Frame(f"{SP}/torch/nn/modules/module.py", 1562, "_call_impl"))
    assert deepest_library(called).path.endswith("llama.py")
    raised = (*called[:1], Frame(f"{SP}/torch/nn/modules/module.py", 1729, "__getattr__"))
    assert deepest_library(raised).func == "__getattr__"


def test_reward_function_that_raises_any_exception_is_reward_function_error():
    # trl 0.14's inline reward call (trainer/grpo_trainer.py), a user reward function below it raising ZeroDivisionError
    text = tb([(f"{SP}/trl/trainer/grpo_trainer.py", 799, "_generate_and_score_completions",
                "output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)"),
               ("/home/u/proj/rewards.py", 12, "accuracy_reward", "score = hits / len(gold)")],
              "ZeroDivisionError: division by zero")
    found = run(text)
    # GD606 reads the reward call structurally before the table (any exception type)
    assert found[0].rule_id == "GD606" and found[0].category == "reward-function-error"
    assert not [f for f in found if f.rule_id.startswith("GD99")]


def test_argument_validator_and_cut_argument_parsing_stack():
    text = tb([(f"{SP}/swift/llm/base.py", 31, "_parse_args", "args, remaining_argv = parse_args(self.args_class, args)"),
               (f"{SP}/transformers/hf_argparser.py", 358, "parse_args_into_dataclasses", "obj = dtype(**inputs)"),
               (f"{SP}/swift/llm/argument/rlhf_args.py", 297, "_check_grpo", "raise ValueError(")], None)
    found = run(text)  # no exception line: judged from the stack alone, at warning
    assert found[0].rule_id == "GD990" and found[0].severity == Severity.warning


def test_an_import_error_raised_by_a_validator_is_the_install_not_a_flag():
    # transformers 4.3x training_args.py _setup_devices raises ImportError when accelerate is too old (dev11 1307): the
    # raising file is an arguments file, the type says the install is at fault
    text = tb([(f"{SP}/transformers/training_args.py", 1672, "_setup_devices", "raise ImportError(")],
              "ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: Please run `pip install "
              "accelerate -U`")
    found = run(text)
    assert found[0].category == "import-or-dependency-error"
    text = tb([(f"{SP}/transformers/training_args.py", 1500, "__post_init__", "raise ValueError(")],
              "ValueError: --load_best_model_at_end requires the save and eval strategy to match")
    assert run(text)[0].category == "argument-error-other"


def test_frameless_exception_takes_the_stack_printed_beside_it():
    text = ("[rank0]: ValueError: some new check failed\n"
            + tb([(f"{SP}/swift/llm/base.py", 18, "__init__", "self.args = self._parse_args(args)"),
                  (f"{SP}/swift/llm/base.py", 30, "_parse_args", "args = parse_args(self.args_class, args)")],
                 None, rank=1))
    found = run(text)
    assert found[0].rule_id == "GD990" and found[0].evidence[0].line == 1


def test_vllm_engine_and_multimodal_by_innermost_library_frame():
    eng = tb([(f"{SP}/trl/trainer/grpo_trainer.py", 900, "_generate", "outputs = self.llm.generate(prompts)"),
              (f"{SP}/vllm/v1/worker/gpu_model_runner.py", 1500, "execute_model", "x = self.model(**inputs)")],
             "RuntimeError: something inside the engine")
    assert run(eng)[0].rule_id == "GD991"
    mm = tb([(f"{SP}/vllm/inputs/preprocess.py", 259, "_process_multimodal", "mm_input = mm_processor.apply("),
             (f"{SP}/vllm/multimodal/processing.py", 2004, "_apply_prompt_updates", "assert update_idx is not None")],
            "AssertionError: Failed to apply prompt replacement for mm_items['video'][0]")
    assert run(mm)[0].rule_id == "GD992"


def test_a_stack_cut_in_vllms_config_parsing_is_a_version_problem_and_a_bad_path_is_not():
    # the innermost frames of fixtures/devlogs16/1918 (ms-swift#8289): vLLM's ModelConfig reading config.json
    frames = [(f"{SP}/vllm/engine/arg_utils.py", 1329, "create_model_config", "return ModelConfig("),
              (f"{SP}/vllm/transformers_utils/config.py", 628, "get_config", "config_dict, config = config_parser.parse("),
              (f"{SP}/vllm/transformers_utils/config.py", 163, "parse", "config = config_class.from_pretrained(")]
    got = run(tb(frames, None))[0]
    assert (got.rule_id, got.category) == ("GD993", "import-or-dependency-error")
    assert "model_type" in got.message and "config.json" in got.title
    assert run(tb(frames, "RuntimeError: something inside the engine"))[0].category == "import-or-dependency-error"
    # the same frames raising on a path that is no model folder: the argument's, not the versions'
    bad = run(tb(frames[:2], "ValueError: Invalid repository ID or local directory specified: '/data/m'"))
    assert not bad or bad[0].category != "import-or-dependency-error"


def test_unsloths_trainer_copy_failing_on_a_config_field_is_an_unsloth_trl_mismatch():
    # the last frames of fixtures/devlogs16/1902 (unsloth GRPO after trl 0.19)
    frames = [(f"{SP}/transformers/trainer.py", 2245, "train", "return inner_training_loop("),
              ("/home/u/unsloth_compiled_cache/UnslothGRPOTrainer.py", 1572, "_generate_and_score_completions",
               "generation_kwargs.update(self.args.generation_kwargs)")]
    got = run(tb(frames, "TypeError: 'NoneType' object is not iterable"))[0]
    assert (got.rule_id, got.category) == ("GD993", "import-or-dependency-error")
    assert "Raised in unsloth" in got.message and "trl" in got.fix[0]
    # the same TypeError in the user's own script reading its own args is not a version clash
    own = [("/home/u/train.py", 12, "main", "kwargs.update(self.args.generation_kwargs)")]
    assert run(tb(own, "TypeError: 'NoneType' object is not iterable"))[0].category != "import-or-dependency-error"


def test_a_missing_fast_lora_attention_attribute_is_the_patching_librarys_version():
    # the title of fixtures/devlogs16/1904 (unsloth's Qwen3 GRPO notebook), printed with no stack
    got = run("RuntimeError: 'Qwen3Attention' object has no attribute 'apply_qkv'\n")[0]
    assert (got.rule_id, got.category) == ("GD993", "import-or-dependency-error")
    assert "unsloth" in got.fix[0]
    # another missing attribute of an attention class is not this patch
    other = run("AttributeError: 'Qwen3Attention' object has no attribute 'rotary_emb'\n")
    assert not other or "apply_qkv" not in other[0].message


def test_a_weight_name_keyerror_named_without_its_stack_is_vllms_loader_and_one_with_its_stack_is_read_by_it():
    # fixtures/devlogs16/1920: the issue title names the KeyError, the stack below stops in the trainer
    text = ("qwen3_vl.py has a problem with the 8b model, KeyError: 'blocks.0.mlp.gate_proj.weight'\n\n"
            + tb([(f"{SP}/transformers/trainer.py", 2674, "_inner_training_loop",
                   "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)")], None, rank=2))
    got = run(text)[0]
    assert (got.rule_id, got.category) == ("GD991", "vllm-engine-error")
    assert "load_weights" in got.message and "weight sync" in got.fix[0]
    # with its own stack in the user's code the key is the user's dict, not vLLM's loader
    own = run(tb([("/home/u/convert.py", 40, "main", "w = sd[name]")], "KeyError: 'layers.0.mlp.gate_proj.weight'"))
    assert not own or own[0].category != "vllm-engine-error"
    # a key that is no tensor name is not this
    plain = run("KeyError: 'input_ids'\n")
    assert not plain or plain[0].category != "vllm-engine-error"


def test_an_empty_zero3_partition_met_in_deepspeeds_backward_or_coordinator_is_the_zero3_setup():
    # the last frames of fixtures/devlogs16 1930 (open-r1 GRPO, accelerate -> DeepSpeed backward)
    backward = [(f"{SP}/accelerate/utils/deepspeed.py", 266, "backward", "self.engine.backward(loss, **kwargs)"),
                (f"{SP}/deepspeed/runtime/engine.py", 2216, "backward", "self.optimizer.backward(loss, retain_graph)"),
                (f"{SP}/torch/autograd/__init__.py", 200, "backward", "Variable._execution_engine.run_backward(")]
    got = run(tb(backward, "RuntimeError: The size of tensor a (0) must match the size of tensor b (5120) at "
                           "non-singleton dimension 1"))[0]
    assert (got.rule_id, got.category) == ("GD426", "deepspeed-config-error")
    assert "ZeRO-2" in got.fix[0] and "GatheredParameters" in got.fix[0]
    coord = [(f"{SP}/deepspeed/runtime/zero/partitioned_param_coordinator.py", 211, "record_parameters",
              "step_id = self.__step_id_module_fetched_for[sub_module.id].popleft()")]
    assert run(tb(coord, "IndexError: pop from an empty deque"))[0].category == "deepspeed-config-error"
    # the same size-0 mismatch in a run without DeepSpeed frames is no ZeRO-3 reading
    plain = [(f"{SP}/transformers/models/llama/modeling_llama.py", 300, "forward", "x = a + b")]
    got = run(tb(plain, "RuntimeError: The size of tensor a (0) must match the size of tensor b (5120) at "
                        "non-singleton dimension 1"))
    assert not got or got[0].category != "deepspeed-config-error"


def test_a_shape_error_in_a_vlm_position_index_is_a_multimodal_input_problem():
    # the last frames of unslothai/unsloth#5176 (trl GRPO on Qwen3-VL) and Liuziyu77/Visual-RFT#204 (Qwen2.5-VL)
    rope = tb([(f"{SP}/transformers/trainer.py", 3736, "training_step", "loss = self.compute_loss(model, inputs)"),
               (f"{SP}/transformers/models/qwen3_vl/modeling_qwen3_vl.py", 1117, "get_rope_index",
                "position_ids[:, batch_idx, attention_mask[batch_idx].bool()] = llm_positions.to(position_ids.device)")],
              "RuntimeError: shape mismatch: value tensor of shape [3, 454] cannot be broadcast to indexing result of "
              "shape [3, 447]")
    got = run(rope)[0]
    assert (got.rule_id, got.category) == ("GD992", "multimodal-image-error")
    assert "get_rope_index" in got.message and "image_grid_thw" in got.message
    # the same message from a text model's own indexing is not read as an image problem
    other = tb([(f"{SP}/transformers/models/llama/modeling_llama.py", 500, "forward", "x[mask] = y")],
               "RuntimeError: shape mismatch: value tensor of shape [3, 454] cannot be broadcast to indexing result of "
               "shape [3, 447]")
    assert run(other)[0].category != "multimodal-image-error"


def test_a_failed_divisibility_assertion_on_a_batch_quantity_is_batch_divisibility():
    # verl's start-up check and a GRPO trainer copied from trl 0.14 (both assert `A % B == 0` without a message)
    for path, func, code in ((f"{SP}/verl/trainer/ppo/ray_trainer.py", "_validate_config",
                              "assert real_train_batch_size % n_gpus == 0"),
                             ("/work/src/open_r1/trainer/grpo_trainer.py", "_prepare_inputs",
                              "assert len(prompts) % self.num_generations == 0")):
        got = run(tb([(path, 10, func, code)], "AssertionError"))[0]
        assert (got.rule_id, got.category) == ("GD996", "batch-divisibility"), code
        assert "to be a multiple of" in got.message
    # a divisibility of model dimensions is no batch problem
    heads = tb([(f"{SP}/transformers/models/x/modeling_x.py", 10, "__init__", "assert hidden_size % num_heads == 0")],
               "AssertionError")
    assert run(heads)[0].category != "batch-divisibility"


def test_signature_drift_and_library_attribute_are_version_clashes_but_builtin_attribute_is_not():
    assert run("TypeError: Foo.bar() got an unexpected keyword argument 'baz'\n")[0].rule_id == "GD993"
    assert run("AttributeError: 'GRPOConfig' object has no attribute 'top_k'\n")[0].rule_id == "GD993"
    # a class attribute (CPython type_getattro): trl's GRPOConfig reading a TrainingArguments field of another release
    assert run("AttributeError: type object 'TrainingArguments' has no attribute '_VALID_DICT_FIELDS'\n")[0].rule_id == "GD993"
    assert run("AttributeError: type object 'list' has no attribute 'foo'\n")[0].rule_id == "GD999"
    found = run("AttributeError: 'list' object has no attribute 'get'\n")
    assert found[0].rule_id == "GD999" and found[0].category == "other"


def test_unknown_library_exception_stays_gd999_and_names_the_component():
    text = tb([(f"{SP}/deepspeed/runtime/engine.py", 100, "step", "self.optimizer.step()")],
              "RuntimeError: a brand new failure")
    found = run(text)
    assert found[0].rule_id == "GD999"
    assert "DeepSpeed" in found[0].message


def test_an_unknown_exception_raised_in_a_library_other_than_the_framework_sends_the_search_to_that_library():
    # dev14 1611: bitsandbytes' int8 matmul under a LLaMA-Factory run
    text = tb([(f"{SP}/bitsandbytes/functional.py", 2341, "igemmlt", "raise Exception('cublasLt ran into an error!')")],
              "Exception: cublasLt ran into an error!")
    found = run(text)
    assert found[0].rule_id == "GD999"
    assert 'Search the bitsandbytes issues (the package that raised it) for the message: "cublasLt ran into an error!".' \
        in found[0].fix
    under_torch = run(tb([(f"{SP}/torch/nn/functional.py", 10, "linear", "return x")], "RuntimeError: a brand new one"))
    assert not any("the package that raised it" in line for line in under_torch[0].fix)


def test_exception_named_outside_a_traceback_is_judged_at_warning():
    found = run("FAILED tests/test_x.py::test_vlm[tiny] - TypeError: Trainer.f() got an unexpected keyword argument 'x'\n")
    assert found[0].rule_id == "GD993" and found[0].severity == Severity.warning
    # markdown bold around a pasted exception line is taken off by the paste normaliser (sources/paste.py): the line
    # is then an exception line like any other, judged at error (its words start vLLM's parallel_state.py
    # initialize_model_parallel template, "... x pipeline_model_parallel_size ({})": placed there, a layout of the flags)
    found = run("[rank1]: **RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4)**\n")
    assert found[0].rule_id == "GD990" and found[0].severity == Severity.error
    assert "world_size (8)" in found[0].message
    found = run("> OutOfMemoryError                          Traceback (most recent call last)\n")
    assert found[0].rule_id == "GD997" and found[0].category == "cuda-oom"


def test_a_log_line_that_only_mentions_an_error_type_is_not_an_exception():
    # nothing read as an exception: only GD330's "nothing was read" remains
    found = run("[INFO:swift] retrying after a ValueError in the data loader, attempt 2\n")
    assert [f.rule_id for f in found] == ["GD330"]


def test_a_frame_line_cut_at_the_start_of_a_paste_is_nobodys_code_but_a_relative_script_is_the_users():
    # a paste that starts inside the first frame's path (dev-log 034, MedicalGPT: `grpo_trainer.py", line 637,
    # in _prepare_inputs`): the file may be trl's, so it is not "your code"; `python train.py` prints the relative
    # path with its `File "` prefix, and that is the user's own script
    cut = ('grpo_trainer.py", line 637, in _prepare_inputs\n'
           "    mean_grouped_rewards = rewards.view(-1, self.num_generations).mean(dim=1)\n"
           "RuntimeError: shape '[-1, 6]' is invalid for input of size 1\n")
    f = run(cut)[0]
    assert "grpo_trainer.py (path cut)" in f.title and "script's code" not in f.title
    assert not any("outside the installed packages" in x for x in f.fix)
    own = run(tb([("train.py", 12, "<module>", "rewards.view(-1, 6)")],
                 "RuntimeError: shape '[-1, 6]' is invalid for input of size 1"))[0]
    assert any("the project's own code (train.py:12" in x for x in own.fix), own.fix


def test_an_exception_under_the_dataloader_fetch_is_a_sample_problem():
    frames = [(f"{SP}/transformers/trainer.py", 1787, "_inner_training_loop", "for step, inputs in enumerate(epoch_iterator):"),
              (f"{SP}/torch/utils/data/_utils/fetch.py", 54, "fetch", "return self.collate_fn(data)"),
              (f"{SP}/trl/trainer/utils.py", 471, "__call__", "for k in features[0].keys():")]
    found = run(tb(frames, "KeyError: 'chosen_input_ids'"))
    assert found[0].rule_id == "GD994" and found[0].category == "dataset-or-template-error"
    # the same KeyError raised outside the DataLoader is nobody's sample
    assert run(tb(frames[:1], "KeyError: 'chosen_input_ids'"))[0].rule_id == "GD999"


def test_an_exception_raised_by_the_dataset_loader_is_a_dataset_problem():
    frames = [("src/train_bash.py", 14, "<module>", "main()"),
              ("E:\\project\\LLaMA-Factory\\src\\llmtuner\\data\\loader.py", 189, "get_dataset",
               'raise RuntimeError("Cannot find valid samples")')]
    found = run(tb(frames, "RuntimeError: Cannot find valid samples, check `data/README.md` for the data format."))
    assert found[0].category == "dataset-or-template-error"
    assert run(tb(frames[:1], "RuntimeError: Cannot find valid samples"))[0].rule_id == "GD999"


def test_a_value_error_from_a_constructor_or_validator_is_an_argument_error():
    # accelerate 1.x utils/dataclasses.py: a plugin's setting refused before any work starts
    acc = tb([("train.py", 9, "<module>", "acc = Accelerator(mixed_precision='fp16')"),
              (f"{SP}/accelerate/accelerator.py", 425, "__init__", "raise ValueError(")],
             "ValueError: You cannot pass in both `dynamo_plugin` and `dynamo_backend`, please only pass in one.")
    assert run(acc)[0].category == "argument-error-other"
    # trl's trainer constructor compares GRPOConfig fields
    trl = tb([("grpo.py", 30, "<module>", "trainer = GRPOTrainer("),
              (f"{SP}/trl/trainer/grpo_trainer.py", 512, "__init__", "raise ValueError(")],
             "ValueError: `model` and `ref_model` cannot be the same object.")
    assert run(trl)[0].category == "argument-error-other"
    # the same exception type raised deep in a forward pass is not a settings check
    fwd = tb([("grpo.py", 30, "<module>", "trainer.train()"),
              (f"{SP}/trl/trainer/grpo_trainer.py", 900, "_compute_loss", "raise ValueError(")],
             "ValueError: `model` and `ref_model` cannot be the same object.")
    assert run(fwd)[0].category == "other"


def test_not_implemented_by_vllm_base_platform_means_no_device_platform_was_found():
    text = tb([(f"{SP}/vllm/engine/arg_utils.py", 1036, "create_engine_config",
                "if not current_platform.is_async_output_supported(self.enforce_eager):"),
               (f"{SP}/vllm/platforms/interface.py", 204, "is_async_output_supported", "raise NotImplementedError")],
              "NotImplementedError")
    first = run(text)[0]
    assert first.category == "import-or-dependency-error" and "UnspecifiedPlatform" in first.message


def test_a_frameless_exception_placed_by_its_wording_says_so_in_the_users_words():
    found = run("RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4) x "
                "pipeline_model_parallel_size (1)\n")
    assert "the message is vLLM's, raised in vllm/distributed/parallel_state.py" in found[0].message
    assert "index" not in found[0].message


def test_bitsandbytes_native_library_failures_are_dependency_problems_framed_or_not():
    # bitsandbytes 0.46.1 cextension.py get_native_library raises `Configured CUDA binary not found at {path}`;
    # 0.50.2 the same check as `No compatible CUDA binary found at {path}`; 0.46-0.50 BNBNativeLibrary.__getattr__
    # throw_on_call raises `Method '{name}' not available in CPU-only version of bitsandbytes.` (read in the wheels)
    lib = f"{SP}/bitsandbytes/libbitsandbytes_cuda128.so"
    for line in (f"RuntimeError: Configured CUDA binary not found at {lib}",
                 f"RuntimeError: No compatible CUDA binary found at {lib}",
                 "RuntimeError: Method 'cquantize_blockwise_fp16_nf4' not available in CPU-only version of "
                 "bitsandbytes. Reinstall with GPU support or use CUDA-enabled hardware."):
        found = run(line + "\n")[0]
        assert (found.category, found.title) == ("import-or-dependency-error",
                                                 "bitsandbytes could not load its native library"), line
        assert "bitsandbytes/cextension.py" in found.message
    framed = tb([(f"{SP}/bitsandbytes/functional.py", 1024, "quantize_4bit", "lib.cquantize_blockwise_fp16_nf4("),
                 (f"{SP}/bitsandbytes/cextension.py", 60, "throw_on_call", "raise RuntimeError(")],
                "RuntimeError: Method 'cquantize_blockwise_fp16_nf4' not available in CPU-only version of "
                "bitsandbytes. Reinstall with GPU support or use CUDA-enabled hardware.")
    assert run(framed)[0].category == "import-or-dependency-error"


def test_datasets_loading_and_casting_wordings_without_frames_are_dataset_problems():
    # read in the datasets wheels: 4.8.5 data_files.py resolve_pattern (`Unable to find '{pattern}' with any supported
    # extension {list(allowed_extensions)}`), arrow_reader.py BaseReader.read (`Instruction "{instructions}" corresponds
    # to no data!`), 4.0.0 arrow_dataset.py Column.__init__ (`Column '{column_name}' doesn't exist.`), table.py
    # cast_table_to_schema (CastError `Couldn't cast\n{schema}\nto\n{features}\nbecause column names don't match`: the
    # exception line holds only its first line) and array_cast (`Couldn't cast array of type {type} to {feature}`)
    for text in ("FileNotFoundError: Unable to find '/data/grpo/train.jsonl' with any supported extension ['csv', 'json']",
                 'ValueError: Instruction "train[:10%]" corresponds to no data!',
                 "ValueError: Column 'prompt' doesn't exist.",
                 "datasets.table.CastError: Couldn't cast\nprompt: string\nanswer: int64\nto\n"
                 "{'prompt': Value(dtype='string', id=None)}\nbecause column names don't match",
                 "TypeError: Couldn't cast array of type string to null"):
        found = run(text + "\n")[0]
        assert found.category == "dataset-or-template-error", text
    assert "datasets/arrow_reader.py" in run('ValueError: Instruction "train[:10%]" corresponds to no data!\n')[0].message
    assert run("ValueError: Column 'prompt' doesn't exist.\n")[0].title.endswith("ValueError in datasets")


def test_flash_attns_source_build_refusing_an_old_cuda_toolkit_is_a_dependency_problem():
    # flash-attn 2.7.4.post1-2.8.3.post2 sdist setup.py: `if bare_metal_version < Version("11.7"): raise
    # RuntimeError("FlashAttention is only supported on CUDA 11.7 and above.  Note: make sure nvcc has a supported
    # version by running nvcc -V.")` (11.6 in 2.1-2.6)
    for v in ("11.7", "11.6"):
        found = run(f"RuntimeError: FlashAttention is only supported on CUDA {v} and above.  Note: make sure nvcc has "
                    "a supported version by running nvcc -V.\n")[0]
        assert (found.category, found.title) == ("import-or-dependency-error",
                                                 "flash-attn's source build refused the CUDA toolkit it found")
        # setup.py runs in pip's build folder: no site-packages frame is made up for it, and no package 'setup.py'
        assert "setup.py's" not in found.message and "site-packages" not in found.message


def test_deepspeeds_no_sync_refusal_under_zero_2_is_a_deepspeed_configuration_problem():
    # deepspeed/runtime/engine.py DeepSpeedEngine.no_sync asserts that gradients are not partitioned; the line alone,
    # as yifan123/flow_grpo#72 posted it, and under accelerate's no_sync frames as public traces show it
    line = "AssertionError: no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage 2\n"
    found = run(line)[0]
    assert found.category == "deepspeed-config-error" and "4.48" in " ".join(found.fix)
    text = tb([(f"{SP}/accelerate/accelerator.py", 973, "no_sync", "with context():"),
               (f"{SP}/deepspeed/runtime/engine.py", 1995, "no_sync",
                "assert not self.zero_optimization_partition_gradients(), \\")],
              line.strip())
    assert run(text)[0].category == "deepspeed-config-error"


def test_transformers_wrapped_imports_and_unknown_models_are_dependency_problems():
    # utils/import_utils.py _LazyModule wraps the real import error, which follows on the next line
    lazy = run("RuntimeError: Failed to import transformers.modeling_utils because of the following error (look up to "
               "see its traceback):\nmodule 'torch.library' has no attribute 'register_fake'\n")[0]
    assert lazy.category == "import-or-dependency-error" and "Read the line under this one" in " ".join(lazy.fix)
    # the wrapper's raise site is shared by every error it wraps: no thread raised there is a known fix for this one
    # (the index holds unslothai/unsloth#2925, a flash-attn mismatch wrapped the same way), and its wording changing
    # between transformers releases says nothing about the cause
    assert not any(f.startswith("Known fix") or "may remove the failure" in f for f in lazy.fix)
    # AutoConfig / AutoTokenizer of a release older than the model
    arch = run("ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not "
               "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
               "version of Transformers is out of date.\n")[0]
    assert arch.category == "import-or-dependency-error" and "Upgrade transformers" in " ".join(arch.fix)
    tok = run("ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently imported.\n")[0]
    assert tok.category == "import-or-dependency-error"
    # older releases: a KeyError raised by the config mapping itself
    text = tb([(f"{SP}/transformers/models/auto/configuration_auto.py", 1039, "from_pretrained",
                "config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]"),
               (f"{SP}/transformers/models/auto/configuration_auto.py", 734, "__getitem__", "raise KeyError(key)")],
              "KeyError: 'qwen2_vl'")
    assert run(text)[0].category == "import-or-dependency-error"
    assert run("KeyError: 'qwen2_vl'\n")[0].category != "import-or-dependency-error"   # alone: any dict lookup


@pytest.mark.parametrize("line, category", [
    # transformers tokenization_utils_base.py: no chat template, no pad token, a ragged batch
    ("ValueError: Asking to pad but the tokenizer does not have a padding token. Please select a token to use as "
     "`pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)`", "dataset-or-template-error"),
    ("ValueError: Unable to create tensor, you should probably activate truncation and/or padding with "
     "'padding=True' 'truncation=True' to have batched tensors with the same length.", "dataset-or-template-error"),
    # DeepSpeed runtime/engine.py _configure_optimizer under ZeRO-Offload
    ("deepspeed.runtime.zero.utils.ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer "
     "(<class 'torch.optim.adamw.AdamW'>) which in most cases will yield poor performance. Please either use "
     "deepspeed's version of the optimizer or set zero_force_ds_cpu_optimizer to False", "deepspeed-config-error"),
    # peft tuners_utils.py BaseTuner.inject_adapter
    ("ValueError: Target modules {'query_key_value'} not found in the base model. Please check the target modules "
     "and try again.", "argument-error-other"),
    # flash-attn and vLLM on a GPU older than Ampere
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "argument-error-other"),
    ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-"
     "32GB GPU has compute capability 7.0.", "argument-error-other"),
    # the Hub unreachable, or a local path that does not exist taken for a repo id (transformers utils/hub.py,
    # huggingface_hub validate_repo_id): a download, never the rollout server
    ("OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached "
     "files and it looks like Qwen/Qwen2.5-7B is not the path to a directory containing a file named config.json.",
     "argument-error-other"),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
     "exceeded with url: /Qwen/Qwen2.5-7B/resolve/main/config.json", "argument-error-other"),
    ("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
     "'/data/models/qwen'. Use `repo_type` argument if needed.", "argument-error-other"),
    # torch's DDP reducer (torch/csrc/distributed/c10d/reducer.cpp): reentrant checkpointing, unused parameters
    ("RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following "
     "reasons: 1) Use of a module parameter outside the `forward` function.", "argument-error-other"),
    ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
     "indicates that your module has parameters that were not used in producing loss.", "argument-error-other"),
    # LLaMA-Factory's data and multimodal checks (data/parser.py, data/template.py, data/mm_plugin.py)
    ("ValueError: Undefined dataset my_data in dataset_info.json.", "dataset-or-template-error"),
    ("ValueError: Template qwen2_vl does not exist.", "dataset-or-template-error"),
    ("ValueError: Processor was not found, please check and update your processor config.", "multimodal-image-error"),
    # a CPU-only torch (torch/cuda/__init__.py _lazy_init); a quantized model on another device (accelerate)
    ("AssertionError: Torch not compiled with CUDA enabled", "import-or-dependency-error"),
    ("ValueError: You can't train a model that has been loaded in 8-bit precision on a different device than the "
     "one you're training on.", "argument-error-other"),
    # cuBLAS refusing a bfloat16 GEMM on a GPU without bfloat16
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, "
     "opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda)`", "argument-error-other"),
    # verl's resource pool, CUDA in a forked worker, an empty dataset, a run-time CUDA build without the toolkit
    ("ValueError: Total available GPUs 4 is less than total desired GPUs 8.", "argument-error-other"),
    ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
     "'spawn' start method", "argument-error-other"),
    ("ValueError: num_samples should be a positive integer value, but got num_samples=0", "dataset-or-template-error"),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
     "import-or-dependency-error"),
    # a driver older than torch's CUDA, an nvcc older than the GPU
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver "
     "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
     "import-or-dependency-error"),
    ("ValueError: Unsupported gpu architecture 'compute_120'", "import-or-dependency-error"),
    # transformers' Trainer: evaluation without data, a non-empty output dir, batches without labels
    ("ValueError: You have set `args.eval_strategy` to IntervalStrategy.STEPS but you didn't pass an `eval_dataset` to "
     "`Trainer`. Either set `args.eval_strategy` to `no` or pass an `eval_dataset`.", "argument-error-other"),
    ("ValueError: Trainer: evaluation requires an eval_dataset.", "argument-error-other"),
    ("ValueError: Output directory (/x/out) already exists and is not empty. Use --overwrite_output_dir to overcome.",
     "argument-error-other"),
    ("ValueError: The model did not return a loss from the inputs, only the following keys: logits. For reference, "
     "the inputs it received are input_ids,attention_mask.", "dataset-or-template-error"),
    # the same with labels among the inputs (unsloth#1899): the forward ignored them, not the data's fault
    ("ValueError: The model did not return a loss from the inputs, only the following keys: logits. For reference, "
     "the inputs it received are input_ids,attention_mask,labels.", "argument-error-other"),
    # two dtypes on one device (a CUDA bf16 input and a CUDA float32 weight) is no device mismatch
    ("RuntimeError: Input type (torch.cuda.BFloat16Tensor) and weight type (torch.cuda.FloatTensor) should be the same",
     "argument-error-other"),
    ("RuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16", "argument-error-other"),
    # ZeRO-3 with a device_map, a partitioned weight used outside the engine, FSDP's wrap class, bitsandbytes setup,
    # a quantized model that does not fit
    ("ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`.",
     "deepspeed-config-error"),
    ("RuntimeError: 'weight' must be 2-D", "deepspeed-config-error"),
    ("Exception: Could not find the transformer layer class QWenBlock in the model.", "argument-error-other"),
    ("RuntimeError: CUDA Setup failed despite GPU being available. Please run the following command to get more "
     "information: python -m bitsandbytes", "import-or-dependency-error"),
    ("ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the "
     "quantized model.", "cuda-oom"),
    # a column a reward function or the trainer reads by name, missing from the samples
    ("KeyError: 'solution'", "dataset-or-template-error"),
    # the tokenizer handed something that is not text: tokenizers' Rust check and transformers' (dev15 1804, 1806)
    ("TypeError: TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]",
     "dataset-or-template-error"),
    ("ValueError: text input must of type `str` (single example), `List[str]` (batch or single pretokenized example) "
     "or `List[List[str]]` (batch of pretokenized examples).", "dataset-or-template-error"),
    # a tokenized column a trainer reads (dev15 1808)
    ("KeyError: 'input_ids'", "dataset-or-template-error"),
    # vLLM's max_model_len above the one config.json gives (vllm#2565, dev15 1820)
    ("ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
     "(max_position_embeddings=8192 or model_max_length=None in model's config.json). This may lead to incorrect "
     "model outputs or CUDA errors.", "argument-error-other"),
    # ZeRO-1/2 optimizer shards loaded into another data-parallel size (Megatron-DeepSpeed#439, dev15 1822)
    ("deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world size of 4 but "
     "the current world size is 6. Automatic adjustment of ZeRO's optimizer state partitioning with a new world size "
     "is not currently supported.", "deepspeed-config-error"),
    # a Qwen-VL vision placeholder id looked up in input_ids and not found (ms-swift#5953, dev16 1916)
    ("ValueError: 151655 is not in list", "multimodal-image-error"),
    # accelerate's batch-size finder gives up after an out-of-memory error at every size (unsloth#2974, dev14 1603)
    ("RuntimeError: No executable batch size found, reached zero.", "cuda-oom"),
    # a tokenizer without a chat template: transformers' refusal and vLLM's (vllm#29849, dev14 1606 and 1621)
    ("ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
     "argument was passed! For information about writing templates and setting the tokenizer.chat_template "
     "attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating",
     "dataset-or-template-error"),
    ("ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
     "template if the tokenizer does not define one.", "dataset-or-template-error"),
    # from_pretrained's two ways of asking for bitsandbytes at once (LlamaFactory#4157, dev14 1627)
    ("ValueError: You can't pass `load_in_4bit`or `load_in_8bit` as a kwarg when passing `quantization_config` "
     "argument at the same time.", "argument-error-other"),
    # Triton's compiler failing on a kernel (unsloth#2947, dev14 1604)
    ("RuntimeError: PassManager::run failed", "import-or-dependency-error"),
    # a multimodal template reading its processor's parts from None (llamafactory#6965, #6941)
    ("AttributeError: 'NoneType' object has no attribute 'image_processor'", "import-or-dependency-error"),
    # accelerate's FSDP auto-wrap naming a class the model lacks, old and new wording (axolotl#394, bcembedding#66)
    ("Exception: Could not find the transformer layer class to wrap in the model.", "argument-error-other"),
    ("ValueError: Could not find the transformer layer class LlamaDecoderLayer in the model.", "argument-error-other"),
    # torch FSDP's NO_SHARD with a CPU-offloaded full state dict (torch _unshard_param_utils.py)
    ("NotImplementedError: offload_to_cpu=True and NO_SHARD is not supported yet", "argument-error-other"),
    # ms-swift 2.x inference with no room left for new tokens (swift/llm/utils/utils.py inference)
    ("AssertionError: Current sentence length exceedsthe model max_length: 2048", "argument-error-other"),
    # torch 2.6's weights_only default
    ("_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have two "
     "options, do those steps only if you trust the source of the checkpoint.", "import-or-dependency-error"),
])
def test_library_messages_that_name_their_failure_without_frames(line, category):
    found = run(line + "\n")
    assert found[0].category == category and found[0].rule_id != "GD999"


def test_an_exception_while_the_chat_template_renders_is_a_template_problem():
    text = tb([(f"{SP}/transformers/tokenization_utils_base.py", 1600, "apply_chat_template",
                "rendered_chat = compiled_template.render("),
               (f"{SP}/jinja2/environment.py", 1301, "render", "self.environment.handle_exception()"),
               ("<template>", 1, "top-level template code", "")],
              "jinja2.exceptions.UndefinedError: 'dict object' has no attribute 'content'")
    assert run(text)[0].category == "dataset-or-template-error"
    unset = tb([(f"{SP}/transformers/tokenization_utils_base.py", 1780, "get_chat_template", "raise ValueError(")],
               "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no "
               "template argument was passed!")
    assert run(unset)[0].category == "dataset-or-template-error"


def test_an_entry_with_its_own_verify_line_replaces_the_rules(tmp_path):
    from doctor.analyze import analyze
    p = tmp_path / "log.txt"
    p.write_text('  File "/data/j/RAGEN/verl/workers/critic/dp_critic.py", line 54, in __init__\n'
                 '    assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0\n'
                 'ZeroDivisionError: integer division or modulo by zero\n')
    first = analyze([str(p)]).findings[0]
    assert first.rule_id == "GD996"
    assert first.verify.startswith("the workers start") and "reshape" not in first.verify


def test_an_unknown_llamafactory_template_says_the_installed_release_lacks_it_not_the_dataset_entry():
    frames = [("/root/LLaMA-Factory/src/llamafactory/train/tuner.py", 50, "run_exp", "run_sft(...)"),
              (f"{SP}/llamafactory/data/template.py", 547, "get_template_and_fix_tokenizer",
               'raise ValueError(f"Template {data_args.template} does not exist.")')]
    found = run(tb(frames, "ValueError: Template qwen3 does not exist."))
    assert found[0].category == "dataset-or-template-error"
    assert "registers no chat template of that name" in found[0].message
    assert "dataset_info.json" not in found[0].message
    assert any("git pull, then pip install -e ." in line for line in found[0].fix)
    undefined = run(tb(frames[:1] + [(f"{SP}/llamafactory/data/parser.py", 110, "get_dataset_list",
                                      'raise ValueError(f"Undefined dataset {name} in {DATA_CONFIG}.")')],
                       "ValueError: Undefined dataset my_set in dataset_info.json."))
    assert "dataset_info.json" in undefined[0].message and "chat template" not in undefined[0].message


def test_an_exception_pasted_into_a_chinese_sentence_without_a_space_is_read():
    for text in ("chatglm2qlora微调显示ValueError: Target modules [] not found in the base model. Please check the "
                 "target modules and try again.啥原因？\n",
                 "我遇到了这个错误：ValueError: Target modules [] not found in the base model. Please check the target "
                 "modules and try again.\n"):
        found = run(text)
        assert found and found[0].category == "argument-error-other", [(f.rule_id, f.category) for f in found]
    # an ASCII word glued to the type is not a separate exception name ("MyValueError" is its own class)
    assert not [f for f in run("raised MyCustomValueError: nothing\n") if f.rule_id == "GD990"]


def test_an_exception_quoted_in_a_sentence_ends_at_its_quote():
    # dev11 1314 (verl's config read against an older yaml) and 1309 (a message pasted into a Chinese question)
    found = run('There are errors such as "omegaconf.errors.ConfigAttributeError: Key \'launch_reward_fn_async\' is '
                'not in struct." Many keys are not in the structure.\n')
    assert found[0].category == "argument-error-other"
    assert "`omegaconf.errors.ConfigAttributeError: Key 'launch_reward_fn_async' is not in struct.`" in found[0].message
    assert "Many keys" not in found[0].message
    found = run("我运行时出现这个错误ModuleNotFoundError: No module named 'open_r1.trainer.x'，请问是什么问题？\n")
    assert found[0].category == "import-or-dependency-error"
    assert "`open_r1.trainer` but found no `x`" in found[0].message and "请问" not in found[0].message


def test_a_divisibility_assertion_by_its_shape_and_by_its_message():
    # NeMo-RL batched_data_dict.py shard_by_batch_size (dev11 1328): `assert batch_size % shards == 0, (` and its message
    text = tb([("/app/nemo-rl/nemo_rl/distributed/batched_data_dict.py", 293, "shard_by_batch_size",
                "assert batch_size % shards == 0, (")],
              "AssertionError: Batch size (30) is not a multiple of shards (4)")
    f = run(text)[0]
    assert f.category == "batch-divisibility" and "in NeMo-RL" in f.title
    assert "the message gives 30 and 4 (30 % 4 = 2): the nearest multiples are 28 and 32" in f.message
    assert "`batch_size % shards == 0` was false" in f.message
    # the message alone (no source line printed): the message entry
    text = tb([("/app/x/sharding.py", 10, "split", "")], "AssertionError: Batch size (6) is not divisible by dp (4)")
    f = run(text)[0]
    assert f.category == "batch-divisibility" and "is not a multiple of" in f.verify


def test_paths_printed_relative_or_elided_name_their_package():
    # dev11 1324 (`/.../vllm/model_executor/...` typed by the user), 1325 (vLLM's worker prints `vllm/v1/...`)
    assert package_of("/.../vllm/model_executor/models/qwen2.py") == "vllm"
    assert package_of("vllm/v1/executor/multiproc_executor.py") == "vllm"
    assert package_of("verl/workers/rollout/vllm_rollout/utils.py") == "verl"
    assert package_of(".../trl/trainer/grpo_trainer.py") == "trl"
    assert package_of("/home/u/vllm_test/run.py") is None and package_of("my/vllm/a.py") is None
    assert package_of("train.py") is None


def test_a_row_asked_of_an_empty_dataset_is_a_dataset_failure():
    # datasets formatting.py _check_valid_index_key (dev12 1404, 1405): size 0 is an empty dataset or split
    found = run("数据处理后报错“IndexError: Invalid key: 0 is out of bounds for size 0”\n")
    assert found[0].category == "dataset-or-template-error"
    assert "size 0`" in found[0].message and "”" not in found[0].message.split("`")[1]
    # a key beyond a dataset that has rows is another failure (a stale index): not this entry
    other = run("IndexError: Invalid key: 120 is out of bounds for size 100\n")
    assert not other or other[0].category != "dataset-or-template-error"


def test_a_deepspeed_config_model_names_the_keys_it_refused():
    # dev12 1426 (pydantic v2, fp16 keys under bf16) and 1427 (pydantic v1, ZeRO++ keys on DeepSpeed 0.9.5)
    v2 = ("[rank3]: pydantic_core._pydantic_core.ValidationError: 2 validation errors for DeepSpeedBF16Config\n"
          "[rank3]: loss_scale\n[rank3]:   Extra inputs are not permitted [type=extra_forbidden, input_value=0]\n"
          "[rank3]: initial_scale_power\n[rank3]:   Extra inputs are not permitted [type=extra_forbidden]\n")
    f = run(v2)[0]
    assert f.category == "deepspeed-config-error"
    assert "Refused by DeepSpeedBF16Config: loss_scale, initial_scale_power." in f.message
    assert "fp16 section's loss-scaling keys" in f.message
    v1 = ("ValidationError: 2 validation errors for DeepSpeedZeroConfig\nzero_hpz_partition_size\n"
          "extra fields not permitted (type=value_error.extra)\nzero_quantized_gradients\n"
          "extra fields not permitted (type=value_error.extra)\n")
    f = run(v1)[0]
    assert f.category == "deepspeed-config-error" and "`ValidationError: 2 validation errors for DeepSpeedZeroConfig`" in f.message
    assert "zero_hpz_partition_size, zero_quantized_gradients" in f.message and "older than the config" in f.message


def test_a_raise_pasted_alone_is_read_as_its_exception():
    # dev12 1403: the author quoted open-r1's raise (`ValueError(f"Dataset Question Field Error: ...")`) as the error
    f = run('Error Encountered:\nValueError(f"Dataset Question Field Error: {prompt_column} is not supported.")\n')[0]
    assert f.category == "dataset-or-template-error"
    assert "vLLM" not in f.title and "vllm" not in f.message   # '{any} is not supported.' is no evidence of vLLM
    # a frame's source line that calls a constructor is code, not the exception
    text = tb([("/home/u/train.py", 10, "main", 'ValueError("bad value for the learning rate here")')],
              "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert "illegal memory access" in run(text)[0].message


def test_unsloths_compile_cache_that_fails_to_import_is_the_cache():
    # unsloth_zoo compiler.py create_new_function (devlogs11 1303): not a clash between two packages' versions
    text = tb([(f"{SP}/unsloth_zoo/compiler.py", 246, "create_new_function",
                'raise ImportError(f"Unsloth: Cannot import {location}")')],
              "ImportError: Unsloth: Cannot import unsloth_compiled_module_qwen2_vl")
    f = run(text)[0]
    assert f.category == "import-or-dependency-error"
    assert any("Delete the unsloth_compiled_cache folder" in x for x in f.fix)
    assert not any("Upgrade or pin the two packages" in x for x in f.fix)


def test_a_dataset_converter_or_prompt_strategy_of_a_framework_run_from_its_checkout_is_a_dataset_problem():
    # dev15 1809 (LLaMA-Factory's sharegpt aligner, its frame wrapped inside the line number) and 1826 (axolotl's
    # chat_template strategy under /workspace/axolotl/src, the exception in the issue's title above the cut stack)
    wrapped = ('[rank0]:   File "/home/x/LLaMA-Factory/src/llamafactory/data/aligner.py", line 15\n'
               "3, in convert_sharegpt\n"
               '[rank0]:     {"role": tag_mapping[message[dataset_attr.role_tag]], "content": message[da\n'
               "taset_attr.content_tag]}\n"
               "[rank0]: KeyError: 'user'\n")
    f = run(wrapped)[0]
    assert f.category == "dataset-or-template-error" and "aligner.py:153 in convert_sharegpt" in f.message
    titled = ('"KeyError: 0" when trying to fine-tune on a conversational dataset\n\nthe error:\n\n'
              '  File "/workspace/axolotl/src/axolotl/prompt_strategies/chat_template.py", line 418, in tokenize_prompt\n'
              "    tokenized_prompt = self._tokenize_single_prompt(\n")
    g = run(titled)[0]
    assert g.category == "dataset-or-template-error" and "in axolotl" in g.title


def test_a_weight_name_keyerror_at_params_dict_is_a_tensor_the_serving_class_lacks():
    # dev15 1818 (vllm-project/vllm thread, OCR-damaged: `vlm/`, `params_dict [name]`, `Im_head`)
    text = tb([("/x/site-packages/vlm/model_executor/models/gemma.py", 339, "load", "param = params_dict [name]")],
              "KeyError: 'Im_head.weight'")
    f = run(text)[0]
    assert f.category == "vllm-engine-error" and f.title == "The checkpoint has a tensor the serving model class does not define"
    # a KeyError for a column name at the same statement is not a weight name
    g = run(tb([(f"{SP}/vllm/model_executor/models/gemma.py", 339, "load_weights", "param = params_dict[name]")],
               "KeyError: 'prompt'"))[0]
    assert g.title != f.title


def test_a_deepspeed_config_value_of_the_wrong_type_is_said_as_a_value_not_a_misplaced_key():
    # dev15 1811 (LLaMA-Factory ZeRO-3 with DeepSpeed 0.15): transformers' `auto` fill writes a float bucket size
    log = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig\n"
           "stage3_prefetch_bucket_size\n"
           "  Input should be a valid integer, got a number with a fractional part [type=int_from_float, "
           "input_value=15099494.4, input_type=float]\n")
    f = run(log)[0]
    assert f.category == "deepspeed-config-error"
    assert "refused a value, not a key: stage3_prefetch_bucket_size = 15099494.4" in f.message
    assert "forbids keys" not in f.message and not any(x.startswith("Move each refused key") for x in f.fix)
    # an undeclared key keeps the key reading
    extra = run("pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig\n"
                "zero_hpz_partition_size\n"
                "  Extra inputs are not permitted [type=extra_forbidden, input_value=8, input_type=int]\n")[0]
    assert "forbids keys" in extra.message


def test_a_model_without_ms_swifts_own_attributes_is_an_argument_path_not_a_version_clash():
    # dev14 1614: swift export --merge_lora true on a --train_type full checkpoint
    text = tb([(f"{SP}/swift/llm/export/merge_lora.py", 38, "merge_lora",
                "additional_saved_files=model.model_meta.additional_saved_files)"),
               (f"{SP}/torch/nn/modules/module.py", 1931, "__getattr__", "raise AttributeError(")],
              "AttributeError: 'Qwen2Model' object has no attribute 'model_meta'")
    f = run(text)[0]
    assert f.category == "argument-error-other" and "merge_lora" in " ".join(f.fix)
    # another attribute through torch's __getattr__, in another package: not this reading
    g = run(tb([(f"{SP}/trl/trainer/grpo_trainer.py", 10, "f", "self.model.warnings_issued"),
                (f"{SP}/torch/nn/modules/module.py", 1931, "__getattr__", "raise AttributeError(")],
               "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'warnings_issued'"))[0]
    assert g.category != "argument-error-other"


def test_a_frameless_error_above_a_stack_cut_in_datasets_worker_pool_is_a_dataset_row():
    # dev16 1910 (LLaMA-Factory's `Converting format of dataset` with num_proc 16 on Windows, `KeyError：None`)
    text = ("报错KeyError：None\n"
            "Converting format of dataset (num_proc=16):   0%|          | 0/57 [00:33<?, ? examples/s]\n"
            "Traceback (most recent call last):\n"
            '  File "C:\\Users\\a\\envs\\llama\\lib\\site-packages\\multiprocess\\pool.py", line 125, in worker\n'
            "    result = (True, func(*args, **kwds))\n")
    assert run(text)[0].category == "dataset-or-template-error"


def test_an_attribute_missing_inside_unslothss_patch_code_is_a_version_mismatch():
    # dev16 1901: unsloth's for_training deletes an attribute the installed release does not set
    text = tb([("/root/test/unsloth_compiled_cache/UnslothSFTTrainer.py", 952, "__init__", "model.for_training()"),
               (f"{SP}/unsloth/models/llama.py", 2737, "for_training", "del model._unwrapped_old_generate"),
               (f"{SP}/torch/nn/modules/module.py", 2040, "__delattr__", "super().__delattr__(name)")],
              "AttributeError: _unwrapped_old_generate")
    f = run(text)[0]
    assert f.category == "import-or-dependency-error" and "unsloth" in f.title


def test_a_stack_cut_in_ms_swift_argument_setup_with_a_rollout_server_names_the_server_connection():
    # dev16 1915: swift rlhf --vllm_mode server, the trainer's stack cut inside parse_args_into_dataclasses
    text = ("Traceback (most recent call last):\n"
            f'  File "{SP}/swift/llm/base.py", line 31, in _parse_args\n'
            "    args, remaining_argv = parse_args(self.args_class, args)\n"
            f'  File "{SP}/transformers/hf_argparser.py", line 345, in parse_args_into_dataclasses\n'
            "    obj = dtype(**inputs)\n")
    cmd = "swift rlhf --rlhf_type grpo --use_vllm true --vllm_mode server --vllm_server_host 127.0.0.1"
    from conftest import run_text
    f = run_text(text, command=cmd)[0]
    assert f.confidence == "possible" and "_init_external_vllm" in f.message
    assert f.fix[0].startswith("Check the rollout server before the flags")
    plain = run(text)[0]  # no server configured: the flags reading stands
    assert plain.confidence == "likely" and "_init_external_vllm" not in plain.message


def test_the_other_ranks_are_called_consequences_only_where_the_log_shows_another_rank():
    # a one-rank paste (fixtures/logs/dev-035: only [rank4] lines) has no other rank to speak of
    text = tb([(f"{SP}/transformers/trainer.py", 2674, "_inner_training_loop", "x = self.training_step(model, inputs)"),
               ("/home/u/train.py", 40, "compute_loss", "rewards = rewards.view(-1, 8)")],
              "RuntimeError: shape '[-1, 8]' is invalid for input of size 17", rank=4)
    assert not any("Raised on rank" in x for f in run(text) for x in f.fix)
    text += "[rank1]: [E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout\n"
    assert any("Raised on rank(s) 4" in x for f in run(text) for x in f.fix)


def test_a_fused_moe_weight_name_is_a_weight_name_too():
    # the issue title of fixtures/devlogs17 2122 (vLLM 0.9.2, DeepSeek-V3.1 AWQ): vLLM's fused-MoE names end in w2_weight
    got = run("[Bug]: KeyError: 'model.layers.60.mlp.experts.w2_weight'\n")[0]
    assert got.category == "vllm-engine-error"
    assert run("KeyError: 'model.layers.60.mlp.experts.w13_weight_scale'\n")[0].category == "vllm-engine-error"


def test_a_check_that_only_one_value_is_tested_for_a_feature_is_an_option_combination():
    # the sentence of fixtures/devlogs17 2130 (verl PPO with multi-turn tools): raised by RayPPOTrainer._validate_config
    got = run("我遇到来自verl/trainer/ppo/ray_trainer.py第479行的AssertionError: only GRPO is tested for multi-turn with "
              "tool，请问有计划吗？\n")[0]
    assert (got.rule_id, got.category) == ("GD990", "argument-error-other")
    # an assertion about something else is not this
    other = run("AssertionError: only 3 of 8 ranks reached the barrier\n")
    assert not other or other[0].category != "argument-error-other"


def test_a_model_without_unsloths_vllm_engine_is_loaded_without_fast_inference():
    # the issue title of fixtures/devlogs17 2108, pasted without the exception's type
    got = run("'Qwen2VLForConditionalGeneration' object has no attribute 'vllm_engine'\n\nUncommented some vllm specific\n")
    assert (got[0].rule_id, got[0].category) == ("GD990", "argument-error-other")
    assert "fast_inference=True" in got[0].fix[0]


@pytest.mark.parametrize("key, title", [
    ("solution", "A sample lacks the column a reward function reads"),
    ("input_ids", "A sample lacks the tokenized or text column the trainer reads"),
    ("chosen", "A sample lacks the column of the trainer's data format"),
])
def test_a_missing_sample_column_is_said_for_what_reads_it(key, title):
    # a reward column is GRPO's; a tokenized column is a collator's, with no reward in the words (dev16 1808: an SFT run)
    got = run(tb([(f"{SP}/transformers/trainer.py", 2674, "_inner_training_loop", "batch = next(it)"),
                  ("/home/u/train.py", 12, "collate", f"x = row['{key}']")], f"KeyError: '{key}'"))[0]
    assert (got.category, got.title) == ("dataset-or-template-error", title)
    assert ("reward function" in got.message) == (key == "solution")


def test_unsloth_deleting_an_attribute_it_never_set_is_that_releases_bug():
    # the last frames of fixtures/devlogs16/1901 (unsloth 2025.2.12, unslothai/unsloth#1723)
    frames = [(f"{SP}/unsloth/models/llama.py", 2737, "for_training", "del model._unwrapped_old_generate"),
              (f"{SP}/torch/nn/modules/module.py", 2043, "__delattr__", "super().__delattr__(name)")]
    got = run(tb(frames, "AttributeError: _unwrapped_old_generate"))[0]
    assert got.title.startswith("unsloth deletes an attribute it never set") and "for_inference" in got.fix[0]
    # a missing attribute read (not deleted) in unsloth's code stays the version-mismatch reading
    read = [(f"{SP}/unsloth/models/llama.py", 900, "forward", "x = self.apply_qkv(self, h)")]
    assert "deletes" not in run(tb(read, "AttributeError: 'X' object has no attribute 'y'"))[0].title


def test_a_vllm_engine_failure_of_a_run_with_no_trainer_gets_vllm_serve_options():
    # vLLM serving on its own (its API server's frames, no trainer): no ms-swift or trl flags, no rollout words
    frames = [(f"{SP}/vllm/entrypoints/openai/api_server.py", 1100, "run_server", "async with build_async_engine_client("),
              (f"{SP}/vllm/v1/worker/gpu_model_runner.py", 1500, "execute_model", "x = self.model(**inputs)")]
    got = run(tb(frames, "RuntimeError: something inside the engine"))[0]
    assert got.rule_id == "GD991"
    text = " ".join(got.fix)
    assert "--enforce-eager" in text and "vllm_enforce_eager" not in text and "rollout" not in text


def test_unsloth_failing_to_patch_at_import_and_a_name_renamed_by_case_are_version_mismatches():
    # dev18 2203 (unsloth import, 'worked two days ago'): module-level frames of unsloth, raised in tokenizer_utils.py
    frames = [("/content/app.py", 10, "<module>", "from unsloth import FastLanguageModel"),
              (f"{SP}/unsloth/tokenizer_utils.py", 1039, "<module>",
               'raise RuntimeError(f"Unsloth: Please file a bug report! Error patching {trainer_name}")')]
    got = run(tb(frames, "RuntimeError: Unsloth: Please file a bug report! Error patching SFTTrainer"))[0]
    assert (got.category, got.title) == ("import-or-dependency-error", "unsloth could not patch trl / transformers at import")
    # unslothai/unsloth#3786: transformers 5 renamed PretrainedConfig to PreTrainedConfig
    got = run("NameError: name 'PreTrainedConfig' is not defined. Did you mean: 'PretrainedConfig'?\n")[0]
    assert got.category == "import-or-dependency-error" and "renamed" in got.title
    # a suggestion that is another name is a typo of the script, not a release
    other = run("NameError: name 'modle' is not defined. Did you mean: 'model'?\n")
    assert not other or "renamed" not in other[0].title


# A size mismatch printed without frames (an issue's title) is placed by what the run around it shows: the entries
# with `run_shows` (doctor/classify/run_context.py). Each test removes the fact and sees the reading go.
_MISMATCH = "RuntimeError: The size of tensor a (768) must match the size of tensor b (3072) at non-singleton dimension 1\n"


def _primary(text: str):
    found = [f for f in run(text) if f.severity >= Severity.warning]
    return found[0] if found else None


def test_size_mismatch_in_a_zero3_run_is_read_as_a_partitioned_weight_and_only_then():
    zero3 = "[INFO] [logging.py:96:log_dist] [Rank 0] Creating fp16 ZeRO stage 3 optimizer\n"
    f = _primary(_MISMATCH + zero3)
    assert (f.rule_id, f.category, f.confidence) == ("GD426", "deepspeed-config-error", "possible")
    assert "ZeRO stage 3 at line 2" in f.message and "GatheredParameters" in " ".join(f.fix)
    # the same exception with ZeRO-2: no ZeRO-3 reading, the fallback
    f = _primary(_MISMATCH + zero3.replace("stage 3", "stage 2"))
    assert f.rule_id == "GD999" and "ZeRO-3" not in f.title
    # a person's words count, glued to CJK ("在zero-stage 3下训练")
    f = _primary("Qwen在zero-stage 3下训练报错\n" + _MISMATCH)
    assert f.rule_id == "GD426" and "line 1" in f.message


def test_size_mismatch_while_a_deepspeed_checkpoint_loads_is_a_layout_change():
    loading = ("[INFO] [state_dict_factory.py:85:load] rank: 0 loading checkpoint: /ck/global_step10/"
               "zero_pp_rank_0_mp_rank_00_model_states.pt\n")
    f = _primary(loading + _MISMATCH)
    assert f.rule_id == "GD426" and "partitions do not fit this run" in f.title
    assert "data-parallel ranks" in f.fix[0] and "checkpoint being loaded at line 1" in f.message
    # DeepSpeed only named as installed (an environment report) is not DeepSpeed in the run
    f = _primary("deepspeed==0.16.4\nI resume from checkpoint-100\n" + _MISMATCH)
    assert f.rule_id == "GD999"


def test_unread_zero_stage_is_not_called_another_stage():
    # a config file whose name does not say its stage: the size-0 reading must not claim "not ZeRO-3"
    text = ("run sh: `torchrun --nproc_per_node 2 train.py --deepspeed ds.json`\n"
            "RuntimeError: The size of tensor a (0) must match the size of tensor b (24576) at non-singleton "
            "dimension 1\n")
    f = _primary(text)
    assert f.rule_id == "GD999", f
    assert "not ZeRO-3" not in f.message and "its stage is not in the log" in f.message


def test_api_mismatch_without_frames_in_an_unsloth_run_is_the_version_pairing_and_only_there():
    title = "[Bug] AttributeError: 'NoneType' object has no attribute 'absmax' when training with GRPOTrainer\n"
    f = _primary("from unsloth import FastLanguageModel\n" + title)
    assert (f.rule_id, f.category, f.confidence) == ("GD993", "import-or-dependency-error", "possible")
    assert "an unsloth run in what the inputs name" in f.message and "unsloth_zoo" in f.fix[0]
    # the same title from a run that names no unsloth: no pairing claimed
    f = _primary("from trl import GRPOTrainer\n" + title)
    assert f.rule_id == "GD999" and "unsloth" not in f.message


def test_max_of_nothing_is_zero3s_optimizer_without_trainable_parameters_only_in_zero3():
    # DeepSpeed stage3.py initialize_optimizer_states: max() over the partitioned parameter groups
    framed = tb([(f"{SP}/deepspeed/runtime/zero/stage3.py", 620, "initialize_optimizer_states",
                  "largest_numel = max([sum([p.ds_numel for p in psg]) for psg in self.fp16_partitioned_groups])")],
                "ValueError: max() arg is an empty sequence")
    f = _primary(framed)
    assert (f.rule_id, f.category) == ("GD426", "deepspeed-config-error") and "trainable" in f.title
    said = "采用zero3 deepspeed训练dpo报错\nValueError: max() arg is an empty sequence\n"
    assert _primary(said).rule_id == "GD426"
    # the same words without ZeRO-3: max() of nothing anywhere else is not this
    assert _primary(said.replace("zero3 ", "")).rule_id == "GD999"


def test_a_tokenizer_in_place_of_a_multimodal_processor_is_a_multimodal_failure():
    for exc in ("AttributeError: 'PreTrainedTokenizerFast' object has no attribute 'image_processor'",
                "TypeError: Unsloth: UnslothVisionDataCollator is only for image models!",
                "ValueError: Processor was not found, please check and update your model file."):
        f = _primary(exc + "\n")
        assert f.category == "multimodal-image-error", exc
        # LLaMA-Factory's own wording is placed by its raise site's entry first; the other two by this one
        assert "Processor was not found" in exc or "text tokenizer where a multimodal processor" in f.title, exc
    # another missing attribute of a tokenizer is not this
    f = _primary("AttributeError: 'PreTrainedTokenizerFast' object has no attribute 'apply_chat_templat'\n")
    assert f.category != "multimodal-image-error"


def test_cpythons_attribute_wording_in_a_title_without_its_type_is_read_as_one():
    f = _primary("Llama-3.2-11B-Vision--'MllamaImageProcessor' object has no attribute 'merge_size'\n"
                 "- Transformers version: 4.50.0\n")
    assert (f.category, f.confidence) == ("multimodal-image-error", "possible")
    assert "another model family" in f.title and "without the type's name" in f.message


def test_cpython_wordings_without_their_type_name_it_and_a_dataset_key_of_llamafactory_is_a_column():
    f = _primary("No module named 'swift.cli.main'问题\n")
    assert f.category == "import-or-dependency-error" and "ModuleNotFoundError message without the type" in f.message
    f = _primary("value = self.data[key] KeyError: 'response'\n")
    assert f.category == "dataset-or-template-error"
    # a key that is not a format's column stays unplaced
    assert _primary("value = self.data[key] KeyError: 'foo_bar'\n").rule_id == "GD999"


def test_a_librarys_whole_message_without_its_type_in_a_paste_is_read_as_its_exception():
    # peft tuners_utils BaseTuner._inject_adapter raises ValueError(f"Target modules {...} not found in the base
    # model. Please check the target modules and try again.") (ms-swift's copy is indexed too)
    said = ("My LoRA run fails:\nTarget modules {'q_projx'} not found in the base model. Please check the target "
            "modules and try again.\n")
    f = _primary(said)
    assert f is not None and f.category == "argument-error-other" and "ValueError" in f.message
    # a sentence that only resembles a refusal (no library's template): no exception made up (the words' own rule)
    f = _primary("I cannot find the target modules anywhere, please help\n")
    assert f.rule_id == "GD328" and "ValueError" not in f.message


def test_a_version_range_stated_in_the_message_is_the_fix():
    from doctor.classify.version_range import required_range
    assert required_range("Requires Flash-Attention version >=2.7.1,<=2.8.2 but got 2.8.3.") == \
        ("Flash-Attention", ">=2.7.1,<=2.8.2", "2.8.3")
    assert required_range("requires accelerate>=0.20.1 but found 0.19.0") == ("accelerate", ">=0.20.1", "0.19.0")
    assert required_range("requires a GPU with more memory") is None
    text = tb([(f"{SP}/xformers/ops/fmha/flash.py", 82, "<module>", "raise ImportError(")],
              "ImportError: Requires Flash-Attention version >=2.7.1,<=2.8.2 but got 2.8.3.")
    f = _primary(text)
    assert f.category == "import-or-dependency-error"
    assert f.fix[0].startswith("Install Flash-Attention within >=2.7.1,<=2.8.2 (the installed one is 2.8.3)")
    assert "pip install 'flash-attn>=2.7.1,<=2.8.2'" in f.fix[0]


def test_a_lazy_import_wrapping_deepspeeds_missing_cuda_home_on_one_line_is_read_by_what_it_wraps():
    f = _primary("RuntimeError: Failed to import trl.trainer.dpo_trainer because of the following error (look up to "
                 "see its traceback): CUDA_HOME does not exist, unable to compile CUDA op(s)\n")
    assert f.category == "import-or-dependency-error" and "no CUDA toolkit" in f.title
    assert "CUDA_HOME" in f.fix[0] and "version clash" not in f.title.lower()
    assert len(f.evidence) == 1  # the wrapper and what it wraps are one line: one evidence entry


def test_an_exception_named_in_the_title_above_a_cut_stack_is_the_reading_and_its_fix_comes_first():
    text = ('When passing model_ref to the DPOTrainer "A RuntimeError: Expected to mark a variable ready only once" '
            'is encountered.\nTraceback (most recent call last):\n'
            f'  File "{SP}/transformers/trainer.py", line 2704, in training_step\n'
            '    self.accelerator.backward(loss)\n')
    f = _primary(text)
    # the exception the title names, with the stack beside it: the structural table's DDP entry reads them together
    assert f.category == "argument-error-other" and f.confidence == "possible"
    assert "Expected to mark a variable ready only once" in f.message and "use_reentrant" in f.fix[0]
    assert f.evidence[0].line == 1
    # the same stack under a title that names no exception: no reading made up
    g = _primary("My DPO training fails.\n" + text.split("\n", 1)[1])
    assert not g.title.startswith("The title names")


def test_a_long_message_cut_short_is_placed_at_the_one_module_whose_template_it_starts():
    # vLLM 0.8-0.1x v1/worker/gpu_model_runner.py asserts `end_idx <= self.max_model_len` with "Sampled token IDs
    # exceed the max model length. Total number of tokens: {} > max_model_len: {}" (in _bookkeeping_sync or
    # execute_model, by release): the first sentence alone is a prefix of that template, not the whole message
    from doctor.classify.structure import site_frames
    from doctor.signals import ExceptionInfo, Where
    exc = ExceptionInfo("AssertionError", "Sampled token IDs exceed the max model length", (), Where("log.txt", 1),
                        None, 1, "AssertionError: Sampled token IDs exceed the max model length")
    frames = site_frames(exc)
    assert frames and frames[0].path.endswith("vllm/v1/worker/gpu_model_runner.py")
    found = run("AssertionError: Sampled token IDs exceed the max model length\n")
    assert found[0].category == "vllm-engine-error" and found[0].rule_id == "GD991"
    # a short cut says too little to place
    short = ExceptionInfo("AssertionError", "Sampled token IDs exceed", (), Where("log.txt", 1), None, 1,
                          "AssertionError: Sampled token IDs exceed")
    assert site_frames(short) == ()


def test_a_raise_site_reached_only_through_one_setting_names_that_setting():
    # transformers' length-grouped samplers are built only under args.group_by_length (fixtures/devlogs35/3816: DPO's
    # paired rows); trl's SFTTrainer._prepare_packed_dataloader raises only with packing (devlogs35/3815)
    found = run("ValueError: Can only automatically infer lengths for datasets whose items are dictionaries with an "
                "'input_ids' key.\n")[0]
    assert found.category == "argument-error-other" and "group_by_length=False" in " ".join(found.fix)
    found = run("ValueError: Error occurred while packing the dataset. Make sure that your dataset has enough samples "
                "to at least yield one packed sequence.\n")[0]
    assert found.category == "dataset-or-template-error" and "packing=False" in " ".join(found.fix)


def test_verl_batch_checks_and_a_quoted_assert_statement_are_configuration_problems():
    # verl's actor worker asserts its per-GPU mini-batch after normalization (fixtures/devlogs36/3927: a title)
    found = run("AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization\n")[0]
    assert found.category == "batch-divisibility" and "rollout.n" in " ".join(found.fix)
    # an assert statement quoted in a title after a label (devlogs36/3919): the AssertionError it raises
    found = run("Training Script: assert config.data.train_batch_size >= "
                "config.actor_rollout_ref.actor.ppo_mini_batch_size\n")[0]
    assert found.category == "argument-error-other" and "assert config.data.train_batch_size" in found.message
    # a sentence about asserts is none
    assert not any(f.category == "argument-error-other" for f in run("we assert nothing here, it just hangs\n"))


def test_the_first_line_of_a_message_that_goes_on_below_is_read_as_that_message():
    # transformers' trainer_config_finalize message without its ValueError, its values listed below (devlogs36/3903)
    text = ("The error I'm getting is:\n"
            "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:\n"
            "- ds train_batch_size=8 vs hf train_batch_size (calculated)=128\n")
    assert run(text)[0].category == "deepspeed-config-error"


def test_a_string_compared_with_a_number_inside_deepspeed_is_an_unfilled_auto():
    # deepspeed/runtime/engine.py `if self.gradient_clipping() > 0.0` with "auto" from an HF-style config
    # (deepspeedai/DeepSpeed#1270, fixtures/devlogs36/3904)
    text = tb([("train.py", 174, "train", "model.step()"),
               (f"{SP}/deepspeed/runtime/engine.py", 1257, "_take_model_step", "if self.gradient_clipping() > 0.0:")],
              "TypeError: '>' not supported between instances of 'str' and 'float'")
    found = run(text)[0]
    assert found.category == "deepspeed-config-error" and '"auto"' in " ".join(found.fix)
    # the same words raised in the user's own code are not DeepSpeed's config
    own = tb([("train.py", 10, "main", "if lr > 0.0:")], "TypeError: '>' not supported between instances of 'str' and 'float'")
    assert run(own)[0].category != "deepspeed-config-error"


def test_a_dataset_that_is_not_a_datasets_dataset_is_a_dataset_problem():
    # trl's dataset preparation calls dataset.map (huggingface/trl#465: a DataFrame; fixtures/devlogs36/3926: a list)
    for kind in ("list", "DataFrame", "CustomDataset"):
        found = run(f"AttributeError: '{kind}' object has no attribute 'map'\n")[0]
        assert found.category == "dataset-or-template-error" and "Dataset.from_list" in " ".join(found.fix)
    # a datasets class without the method is another problem (a streaming dataset), not this one
    assert run("AttributeError: 'IterableDataset' object has no attribute 'column_names'\n")[0].category \
        != "dataset-or-template-error"


def test_a_refusal_whose_raise_site_tests_zero3_is_a_setting_combination():
    # LLaMA-Factory 0.9 configure_quantization (the index's condition names is_deepspeed_zero3_enabled() and
    # is_fsdp_enabled()), printed without frames as fixtures/devlogs36/3916 shows it
    top = run("ValueError: DeepSpeed ZeRO-3 or FSDP is incompatible with PTQ-quantized models.\n")[0]
    assert (top.rule_id, top.category) == ("GD990", "argument-error-other")
    assert "is_deepspeed_zero3_enabled()" in top.message and "unquantized" in " ".join(top.fix)
    # the same wording without the refusal's words is not this entry's (its test alone does not make a refusal)
    other = run("ValueError: DeepSpeed ZeRO-3 or FSDP is fine with PTQ-quantized models.\n")
    assert not other or other[0].title != "ZeRO-3 / FSDP refused this way of loading the model"


def test_a_sentence_that_retypes_the_error_with_slips_still_finds_its_raise_site():
    # fixtures/devlogs36/3908: the type glued by a semicolon and misspelt, `Zero` typed `Zreo`, backticks as quotes
    line = ("deepspeed zero3训练方式，一直报错误:ValieError;DeepSpeed Zreo-3 is not compatible with "
            "'low_cpu_mem_usage=True' or with passing a 'device_map'.\n")
    top = run(line)[0]
    assert (top.rule_id, top.category, top.confidence) == ("GD990", "argument-error-other", "possible")
    assert "from_pretrained" in top.message


def test_an_exception_type_written_as_words_is_that_exception():
    # fixtures/devlogs31/3520: "value error: Target modules([...])not found in the base model" (peft's inject_adapter
    # ValueError, retyped with its spaces lost)
    top = run("value error: Target modules(['q_proj', 'k_proj', 'v_proj', 'o_proj'])not found in the base model\n")[0]
    assert (top.rule_id, top.category) == ("GD990", "argument-error-other")
    assert "ValueError: Target modules" in top.message
    from doctor.checks.fallback.named import exception_named_in
    from doctor.signals import LogLine, Where
    said = exception_named_in(LogLine("运行时报 runtime error：CUDA driver version is insufficient", "",
                                      Where("p", 1), None, 0))
    assert said is not None and said.type == "RuntimeError"
    # a few words after the colon are a remark, not a message (twelve characters at least)
    assert exception_named_in(LogLine("no value error: it just ran", "", Where("p", 1), None, 0)) is None
    # the name joined in lower case with a quoted key after it (devlogs40 4326: `使用cached dataset报错 keyerror "messages"`)
    said = exception_named_in(LogLine('使用cached dataset报错 keyerror "messages"', "", Where("p", 1), None, 0))
    assert (said.type, said.message) == ("KeyError", "'messages'")
    assert run('使用cached dataset报错 keyerror "messages"\n')[0].category == "dataset-or-template-error"
    # the words without a quoted name or a message: a remark
    assert exception_named_in(LogLine("I got a type error when running it", "", Where("p", 1), None, 0)) is None


def test_a_setting_left_unset_computed_with_is_an_argument_error():
    # axolotl-ai-cloud/axolotl#465's stack (utils/config.py normalize_config), and the message alone in a sentence as
    # fixtures/devlogs36/3909 quotes it
    out = run('Traceback (most recent call last):\n'
              '  File "/usr/axolotl/src/axolotl/utils/config.py", line 43, in normalize_config\n'
              '    cfg.batch_size // cfg.micro_batch_size\n'
              "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'\n")
    assert (out[0].rule_id, out[0].category, out[0].title) == (
        "GD990", "argument-error-other", "A setting left unset (None) is computed with")
    quoted = run("""we have error of "unsupported operand type(s) for %: 'int' and 'NoneType'" when missing "ppo_micro_batch_size" .\n""")
    assert quoted[0].category == "argument-error-other" and quoted[0].confidence == "possible"
    # a None operand in model code (no setting on the failing line) is not this entry's
    model = run('Traceback (most recent call last):\n'
                '  File "/x/model_builder.py", line 113, in forward\n'
                "    outputs['total_loss'] += weight * mask_loss\n"
                "TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'\n")
    assert not model or model[0].title != "A setting left unset (None) is computed with"


def test_an_interpreters_call_refusal_quoted_in_a_sentence_is_that_typeerror():
    # fixtures/devlogs37/4006: the message in full-width quotes after 报错, no exception name
    out = run('bash run_dpo.sh后发生报错："DPOTrainer.__init__() got an unexpected keyword argument '
              "'max_prompt_length'\"\n")
    assert out[0].category == "import-or-dependency-error"
    assert "TypeError: DPOTrainer.__init__() got an unexpected keyword argument 'max_prompt_length'" in out[0].message


def test_two_half_precisions_under_deepspeed_and_an_optimizer_resumed_for_other_parameters():
    # accelerate#3197 (fixtures/devlogs37/4021): BFloat16 != Half with a DeepSpeed config in the run
    ds = run("deepspeed_config_file: /home/user/ds_zero3_cpu_offload.config\n"
             "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Half\n")
    assert (ds[0].category, ds[0].title.split(":")[0]) == (
        "deepspeed-config-error", "bfloat16 and float16 in one matrix product")
    # without DeepSpeed the same pair is the run's own settings; float vs bfloat16 is a module left in float32
    plain = run("RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Half\n")
    assert plain[0].category == "argument-error-other"
    # torch's Optimizer.load_state_dict (fixtures/devlogs37/4024)
    resumed = run("ValueError: loaded state dict contains a parameter group that doesn't match the size of "
                  "optimizer's group\n")
    assert resumed[0].category == "argument-error-other" and "trainable" in resumed[0].title
    assert any("resume_from_checkpoint" in f for f in resumed[0].fix)


def test_a_stackless_exception_is_not_said_to_have_no_frames_when_the_log_shows_some():
    # fixtures/devlogs38/4113: the frame (pasted without its function) is written after the exception line: the
    # stack beside it places the exception, and its source line is read
    out = run("KeyError: 'tool'\n"
              'File "/axolotl/prompt_strategies/dpo/chat_template.py", line 57\n'
              '"role": role_map[m[message_property_mappings["role"]]],\n')
    assert "no stack frames" not in out[0].message.lower()
    assert "printed without its stack; the traceback beside it runs through axolotl" in out[0].message
    assert "looks up `role_map` with the value of" in out[0].message
    alone = run("ValueError: DeepSpeed ZeRO-3 or FSDP is incompatible with PTQ-quantized models.\n")
    assert "The log shows no traceback for it" in alone[0].message


def test_a_zero2_works_zero3_fails_comparison_places_an_unknown_failure_and_a_cut_stack():
    # devlogs40 4322 (a TypeError from torch's all_gather_into_tensor) and 4323 (a stack cut in a model forward called
    # while the samples are encoded), devlogs20 2512: the person's comparison of ZeRO stages
    said = "进行SFT训练过程中，deepspeed为zero2时候不报错，改成zero3就报错：\n"
    gather = tb([(f"{SP}/deepspeed/comm/torch.py", 210, "all_gather_into_tensor",
                  "return self.all_gather_function(output_tensor=output_tensor,"),
                 (f"{SP}/torch/distributed/distributed_c10d.py", 3836, "all_gather_into_tensor",
                  "work = group._allgather_base(output_tensor, input_tensor, opts)")],
                "TypeError: output tensor must have the same type as input tensor")
    top = run(said + gather)[0]
    assert (top.rule_id, top.category) == ("GD426", "deepspeed-config-error")
    assert "ZeRO-2 running where ZeRO-3 fails at line 1" in top.message
    cut = tb([(f"{SP}/swift/llm/utils/template.py", 420, "encode", "inputs_embeds = model.prepare_inputs_embeds(**d)"),
              (f"{SP}/torch/nn/modules/module.py", 1518, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)")],
             None)
    said = "执行--deepspeed default-zero2是可以正常运行，在尝试使用--deepspeed default-zero3时报错\n"
    assert run(said + cut)[0].category == "deepspeed-config-error"
    # no comparison (ZeRO-3 named alone), or the lower stage failing too: not placed by it
    assert run("training with zero3 fails:\n" + gather)[0].category != "deepspeed-config-error"
    assert run("zero2 OOM, zero3 hangs\n" + gather)[0].category != "deepspeed-config-error"
    assert run("I tried zero2 fine-tuning and zero3 fine-tuning\n" + gather)[0].category != "deepspeed-config-error"
    # a failure a rule knows keeps its rule
    oom = tb([(f"{SP}/torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)")],
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "79.15 GiB of which 1.02 GiB is free.")
    assert run("works fine with zero2 but zero3 fails\n" + oom)[0].category == "cuda-oom"


def test_a_name_error_raised_in_an_installed_librarys_code_is_a_dependency_failure():
    # huggingface/trl#518 (devlogs40 4301): trl's SFTTrainer uses PeftModel, bound only when peft imports
    stack = tb([("/content/train.py", 6, "<module>", "trainer = SFTTrainer("),
                (f"{SP}/trl/trainer/sft_trainer.py", 152, "__init__", "if isinstance(model, PeftModel):")],
               "NameError: name 'PeftModel' is not defined")
    top = run(stack)[0]
    assert (top.rule_id, top.category) == ("GD993", "import-or-dependency-error")
    assert "optional package" in top.message
    # the user's own script's NameError is a typo in it, not a dependency
    own = tb([("/content/train.py", 6, "<module>", "trainer = SFTTrainr(")], "NameError: name 'SFTTrainr' is not defined")
    assert run(own)[0].category != "import-or-dependency-error"


def test_a_key_missing_from_a_tokenizers_output_is_the_tokenizers_not_the_rows():
    # deepspeedai/DeepSpeed#3418 (devlogs40 4306): rich's box pasted from inside, its frame line folded after " in"
    paste = ("[BUG]KeyError: 'attention_mask'\n"
             "│   201 │   │   │   │   │   length = prompt_token[key_word].size()[-1]                             │\n"
             "│                                                                                                  │\n"
             "│ /home/u/anaconda3/lib/python3.10/site-packages/transformers/tokenization_utils_base.py:238 in │\n"
             "│ __getitem__                                                                                      │\n"
             "│                                                                                                  │\n"
             "│ ❱  238 │   │   │   return self.data[item]                                                        │\n")
    top = run(paste)[0]
    assert (top.category, top.title) == ("dataset-or-template-error", "The tokenizer's output has no such key")
    assert "tokenization_utils_base.py:238 in __getitem__" in top.message
    assert "shows no traceback" not in top.message
    # a padded batch without labels: the rows lacked them
    rows = paste.replace("'attention_mask'", "'labels'")
    assert run(rows)[0].title != "The tokenizer's output has no such key"


def test_a_standard_library_module_missing_is_never_a_pip_install():
    # unslothai/unsloth#1680 (devlogs41 4412): trl's GRPO import on Windows
    top = run("Failed to import trl.trainer.grpo_trainer because of the following error: No module named 'resource'\n")[0]
    assert top.category == "import-or-dependency-error"
    assert "POSIX systems only" in top.message and "on Windows" in top.message
    assert not any("pip install" in x for x in top.fix) and any("WSL2" in x for x in top.fix)
    built = run("ModuleNotFoundError: No module named '_lzma'\n")[0]
    assert "built or installed without it" in built.message and not any("pip install" in x for x in built.fix)
    # a package's module keeps its pip advice
    pkg = run("ModuleNotFoundError: No module named 'flash_attn'\n")[0]
    assert "standard library" not in pkg.message


def test_the_standard_library_entry_names_the_modules_the_boundary_knows():
    # one list in doctor/classify/boundary.py; the table's regex must name the same modules
    import re as _re

    from doctor.classify.boundary import _BUILD_OPTIONAL, _POSIX_ONLY
    entry = next(e for e in load() if e.id == "stdlib-module-missing")
    named = set(_re.search(r"\(\?:([^)]*)\)", entry.message.pattern).group(1).split("|"))
    assert named == set(_POSIX_ONLY) | set(_BUILD_OPTIONAL)


def test_one_class_name_from_two_packages_is_a_version_clash():
    # modelscope/ms-swift#9139 (devlogs42 4516): vLLM's get_hf_config checks against its vendored config class
    top = run("TypeError: Invalid type of HuggingFace config. Expected type: <class 'vllm.transformers_utils.configs."
              "qwen3_5.Qwen3_5Config'>, but found type: <class 'transformers.models.qwen3_5.configuration_qwen3_5."
              "Qwen3_5Config'>\n")[0]
    assert top.category == "import-or-dependency-error"
    # two different classes: the caller passed the wrong kind of object, not a version clash of one class
    other = run("TypeError: Invalid type of HuggingFace config. Expected type: <class 'transformers.models.llava."
                "configuration_llava.LlavaConfig'>, but found type: <class 'transformers.models.qwen2."
                "configuration_qwen2.Qwen2Config'>\n")[0]
    assert other.title != top.title


def test_a_raise_site_that_tests_the_device_map_for_offloaded_layers_is_the_loading_arguments():
    # huggingface/trl#1492 (devlogs41 4406): trl's value head refuses a model device_map="auto" offloaded
    top = run("ValueError: The model is offloaded on CPU or disk - CPU & disk offloading is not supported for ValueHead "
              "models.\n")[0]
    assert (top.rule_id, top.category) == ("GD990", "argument-error-other")
    assert "offloaded to CPU or disk" in top.title and any("hf_device_map" in x for x in top.fix)


def test_copies_of_one_check_in_several_packages_are_named_together_unless_the_log_picks_one():
    # devlogs9 1025 (a Firefly run): peft's wording, which ms-swift's copy of peft's tuner also holds
    top = run("ValueError: Target modules [] not found in the base model. Please check the target modules and try "
              "again.\n")[0]
    assert "raised by ms-swift and peft alike" in top.message
    # the message's own dotted module names the package (devlogs18 2211)
    lazy = run("RuntimeError: Failed to import transformers.modeling_utils because of the following error (look up to "
               "see its traceback):\n")[0]
    assert "transformers' _get_module raises it while handling" in lazy.message


def test_a_name_error_in_a_title_over_a_stack_cut_in_unsloths_compiled_trainer():
    # unslothai/unsloth#1771 (devlogs43 4606): CPython's NameError words retyped in the title, the stack cut in the
    # trainer copy unsloth generated
    paste = ("guided_decoding is not defined when using GRPOTrainer\n"
             "Traceback (most recent call last):\n"
             '  File "/root/train/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 731, in __init__\n'
             "    self.sampling_params = SamplingParams(guided_decoding = GuidedDecodingParams(backend = 'outlines'))\n")
    top = run(paste)[0]
    assert top.category == "import-or-dependency-error" and "NameError: guided_decoding is not defined" in top.message
    # words of prose are no NameError
    from doctor.checks.fallback.named import bare_wording
    assert bare_wording("the behaviour is not defined here") is None


def test_a_start_up_log_whose_author_says_it_failed_is_no_hang():
    # devlogs46 4910, 4912, 4929: ms-swift export runs whose paste stops in its start-up lines under a title that says
    # the export fails (the error not copied): no hang at start (GD320 was wrong at likely on four such pastes)
    paste = ("glm4_moe awq quantization isn't supported yet.\n"
             "run sh: `/usr/bin/python3.10 /x/ms-swift/swift/cli/export.py --model /m/GLM-4.5-Air --quant_method awq`\n"
             "[INFO:swift] Global seed set to 42\n"
             "[INFO:swift] args: ExportArguments(model='/m/GLM-4.5-Air', model_type='glm4_5')\n")
    assert not any(f.rule_id == "GD320" for f in run(paste))


def test_a_column_datasets_cannot_find_is_a_dataset_problem_not_an_argument_check():
    # datasets' _check_valid_column_key is named like a validator; the message is the data's (fixtures/devlogs50/5315)
    found = run("[rank1]: KeyError: 'Column length not in the dataset. Current columns in the dataset: []'\n")
    assert found[0].category == "dataset-or-template-error"
    assert found[0].title == "A column the code reads is not in the dataset"
    fmt = run("ValueError: Columns ['attention_mask'] not in the dataset. Current columns in the dataset: "
              "['text', 'meta', 'input_ids']\n")
    assert fmt[0].category == "dataset-or-template-error"


def test_an_installed_file_that_does_not_compile_is_the_install_not_the_users_code():
    chain = ('Traceback (most recent call last):\n'
             '  File "/home/u/train.py", line 1, in <module>\n    from unsloth import FastLanguageModel\n'
             f'  File "{SP}/unsloth/models/rl.py", line 372\n    except Exception as e:\n    ^\n'
             "IndentationError: expected an indented block after 'try' statement on line 371\n")
    found = run(chain)
    assert found[0].category == "import-or-dependency-error"
    assert found[0].title.startswith("A file of an installed package does not compile")
    own = ('Traceback (most recent call last):\n  File "/home/u/train.py", line 3\n    if x\n        ^\n'
           "SyntaxError: expected ':'\n")
    assert not run(own) or not run(own)[0].title.startswith("A file of an installed package")


def test_type_hints_hf_argparser_cannot_resolve_are_a_version_clash_for_a_packages_class_only():
    pkg = ("RuntimeError: Type resolution failed for <class 'llamafactory.hparams.training_args.TrainingArguments'>. "
           "Try declaring the class in global scope or removing line of `from __future__ import annotations` which "
           "opts in Postponed Evaluation of Annotations (PEP 563)\n")
    assert run(pkg)[0].category == "import-or-dependency-error"
    own = pkg.replace("llamafactory.hparams.training_args.TrainingArguments", "__main__.ScriptArguments")
    assert run(own)[0].category != "import-or-dependency-error"


def test_a_library_refusing_in_the_second_person_is_an_argument_error():
    said = ("ValueError: You passed `packing=False` to the SFTTrainer, but you didn't pass a `dataset_text_field` or "
            "`formatting_func` argument.\n")
    found = run(said)
    assert found[0].category == "argument-error-other"
    assert found[0].title == "A library refused the arguments it was passed"
    assert run("ValueError: You have no idea what went wrong here\n")[0].title != found[0].title


def test_lightnings_deepspeed_strategy_refusing_a_config_key_is_a_deepspeed_config_error():
    said = ("lightning.fabric.utilities.exceptions.MisconfigurationException: Do not set `gradient_accumulation_steps` "
            "in the DeepSpeed config as this will be set with the `accumulate_grad_batches` argument passed via the "
            "Lightning Trainer.\n")
    assert run(said)[0].category == "deepspeed-config-error"


def test_a_models_refusal_of_right_padding_under_flash_attention_is_an_argument_error():
    said = ("ValueError: You are attempting to perform batched generation with padding_side='right' this may lead to "
            "unexpected behaviour for Flash Attention version of Mistral. Make sure to  call `tokenizer.padding_side  "
            "= 'left'` before tokenizing the input.\n")
    assert run(said)[0].title == "A library refused the arguments it was passed"


def test_a_library_asking_the_tokenizer_for_a_removed_attribute_is_a_transformers_release_clash():
    chain = ('Traceback (most recent call last):\n'
             f'  File "{SP}/vllm/transformers_utils/tokenizer.py", line 99, in get_cached_tokenizer\n'
             '    tokenizer.all_special_tokens_extended)\n'
             f'  File "{SP}/transformers/tokenization_utils_base.py", line 1293, in __getattr__\n'
             '    raise AttributeError(f"{self.__class__.__name__} has no attribute {key}")\n'
             "AttributeError: Qwen2Tokenizer has no attribute all_special_tokens_extended\n")
    assert run(chain)[0].category == "import-or-dependency-error"
    own = chain.replace(f"{SP}/vllm/transformers_utils/tokenizer.py", "/home/u/train.py")
    assert run(own)[0].title != run(chain)[0].title


def test_a_string_method_asked_of_a_tokenizer_is_the_object_passed_for_its_path():
    said = "AttributeError: Qwen2Tokenizer has no attribute lower\n"
    found = run(said)
    assert found[0].category == "argument-error-other"
    assert found[0].title.startswith("A tokenizer object was passed")


# fixtures/devlogs58 6125 (a stanford_alpaca issue): resuming an FSDP run from a checkpoint whose pytorch_model.bin
# records tensors larger than the data it stores
_TORCH_LOAD = """Traceback (most recent call last):
  File "/home/u/.local/lib/python3.10/site-packages/transformers/modeling_utils.py", line 415, in load_state_dict
    return torch.load(checkpoint_file, map_location="cpu")
  File "/home/u/.local/lib/python3.10/site-packages/torch/serialization.py", line 809, in load
    return _load(opened_zipfile, map_location, pickle_module, **pickle_load_args)
  File "/home/u/.local/lib/python3.10/site-packages/torch/_utils.py", line 169, in _rebuild_tensor_v2
    tensor = _rebuild_tensor(storage, storage_offset, size, stride)
  File "/home/u/.local/lib/python3.10/site-packages/torch/_utils.py", line 148, in _rebuild_tensor
    return t.set_(storage._untyped_storage, storage_offset, size, stride)
RuntimeError: Trying to resize storage that is not resizable
"""


def test_a_tensor_larger_than_its_stored_data_under_torch_load_is_the_checkpoint():
    f = _primary(_TORCH_LOAD)
    assert (f.category, f.title) == ("checkpoint-corrupt", "A tensor in the checkpoint is larger than the data stored "
                                                           "for it")
    assert "FULL_STATE_DICT" in f.fix[0]
    # the same ATen refusal when a DataLoader stacks samples of different sizes into shared memory is no checkpoint's
    collate = _TORCH_LOAD.replace("torch/_utils.py\", line 148, in _rebuild_tensor",
                                  "torch/utils/data/_utils/collate.py\", line 141, in collate")
    assert _primary(collate).category != "checkpoint-corrupt"


def test_a_name_missing_in_unsloths_own_module_at_import_is_the_unsloth_zoo_pairing():
    # the frames of fixtures/devlogs66/6904 (unslothai/unsloth#2015: unsloth from git with --no-deps)
    frames = [("/content/train.py", 3, "<module>", "from unsloth import FastLanguageModel"),
              (f"{SP}/unsloth/models/rl_replacements.py", 236, "<module>",
               'grpo_compute_loss_slow = RL_REPLACEMENTS["grpo_compute_loss_slow"]')]
    got = run(tb(frames, "KeyError: 'grpo_compute_loss_slow'"))[0]
    assert (got.rule_id, got.category) == ("GD993", "import-or-dependency-error")
    assert "unsloth_zoo" in got.fix[0] and "restart" in got.fix[0]
    # the same KeyError from a function of unsloth running a step is not an import-time pairing
    later = [("/content/train.py", 30, "<module>", "trainer.train()"),
             (f"{SP}/unsloth/models/llama.py", 900, "LlamaModel_fast_forward", "x = kwargs['position_ids']")]
    assert "unsloth_zoo come from different releases" not in run(tb(later, "KeyError: 'position_ids'"))[0].title


def test_an_auto_class_given_another_kinds_configuration_is_an_argument_error():
    # hiyouga/LlamaFactory (dev42 4501): a LLaVA checkpoint exported through AutoModelForCausalLM, the person's thanks
    # on the next line (not part of the message)
    f = run("ValueError: Unrecognized configuration class <class 'transformers.models.llava.configuration_llava."
            "LlavaConfig'> for this kind of AutoModel: AutoModelForCausalLM.\n非常感谢！\n")[0]
    assert (f.category, f.confidence) == ("argument-error-other", "likely")
    assert "AutoModelForImageTextToText" in f.fix[0]


def test_a_message_on_several_lines_finds_its_raise_site_whole():
    # the message's second line (transformers' f-string goes on after "\n") joins the first for the raise-site lookup;
    # a log record or another exception after it does not
    from doctor.checks.fallback.structural import message_lines_after
    s = Session(load_catalog())
    text = ("ValueError: Unrecognized configuration class <class 'X'> for this kind of AutoModel: AutoModelForCausalLM.\n"
            "Model type should be one of BartConfig, BertConfig.\n"
            "[INFO|trainer.py:1] 2024-01-01 >> next\n")
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    exc = s.state.exceptions[0]
    assert message_lines_after(exc, s.state) == ["Model type should be one of BartConfig, BertConfig."]


def test_deepspeeds_failed_resume_is_a_checkpoint_without_its_latest_tag():
    # transformers integrations/deepspeed.py raises it when DeepSpeed's load_checkpoint found no `latest` file
    found = run("[WARNING] [engine.py:2690:load_checkpoint] Unable to find latest file at output/checkpoint-500/latest, "
                "if trying to load latest checkpoint please ensure this file exists or pass an explicit checkpoint tag "
                "when loading a checkpoint.\n"
                "ValueError: [deepspeed] failed to resume from checkpoint output/checkpoint-500\n")
    f = next(x for x in found if x.severity >= Severity.warning)
    assert f.category == "checkpoint-corrupt" and "latest" in f.fix[0]


def test_a_prompt_replacement_failure_names_the_caller_that_built_the_prompt():
    # vLLM's processor found no placeholder in the prompt ids: a trainer's template in a trainer's run, the caller's own
    # chat template in a serving or inference script
    from doctor.classify.mm_budget import account
    msg = "Failed to apply prompt replacement for mm_items['image'][0]"
    served = account(msg, [], None)
    assert "the caller's chat template" in served.why[0] and "trainer" not in " ".join(served.why + served.fix)
    trained = account(msg, [], "ms-swift")
    assert "the trainer's template" in trained.why[0] and "upgrade ms-swift and vLLM" in trained.fix[0]


def test_an_entry_keyed_on_the_message_wins_over_one_keyed_only_on_the_module_that_raised_it():
    # LLaMA-Factory's mm_plugin.py lives under data/, the folder its dataset-code entry covers; its own refusals
    # (`_validate_input`: "The number of images does not match the number of <image> tokens", "Processor was not
    # found") are the multimodal entry's, whatever the two entries' order in the file (dev 3453)
    text = tb([(f"{SP}/llamafactory/data/mm_plugin.py", 300, "_validate_input",
                'raise ValueError(f"The number of images does not match the number of {IMAGE_PLACEHOLDER} tokens in {messages}.")')],
              "ValueError: The number of images does not match the number of <image> tokens in [{'content': '', 'role': 'user'}].")
    assert run(text)[0].category == "multimodal-image-error"
    order = [keyed(e) for e in load()]
    assert order == sorted(order, reverse=True)   # every keyed entry before every unkeyed one
    # a KeyError of a role tag in the same folder stays the dataset's
    role = tb([(f"{SP}/llamafactory/data/aligner.py", 153, "convert_sharegpt",
                '{"role": tag_mapping[message[dataset_attr.role_tag]], "content": message[dataset_attr.content_tag]}')],
              "KeyError: 'user'")
    assert run(role)[0].category == "dataset-or-template-error"


def test_a_stack_cut_in_vllms_loader_under_a_trainers_weight_sync_is_the_releases_of_the_two_sides():
    # dev 1324 (verl's sharding manager) and 145 (trl vllm-serve's update_named_param): the trainer's names reach the
    # vLLM model class's load_weights, whose mapping is its release's
    sync = tb([("/root/verl/verl/workers/sharding_manager/fsdp_vllm.py", 168, "__enter__",
                "model.load_weights(updated_params)"),
               (f"{SP}/vllm/model_executor/models/qwen2.py", 515, "load_weights", "return loader.load_weights(weights)"),
               (f"{SP}/vllm/model_executor/models/utils.py", 196, "_load_module",
                "yield from self._load_module(prefix,")], None)
    f = run(sync)[0]
    assert f.rule_id == "GD249" and f.category == "vllm-version-incompatible"
    assert "from the checkpoint at start or from a trainer's weight sync" not in f.message  # the frames say which
    # the same loader reading a checkpoint at start: no trainer frame, the engine's own category
    disk = tb([(f"{SP}/vllm/model_executor/model_loader/loader.py", 400, "load_model",
                "model.load_weights(self._get_all_weights(model_config, model))"),
               (f"{SP}/vllm/model_executor/models/qwen2.py", 515, "load_weights", "return loader.load_weights(weights)")],
              None)
    assert run(disk)[0].category == "vllm-engine-error"


def test_the_frames_that_prove_a_weight_sync_are_the_ones_the_part_reader_knows():
    from doctor.classify.parts import _SYNC_WORDS
    entry = next(e for e in load() if e.id == "trainer-weight-sync-vllm-loader")
    assert set(entry.any_frame) <= set(_SYNC_WORDS)


def test_a_frameworks_own_load_model_is_no_vllm_engine_under_construction():
    # dev 5609: LLaMA-Factory's model/loader.py load_model, an SFT run's stack cut there, is the training model's load
    from doctor.checks.memory._oom import builds_vllm
    assert not builds_vllm(Frame("/x/LLaMA-Factory/src/llamafactory/model/loader.py", 190, "load_model"))
    assert builds_vllm(Frame(f"{SP}/vllm/worker/model_runner.py", 1000, "load_model"))
    assert builds_vllm(Frame(f"{SP}/trl/trainer/grpo_trainer.py", 600, "_prepare_vllm"))


def test_a_type_a_chinese_sentence_names_without_its_message_is_a_frameless_exception():
    # dev 4307 ("报错NotImplementedError，提示子类没有覆写父类方法" above a stack cut in model loading) and 4902
    # ("训练报错 ValueError remaining_argv" over a start-up log)
    cut = ("baichuan 13B SFT 报错NotImplementedError，提示子类没有覆写父类方法\n" + tb(
        [("/w/LLaMA-Efficient-Tuning-main/src/llmtuner/tuner/core/loader.py", 122, "load_model_and_tokenizer",
          "model = prepare_model_for_training(model, finetuning_args.finetuning_type) if is_trainable else model")],
        None))
    f = run(cut)[0]
    assert f.severity == Severity.error and "NotImplementedError" in f.message
    named = run("Qwen3-VL-Reranker-2B swift sft 训练报错 ValueError remaining_argv\n")[0]
    assert named.rule_id == "GD999" and "`ValueError`" in named.message
    # a generic RuntimeError named in a title says nothing; the whole exception printed later replaces a naming of
    # its type
    assert not [f for f in run("使用trl进行GRPO训练出现RuntimeError\n") if f.rule_id == "GD999"]
    whole = run("训练报错AssertionError\n" + tb([(f"{SP}/unsloth/models/vision.py", 439, "get_peft_model",
                                                  "assert x")], "AssertionError"))
    assert "vision.py:439" in whole[0].message


def test_a_model_that_returned_no_loss_is_told_by_the_inputs_the_message_lists():
    head = "ValueError: The model did not return a loss from the inputs, only the following keys: logits"
    without = run(head + ". For reference, the inputs it received are input_ids,attention_mask.\n")[0]
    given = run(head + ". For reference, the inputs it received are input_ids,attention_mask,labels.\n")[0]
    cut = run(head + "\n")[0]
    assert "reached the model without labels" in without.message
    # the log's own list holds labels: saying the batch had none would be false
    assert "without labels" not in given.message and "The batch had labels" in given.message
    assert given.category == "argument-error-other"
    # the list is cut: neither said as a fact, the end of the message named as what tells
    assert "Most often" in cut.message and "cut here" in cut.message and cut.category == "dataset-or-template-error"


def test_the_generic_way_to_read_a_refusal_is_said_only_when_the_run_gives_no_fix_of_its_own():
    # fixtures/devlogs 070 (ms-swift, vLLM 0.7.2): the sizes in the message give the fix (upgrade the pair together)
    got = run("[rank1]: RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4) x "
              "pipeline_model_parallel_size (1)\n")[0]
    assert got.rule_id == "GD990" and any("Upgrade vLLM and the trainer together" in f for f in got.fix)
    assert not any(f.startswith("Read the message") for f in got.fix)


def test_an_exception_without_a_message_is_not_searched_for_by_its_type_alone():
    stack = ('Traceback (most recent call last):\n  File "/x/site-packages/swift/llm/train/rlhf.py", line 10, in prepare\n'
             '    raise ValueError\nValueError\n')
    fix = [x for f in run(stack) for x in f.fix if x.startswith("Search the")]
    assert fix == ["Search the ms-swift issues for `ValueError` with the function that raised it (prepare)."]
    alone = " ".join(x for f in run("ValueError\n") for x in f.fix)
    assert 'for the message: "ValueError"' not in alone and "Read the lines just above `ValueError`" in alone
