"""The line that failed, read (doctor/classify/failing_line.py): real frames and messages from dev-logs and torch's
own shape messages; each expected sentence checked by hand against the quoted line."""
from __future__ import annotations

from doctor.classify.failing_line import explain
from doctor.signals import ExceptionInfo, Frame, Where


def _exc(etype: str, message: str, code: str, path: str = "/x/site-packages/swift/trainers/grpo_trainer.py",
         func: str = "f") -> ExceptionInfo:
    return ExceptionInfo(etype, message, (Frame(path, 10, func, code),), Where("log.txt", 3), None, 3, "")


def test_assert_comparison_names_the_condition_and_the_message():
    # dev-log 002 (ms-swift _prepare_batch_inputs)
    got = explain(_exc("AssertionError", "Expected 32 inputs, got 4",
                       "assert len(inputs) == bs * gas, f'Expected {bs * gas} inputs, got {len(inputs)}'"))
    assert got == ["The failing line is `assert len(inputs) == bs * gas, f'Expected {bs * gas} inputs, got "
                   "{len(inputs)}'`: `len(inputs) == bs * gas` was false (the message gives 'Expected 32 inputs, got "
                   "4')."]


def test_assert_is_not_none_names_the_operand():
    # dev-log 054's statement, its source line as CPython prints it when the assert fits one line
    got = explain(_exc("AssertionError", "Failed to apply prompt replacement", "assert update_idx is not None"))
    assert got == ["The failing line is `assert update_idx is not None`: `update_idx` was None at this point."]


def test_none_operand_of_a_subscript_and_an_attribute():
    got = explain(_exc("TypeError", "'NoneType' object is not subscriptable", 'pixel = batch["images"][0]'))
    assert got == ['In `pixel = batch["images"][0]`, one of `batch`, `batch["images"]` was None.']
    got = explain(_exc("AttributeError", "'NoneType' object has no attribute 'generate'",
                       "outputs = self.llm.generate(prompts)"))
    assert got == ["In `outputs = self.llm.generate(prompts)`, `self.llm` was None."]


def test_none_given_to_next_and_to_a_for_loop():
    # devlogs9 1021 (Megatron-SWIFT's get_batch at the first evaluation); CPython: builtin_next's "is not an
    # iterator", PyObject_GetIter's "is not iterable"
    got = explain(_exc("TypeError", "'NoneType' object is not an iterator",
                       "return self._prepare_batch(next(data_iterator), vp_stage)"))
    assert got == ["In `return self._prepare_batch(next(data_iterator), vp_stage)`, `data_iterator` was None."]
    got = explain(_exc("TypeError", "'NoneType' object is not iterable", "for sample in batch['messages']:"))
    assert got == ["In `for sample in batch['messages']:`, `batch['messages']` was None."]
    # unpacking: no single operand to name
    assert explain(_exc("TypeError", "'NoneType' object is not iterable", "a, b = f(x)")) == []


def test_keyerror_in_a_reward_function_is_a_missing_dataset_column():
    got = explain(_exc("KeyError", "'solution'", 'sol = kwargs["solution"]', path="/home/u/rewards.py",
                       func="accuracy_reward"))
    assert len(got) == 1 and "no 'solution' column" in got[0]
    other = explain(_exc("KeyError", "'loss'", "return LOSS_MAPPING[name]", path="/x/swift/loss.py"))
    assert other == ["The failing line `return LOSS_MAPPING[name]` reads the key 'loss', which the mapping does not "
                     "hold."]


def test_keyerror_of_a_key_read_from_another_mapping_names_both():
    # devlogs38 4113 (axolotl prompt_strategies/dpo/chat_template.py line 57, a line of a dict literal) and
    # LLaMA-Factory's aligner (`tag_mapping[message[dataset_attr.role_tag]]`, data/aligner.py convert_sharegpt)
    got = explain(_exc("KeyError", "'tool'", '"role": role_map[m[message_property_mappings["role"]]],',
                       path="/axolotl/prompt_strategies/dpo/chat_template.py"))
    assert got == ['The failing line `"role": role_map[m[message_property_mappings["role"]]],` looks up `role_map` '
                   'with the value of `m[message_property_mappings["role"]]`: that value was \'tool\', which `role_map` '
                   'has no entry for (most often a value of the data that the code or its configuration does not map).']
    got = explain(_exc("KeyError", "'observation'", "role = tag_mapping[message[dataset_attr.role_tag]]"))
    assert len(got) == 1 and "`message[dataset_attr.role_tag]`" in got[0] and "'observation'" in got[0]
    # two separate lookups: which one failed cannot be told
    got = explain(_exc("KeyError", "'x'", "y = a[b[1]] + c[d[2]]"))
    assert got == ["The failing line `y = a[b[1]] + c[d[2]]` reads the key 'x', which the mapping does not hold."]


def test_shape_messages_give_their_sizes():
    got = explain(_exc("RuntimeError", "The size of tensor a (4096) must match the size of tensor b (2048) at "
                       "non-singleton dimension 1", "x = a + b"))
    assert got == ["Two tensors differ in dimension 1: 4096 against 2048."]
    got = explain(_exc("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (8x1024 and 2048x512)", "y = f(x)"))
    assert "inner sizes 1024 and 2048 differ" in got[0]


def test_unknown_location_is_a_shadowing_folder():
    got = explain(_exc("ImportError", "cannot import name 'GRPOTrainer' from 'trl' (unknown location)",
                       "from trl import GRPOTrainer", path="/home/u/train.py"))
    assert got and "folder named 'trl'" in got[0]


def test_nothing_to_read_gives_nothing():
    assert explain(_exc("RuntimeError", "CUDA error: an illegal memory access was encountered", "")) == []
    assert explain(_exc("AssertionError", "", "")) == []


def test_a_lora_wrapped_weight_name_sent_to_the_engine():
    # dev11 1324: verl's FSDP-vLLM sharding manager pushing LoRA weights into vLLM's Qwen2Model.load_weights
    got = explain(_exc("KeyError", "'layers.0.self_attn.qkv_proj.base_layer.weight'", "param = params_dict[name]",
                       path="/x/site-packages/vllm/model_executor/models/qwen2.py", func="load_weights"))
    assert any("peft LoRA-wrapped model" in g for g in got)
    assert not any("LoRA" in g for g in explain(_exc("KeyError", "'layers.0.mlp.weight'", "param = params_dict[name]",
                                                     func="load_weights")))


def test_the_operand_a_division_by_zero_met():
    # devlogs3 231 (verl dp_critic.py:54: the assert's own modulo divided by zero)
    got = explain(_exc("ZeroDivisionError", "integer division or modulo by zero",
                       "assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0"))
    assert got == ["In `assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0`, "
                   "`self.config.ppo_micro_batch_size` was 0: the division has nothing to divide by."]
    # devlogs5 520 (ms-swift torch_utils.py:65, a line inside an f-string spread over lines: read without ast)
    got = explain(_exc("ZeroDivisionError", "float division by zero", "f'[{100 * n_grads / n_params:.4f}%]), '"))
    assert got == ["In `f'[{100 * n_grads / n_params:.4f}%]), '`, `n_params` was 0: the division has nothing to divide "
                   "by."]
    got = explain(_exc("ZeroDivisionError", "division by zero", "self.avg /= len(self.items)"))
    assert got == ["In `self.avg /= len(self.items)`, `self.items` was empty (`len(self.items)` is 0): the division has "
                   "nothing to divide by."]
    got = explain(_exc("ZeroDivisionError", "division by zero", "r = a / b + c // d"))
    assert got == ["In `r = a / b + c // d`, one of `b`, `d` was 0."]
    # a % after a string formats it: no division there
    assert explain(_exc("ZeroDivisionError", "division by zero", "msg = 'x=%d' % x")) == []


def test_the_sequence_an_index_ran_past():
    # devlogs26 3224 (DeepSpeed hybrid_engine.py: a statement continued on the next line, read without ast)
    code = "if(self._inference_containers[0].module.attention.attn_qkvw is not None and \\"
    got = explain(_exc("IndexError", "list index out of range", code))
    assert got == [f"In `{code}`, `self._inference_containers` was empty."]
    got = explain(_exc("IndexError", "list index out of range", 'x = batch["ids"][i]'))
    assert got == ['In `x = batch["ids"][i]`, `batch["ids"]` holds fewer items than the index `i` asks for.']
    assert explain(_exc("IndexError", "list index out of range", "y = items[:3]")) == []   # a slice never raises it
    # torch's own index errors are not CPython's sequence wording
    assert explain(_exc("IndexError", "index 5 is out of bounds for dimension 0 with size 3", "t[5]")) == []


def test_an_unpacking_of_another_length():
    # devlogs30 3487 (a model call that returns another number of values than the script unpacks)
    got = explain(_exc("ValueError", "too many values to unpack (expected 2)", "logits, _ = model(inputs)"))
    assert got == ["In `logits, _ = model(inputs)`, `model(inputs)` gave more values than the 2 names `logits, _` "
                   "take: it returns something other than what this line was written for (a function whose result "
                   "changed between releases, or an object of another kind)."]
    got = explain(_exc("ValueError", "not enough values to unpack (expected 3, got 2)", "for a, b, c in pairs:"))
    assert got == ["In `for a, b, c in pairs:`, an item of `pairs` held fewer values (2) than the 3 names `a, b, c` "
                   "take: its items are not what this loop was written for (data of another shape, or a function "
                   "whose result changed between releases)."]


def test_an_operand_of_a_type_the_operator_refuses():
    # CPython Objects/abstract.c binop_type_error, Objects/object.c do_richcompare
    got = explain(_exc("TypeError", "unsupported operand type(s) for +: 'NoneType' and 'int'", "total = self.max_length + 1"))
    assert got == ["In `total = self.max_length + 1`, `self.max_length` was None, which `+` cannot take: a value left "
                   "unset (a setting with no default, or a function that returned nothing)."]
    got = explain(_exc("TypeError", "'<' not supported between instances of 'int' and 'NoneType'",
                       "if step < args.max_steps:"))
    assert got[0].startswith("In `if step < args.max_steps:`, `args.max_steps` was None, which `<` cannot take")
    got = explain(_exc("TypeError", "unsupported operand type(s) for *: 'int' and 'str'", "n = bs * args.gas"))
    assert got == ["In `n = bs * args.gas`, `bs` was an int and `args.gas` a str, which `*` cannot combine."]
    got = explain(_exc("TypeError", "unsupported operand type(s) for +=: 'NoneType' and 'int'", "self.count += 1"))
    assert got[0].startswith("In `self.count += 1`, `self.count` was None")
    # two uses of the operator: which one met the None is not told
    assert explain(_exc("TypeError", "unsupported operand type(s) for +: 'NoneType' and 'int'", "x = a + 1 + b")) == []


def test_int_of_an_option_that_is_none_names_the_option_and_places_an_argument_error():
    from conftest import run_text

    from doctor.classify.failing_line import unset_option
    msg = "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"
    e = _exc("TypeError", msg, "output_length=int(args.output_length),")
    assert explain(e) == ["In `output_length=int(args.output_length),`, `args.output_length` was None: the option "
                          "`output_length` was not given and has no default."]
    assert unset_option(e) == "output_length"
    assert unset_option(_exc("TypeError", msg, "n = int(row[0])")) is None
    # in a session: the option is the fix, the category an argument error, and vLLM's copy of CPython's own wording
    # (its lfm2_vl.py raises the same words) is not named as where it was raised: the user's line raised it
    text = ('Traceback (most recent call last):\n  File "/home/u/axbench/scripts/train.py", line 495, in main\n'
            '    output_length=int(args.output_length),\n'
            "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'\n")
    f = run_text(text)[0]
    assert f.category == "argument-error-other"
    assert "Give the option `output_length` a value" in f.fix[0]
    assert "raises this wording" not in f.message
