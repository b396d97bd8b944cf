"""doctor/classify/raise_condition.py: an indexed site's condition read with the message's and the run's values."""
from __future__ import annotations

from doctor.classify.raise_condition import operands, read
from doctor.classify.raise_sites import SiteMatch

# trl 0.20 grpo_config.py lines 584-588 (fixtures/raise-index/src/trl-0.20.0): the template, its hole names and the
# condition the builder records for it (tests/test_raise_index_build.py checks that reading)
_COND = ("self.generation_batch_size is not None and self.steps_per_generation is None and "
         "self.generation_batch_size % (self.per_device_train_batch_size * num_processes) != 0")


def _site(holes: dict, condition: str = _COND, cut: bool = False) -> SiteMatch:
    return SiteMatch("trl", "0.18-0.20", "trl/trainer/grpo_config.py", "GRPOConfig.__post_init__", "ValueError",
                     "generation_batch_size ({any}) must be divisible by the global batch size ({any}).",
                     holes, 1.0, cut, condition)


def test_operands_are_whole_chains():
    assert operands(_COND) == ["self.generation_batch_size", "self.steps_per_generation",
                               "self.per_device_train_batch_size", "num_processes"]
    assert operands("except KeyError") == []


def test_the_message_and_the_run_bind_the_condition():
    site = _site({"self.generation_batch_size": "12",
                  "self.per_device_train_batch_size * num_processes": "8"})
    got = read(site, {"per_device_train_batch_size": 4, "generation_batch_size": 12, "learning_rate": 1e-6},
               {"per_device_train_batch_size": "command", "generation_batch_size": "args.json"})
    assert got is not None
    # the holes whose expressions the condition holds (the product too, inside its parentheses)
    assert got.from_message == (("self.generation_batch_size", "12"),
                                ("self.per_device_train_batch_size * num_processes", "8"))
    assert got.from_run == (("generation_batch_size", "12", "read from args.json"),
                            ("per_device_train_batch_size", "4", "read from the command"))
    text = got.sentence()
    # said to the user: whose check, the test (its arithmetic cannot be said in words: quoted), the values (the
    # releases are the raised-by part's), the settings without the object holding them
    assert text.startswith(f"trl's __post_init__ raises it when this check in its source holds: `{_COND}`; here ")
    assert "`generation_batch_size` is 12" in text and "the run's per_device_train_batch_size is 4" in text
    assert "`per_device_train_batch_size * num_processes` is 8" in text
    assert "learning_rate" not in text   # an argument the condition does not read
    # GRPOConfig's fields are its flags; steps_per_generation is implied by the `is None` term the test held with
    assert got.implied == (("self.steps_per_generation", "None"),)
    # no way out said in words: `generation_batch_size is not None` guards the divisibility term of the same setting
    # (unsetting it is no answer to its value), "set steps_per_generation" names no value (and trl refuses both set)
    assert got.fix() == (f"The check `{_COND}` held with generation_batch_size = 12, per_device_train_batch_size = 4, "
                         f"steps_per_generation = None: change one of them so that it no longer holds, then rerun.")


def test_no_run_value_no_fix_when_the_test_names_no_way_out():
    got = read(_site({}), {}, {})
    assert got is not None and got.fix() is None
    assert got.sentence() == (f"trl's __post_init__ raises it when this check in its source holds: `{_COND}`; that "
                              f"condition held here, so `steps_per_generation` was None.")


def test_a_guard_of_a_setting_is_no_way_out_of_the_check_of_its_value():
    # LLaMA-Factory data/template.py get_template_and_fix_tokenizer ("Template mllama does not exist.")
    site = SiteMatch("llamafactory", "0.9", "llamafactory/data/template.py", "get_template_and_fix_tokenizer",
                     "ValueError", "Template {name} does not exist.", {}, 1.0, False,
                     "data_args.template is not None and data_args.template not in TEMPLATES")
    got = read(site, {"template": "mllama"}, {"template": "command"})
    assert got is not None and "unset" not in (got.fix() or "")
    # a bound on a config's field guarded by `is not None`: the bound is the way out, not unsetting the field
    site = SiteMatch("trl", "0.20", "trl/trainer/grpo_config.py", "GRPOConfig.__post_init__", "ValueError",
                     "num_generations must be at least 2, got {any}.", {}, 1.0, False,
                     "self.num_generations is not None and self.num_generations < 2")
    got = read(site, {"num_generations": "1"}, {"num_generations": "command"})
    assert got is not None and got.fix() == ("Get past this check (the run has num_generations = 1): set "
                                             "`num_generations` to 2 or more, then rerun.")


def test_two_settings_compared_give_the_bound_from_the_other_s_value():
    # verl 0.5 workers/config/actor.py ActorConfig.validate (fixtures/devlogs57/6025: 32 prompts a step, mini batch 64)
    site = SiteMatch("verl", "0.5", "verl/workers/config/actor.py", "ActorConfig.validate", "ValueError",
                     "train_batch_size ({any}) must be >= actor.ppo_mini_batch_size ({any})",
                     {"train_batch_size": "32", "self.ppo_mini_batch_size": "64"}, 1.0, False,
                     "not self.use_dynamic_bsz and train_batch_size < self.ppo_mini_batch_size")
    got = read(site, {}, {})
    assert got is not None
    assert got.sentence() == ("verl's validate raises it when `use_dynamic_bsz` is off and `train_batch_size` is below "
                              "`ppo_mini_batch_size`; here `train_batch_size` is 32, `ppo_mini_batch_size` is 64.")
    # the config's field is set to the bound the local's value gives; the switch that skips the check comes last
    assert got.fix() == ("Get past this check with any one of: set `ppo_mini_batch_size` to 32 or less; turn "
                         "`use_dynamic_bsz` on; then rerun.")


def test_a_check_of_settings_against_literals_is_said_in_words():
    # LLaMA-Factory 0.9 hparams/parser.py _verify_model_args ("Quantization is only compatible with the LoRA method.")
    site = SiteMatch("llamafactory", "0.6-0.9", "llamafactory/hparams/parser.py", "_verify_model_args", "ValueError",
                     "Quantization is only compatible with the LoRA method.", {}, 1.0, False,
                     "model_args.quantization_bit is not None and finetuning_args.finetuning_type != 'lora'")
    got = read(site, {"finetuning_type": "freeze"}, {"finetuning_type": "command"})
    assert got is not None
    assert got.sentence() == ("LLaMA-Factory's _verify_model_args raises it when `quantization_bit` is set and "
                              "`finetuning_type` is not 'lora'; here the run's finetuning_type is freeze (read from "
                              "the command).")
    assert got.fix() == ("Get past this check (the run has finetuning_type = freeze) with any one of: leave "
                         "`quantization_bit` unset; set `finetuning_type` to 'lora'; then rerun.")


def test_a_cut_message_or_an_unguarded_site_is_not_read():
    assert read(_site({}, cut=True), {}, {}) is None      # its holes may hold a value cut short
    assert read(_site({}, condition=""), {}, {}) is None


def test_a_handler_s_site_points_at_the_exception_it_replaces():
    got = read(_site({}, condition="except KeyError"), {"per_device_train_batch_size": 4}, {})
    assert got is not None and got.fix() is None
    assert "trl's __post_init__ raises it while handling a KeyError: the exception it replaces" in got.sentence()
    got = read(_site({}, condition="except (OSError, ValueError)"), {}, {})
    assert got is not None and "while handling an OSError or ValueError:" in got.sentence()
    got = read(_site({}, condition="except ImportError"), {}, {})
    assert got is not None and "while handling an ImportError:" in got.sentence()


def test_backticks_in_a_condition_cannot_break_a_code_span():
    got = read(_site({}, condition="name == '`x`'"), {}, {})
    assert got is not None and "`name == ''x''`" in got.sentence()


def test_long_values_are_shortened_whole():
    got = read(_site({"self.generation_batch_size": "[" + ", ".join(["'down_proj'"] * 20) + "]"}), {}, {})
    assert got is not None
    value = dict(got.from_message)["self.generation_batch_size"]
    assert len(value) <= 80 and value.endswith("...")


# LLaMA-Factory 0.4 llmtuner/hparams/finetuning_args.py FinetuningArguments.__post_init__ (the condition the index
# records for "Freeze/Full PPO training needs `reward_model_type=full`."; a two-command paste: reward model, then PPO)
_PPO = "self.stage == 'ppo' and self.reward_model_type == 'lora' and (self.finetuning_type != 'lora')"


def _ppo_site() -> SiteMatch:
    return SiteMatch("llamafactory", "0.3-0.4", "llmtuner/hparams/finetuning_args.py", "FinetuningArguments.__post_init__",
                     "ValueError", "Freeze/Full PPO training needs `reward_model_type=full`.", {}, 1.0, False, _PPO)


def test_a_run_value_the_test_refuses_is_another_launch_s_and_is_not_said():
    got = read(_ppo_site(), {"stage": "rm", "finetuning_type": "full"}, {"stage": "launcher", "finetuning_type": "launcher"})
    assert got is not None
    assert got.from_run == (("finetuning_type", "full", "read from the launch script"),)   # stage = rm: refused
    assert got.implied == (("self.stage", "'ppo'"), ("self.reward_model_type", "'lora'"))
    assert "stage is rm" not in got.sentence() and "that condition held here, so `stage` was 'ppo'" in got.sentence()
    assert got.sentence().startswith("LLaMA-Factory's __post_init__ raises it when `stage` is 'ppo' and "
                                     "`reward_model_type` is 'lora' and `finetuning_type` is not 'lora'")
    # the `!=` term names what to set; the `==` terms are what the run is for (a PPO stage), not a way out
    assert got.fix() == "Get past this check (the run has finetuning_type = full): set `finetuning_type` to 'lora', then rerun."


def test_only_equalities_give_the_values_or_no_fix():
    site = SiteMatch(*[getattr(_ppo_site(), f) for f in ("package", "versions", "module", "where", "kind", "template",
                                                        "holes", "score", "cut")], "self.stage == 'ppo' and self.reward_model_type == 'lora'")
    assert read(site, {}, {}).fix() is None
    got = read(site, {"stage": "ppo"}, {"stage": "command"})
    assert got.fix() == ("The check (`stage` is 'ppo' and `reward_model_type` is 'lora') held with stage = ppo, "
                         "reward_model_type = 'lora': change one of them so that it no longer holds, then rerun.")


def test_a_message_value_the_test_refuses_drops_the_reading():
    """A value the message printed that the test refuses: the check is another release's (or another site's)."""
    site = SiteMatch("vllm", "0.6-0.13", "vllm/sampling_params.py", "SamplingParams._verify_args", "ValueError",
                     "max_tokens must be at least 1, got {any}.", {"self.max_tokens": "5"}, 1.0, False,
                     "self.max_tokens is not None and self.max_tokens < 1")
    assert read(site, {}, {}) is None
    site = SiteMatch(*[getattr(site, f) for f in ("package", "versions", "module", "where", "kind", "template")],
                     {"self.max_tokens": "-239"}, 1.0, False, site.condition)
    got = read(site, {}, {})
    assert got is not None and got.from_message == (("self.max_tokens", "-239"),)


def test_membership_and_order_terms():
    import ast

    from doctor.classify.raise_condition import _holds
    assert _holds(ast.NotIn(), "delete", {"left", "delete"}) is False
    assert _holds(ast.NotIn(), "right", {"left", "delete"}) is True
    assert _holds(ast.Gt(), "4", 3) is True and _holds(ast.Gt(), "2", 3) is False
    assert _holds(ast.Eq(), "True", True) is True and _holds(ast.Eq(), "maybe", True) is None
    assert _holds(ast.Lt(), "abc", 3) is None
