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


def test_a_gpus_memory_after_its_name_is_not_a_saved_size():
    from doctor.checks.hang.sizes_said import _sizes
    # fixtures/devlogs58 6112 (a LLaMA-Factory DPO issue): "on one A800 (80G) card, LoRA rank 8 on a 4B model", then
    # out of memory: the card's memory, not a checkpoint of the whole model
    assert _sizes("在单张A800 (80G) 卡上，LoRA rank 8 微调一个4B的模型。") == {}
    assert _sizes("RTX 4090 24G and a 16GB checkpoint") == {16e9: "16 GB"}
    assert _sizes("H20（96G）训练保存了 60GB 权重") == {60e9: "60 GB"}
    # the card's memory before its name (an issue title: "Yarn-Mistral-7B-128k(24G 4090, ...)")
    assert _sizes("how to load Yarn-Mistral-7B-128k(24G 4090, maybe max-model-len") == {}
    assert _sizes("80GB A100 and a 16GB checkpoint") == {16e9: "16 GB"}
    f = _gd327("DPO 显存需求\n在单张A800 (80G) 卡上，LoRA rank 8 微调一个4B的模型。\n换成dpo训练，即使batch size设为2也会OOM。\n")
    assert f.category == "cuda-oom"


def test_a_memory_size_after_its_word_is_not_a_saved_size():
    from doctor.checks.hang.sizes_said import _sizes
    # fixtures/devlogs59 6211 (a LLaMA-Factory LoRA run): "one 4090, 320g of RAM, ZeRO-3 ... blows the GPU memory"
    assert _sizes("4090单卡，内存320g，使用deepspeed zero3微调") == {}
    assert _sizes("RAM: 256GB, and the checkpoint is 60GB") == {60e9: "60 GB"}
    f = _gd327("4090单卡，内存320g，使用deepspeed zero3微调qwen3-30b-a3b-thinking-2507会爆显存\n")
    assert f.category == "cuda-oom"


def test_deepspeeds_allocator_cache_flush_warning_is_the_gpus_memory():
    # fixtures/devlogs59 6230: ZeRO-3's warning counts CUDA allocator retries (deepspeed/runtime/zero/stage3.py); its
    # "high memory pressure" is the GPU's, not the host's
    f = _gd327("OOM 问题\n2 pytorch allocator cache flushes since last step. this happens when there is high memory "
               "pressure and is detrimental to performance.\n")
    assert f.category == "cuda-oom"
    assert _gd327("the job was killed due to memory pressure on the node\n").category == "host-oom-killed"
