"""doctor/classify/condition_words.py: a library's check said in words, and the ways out of it.

The conditions are the raise-site index's records of real sites (doctor/data/raise_sites.idx; the package and function
after each), as the reports of the development logs quoted them."""
from __future__ import annotations

import ast

import pytest

from doctor.classify.condition_words import plain, spoken, way_out


@pytest.mark.parametrize("condition, words", [
    # LLaMA-Factory hparams/parser.py _verify_model_args
    ("model_args.quantization_bit is not None and finetuning_args.finetuning_type != 'lora'",
     "`quantization_bit` is set and `finetuning_type` is not 'lora'"),
    # ms-swift argument check of sequence parallelism
    ("self.sequence_parallel_size > 1", "`sequence_parallel_size` is above 1"),
    # vLLM sampling_params.py SamplingParams._verify_args: "is set and is below 1" is "is below 1"
    ("self.max_tokens is not None and self.max_tokens < 1", "`max_tokens` is below 1"),
    ("self.use_vllm", "`use_vllm` is on"),
    # transformers tokenization_utils_base.py apply_chat_template: one setting read twice is said once
    ("chat_template is None and self.chat_template is None", "`chat_template` is not set"),
    ("self.stage == 'ppo' and self.reward_model_type == 'lora' and (self.finetuning_type != 'lora')",
     "`stage` is 'ppo' and `reward_model_type` is 'lora' and `finetuning_type` is not 'lora'"),
    ("self.loss_type not in ['grpo', 'bnpo']", "`loss_type` is not one of ('grpo', 'bnpo')"),
    ("a == 1 and (b > 2 or not self.c)", "`a` is 1 and (`b` is above 2 or `c` is off)"),
])
def test_checks_of_settings_against_literals_are_said_in_words(condition, words):
    assert plain(condition) == words


@pytest.mark.parametrize("condition", [
    # vLLM config: arithmetic between settings
    "world_size != tensor_model_parallel_size * pipeline_model_parallel_size",
    # transformers hf_argparser.py: a local list's truth is not a setting
    "not allow_extra_keys and unused_keys",
    # verl fsdp_workers.py: an object's private state
    "self._is_actor and self.config.actor.ppo_mini_batch_size <= 0",
    # calls and subscripts
    "low_cpu_mem_usage and is_deepspeed_zero3_enabled()",
    "name not in dataset_info",
    "x[0] > 1",
    "not valid python (",
])
def test_anything_else_is_left_to_the_quoted_source(condition):
    assert plain(condition) is None


def test_the_ways_out_name_what_to_set_and_skip_what_the_run_is_for():
    def ways(condition: str, settable: set[str]) -> list[str | None]:
        tree = ast.parse(condition, mode="eval").body
        parts = tree.values if isinstance(tree, ast.BoolOp) else [tree]
        return [way_out(t, settable) for t in parts]

    assert ways("model_args.quantization_bit is not None and finetuning_args.finetuning_type != 'lora'",
                {"quantization_bit", "finetuning_type"}) == ["leave `quantization_bit` unset",
                                                             "set `finetuning_type` to 'lora'"]
    # `==` is the run's purpose and `is None` names no value to set: no way out from them
    assert ways("self.stage == 'ppo' and self.steps is None", {"stage", "steps"}) == [None, None]
    assert ways("self.sequence_parallel_size > 1 and not self.use_vllm and self.packing",
                {"sequence_parallel_size", "use_vllm", "packing"}) == [
        "set `sequence_parallel_size` to 1 or less", "turn `use_vllm` on", "turn `packing` off"]
    assert ways("self.loss_type not in ('grpo', 'bnpo')", {"loss_type"}) == ["set `loss_type` to one of ('grpo', 'bnpo')"]
    # a setting a person does not set (a local of the library) gives no way out
    assert ways("batch_size == 0 and micro_batch <= 0", set()) == [None, None]


def test_settings_are_spoken_without_the_object_holding_them():
    assert spoken("self.per_device_train_batch_size * num_processes") == "per_device_train_batch_size * num_processes"
    assert spoken("self.args.max_length") == "max_length"
    assert spoken("model_args.quantization_bit") == "quantization_bit"
    assert spoken("myself.value") == "myself.value"
