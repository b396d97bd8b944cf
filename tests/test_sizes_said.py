"""Weights sizes stated in a paste's words (doctor/checks/hang/sizes_said.py): the arithmetic behind the reading and
a fix that does not repeat what the paste says is already set."""
from __future__ import annotations

from conftest import run_text

from doctor.checks.hang.sizes_said import FIXES


def _gd327(text: str):
    (f,) = [f for f in run_text(text) if f.rule_id == "GD327"]
    return f


def test_an_empty_save_under_zero3_advises_the_gathering_save():
    f = _gd327("[BUG] Zero stage3 can not save model weights correctly!\n"
               "Training the llama-7b model with zero stage3, but the size of saved pytorch-model.bin is only 610K.\n")
    assert f.category == "checkpoint-corrupt" and FIXES["empty"] in f.fix


def test_an_empty_save_with_the_gathering_save_already_on_does_not_advise_it_again():
    # deepspeedai/DeepSpeed#3841's first sentence: the setting is already true
    f = _gd327("[BUG] Zero stage3 can not save model weights correctly!\n"
               "Traing the llama-7b model with zero stage3 and set stage3_gather_16bit_weights_on_model_save to true "
               "in ds_config.json, but the size of saved pytorch-model.bin is only 610K.\n")
    fixes = " ".join(f.fix)
    assert FIXES["empty-gathered"] in f.fix and "set `stage3_gather_16bit_weights_on_model_save: true`" not in fixes
    assert "did not go through DeepSpeed's gathering save" in f.message
