"""An out-of-memory described in words, checked against the paste's own settings (doctor/checks/hang/memory_said.py,
cards_said.py): the GPUs the words name, the floor of model states per GPU, the lever that brings it under the card,
spelled in the framework that ran. Every expected number below is worked by hand in its comment."""
from __future__ import annotations

import io
from pathlib import Path

from doctor.analyze import analyze
from doctor.checks.hang.cards_said import cards_said
from doctor.checks.hang.memory_said import memory_reading, states_floor
from doctor.checks.hang.prose import prose_lines, symptom
from doctor.signals import LogLine
from doctor.sources import launchers
from doctor.sources.logtext import LineReader

ROOT = Path(__file__).resolve().parent.parent
# a real paste: LLaMA-Factory 0.9.4, LoRA of Qwen3-30B-A3B under ZeRO-3 on one RTX 4090 (hiyouga/llamafactory#9572)
LF_ZERO3_ONE_CARD = next((ROOT / "fixtures" / "devlogs59").glob("6211-*"))


def lines(text: str) -> list[LogLine]:
    return list(LineReader("p.log", [0]).lines(io.BytesIO(text.encode())))


def test_cards_said_reads_card_size_and_count_every_way_people_write_them():
    one = cards_said(["4090单卡，内存320g，使用deepspeed zero3微调"])
    assert (one.name, one.gib, one.how, one.count) == ("4090", 24, "read", 1)
    sized = cards_said(["training on 8x A100 40GB nodes"])
    assert (sized.name, sized.gib, sized.how, sized.count) == ("A100", 40.0, "read", 8)
    assert cards_said(["80GB A100 here"]).gib == 80.0
    # a card sold in two sizes, none given: the larger, marked assumed (a "does not fit" claim holds on both)
    bare = cards_said(["it fails on an A100"])
    assert (bare.gib, bare.how) == (80, "assumed")
    assert cards_said(["显存24G，跑不起来"]).gib == 24.0
    assert cards_said(["CUDA_VISIBLE_DEVICES=0,1,2,3 on H20"]).count == 4
    assert cards_said(["the loss is NaN after 10 steps"]) is None


def test_states_floor_is_the_zero_papers_accounting_per_gpu():
    # LoRA: the frozen bf16 base only, 2 bytes a parameter; ZeRO-3 over one rank divides by 1
    assert states_floor(30e9, "lora", 2.0, 3, False, 1, 4.0) == 60e9
    assert states_floor(30e9, "lora", 2.0, 3, False, 4, 4.0) == 15e9
    assert states_floor(30e9, "lora", 2.0, 3, True, 1, 4.0) == 0.0     # parameters offloaded to the CPU
    # full, no ZeRO: bf16 weights 2 + gradients 2 + AdamW moments 4 = 8 bytes a parameter
    assert states_floor(7e9, "full", 2.0, 0, False, 4, 4.0) == 56e9
    # full, ZeRO-2 over 8: weights 2P whole, (gradients 2P + fp32 master and moments 12P) / 8 = 2P + 1.75P
    assert states_floor(8e9, "full", 2.0, 2, False, 8, 4.0) == 8e9 * 3.75
    # full, ZeRO-3 over 4: 16P / 4
    assert states_floor(8e9, "full", 2.0, 3, False, 4, 4.0) == 32e9


def test_the_real_llamafactory_paste_gets_the_floor_and_the_offload_config():
    report = analyze([str(LF_ZERO3_ONE_CARD)])
    first = report.findings[0]
    assert first.category == "cuda-oom"
    # 30e9 parameters x 2 bytes = 60e9 bytes = 55.9 GiB on one 24 GB card
    assert "keeps at least 56 GiB of model states on each GPU" in first.message
    assert "4090 (24 GB)" in first.message and "ZeRO-3 over one GPU shards nothing" in first.message
    # LLaMA-Factory's own spelling, the offload config first (one GPU: sharding cannot help)
    assert first.fix[0].startswith("Bring the model states under the card's memory: `deepspeed: examples/deepspeed/"
                                   "ds_z3_offload_config.json`")
    assert "quantization_bit: 4" in first.fix[0] and "--deepspeed" not in first.fix[0]


def test_states_that_fit_give_no_claim_and_a_denied_offload_is_no_offload():
    fits = ["Qwen2.5-7B-Instruct LoRA on 8x A100 80GB runs out of memory"]
    assert memory_reading({}, fits, None, None) is None     # 7.62e9 x 2 B = 14 GiB of 80: no claim
    # "without offload" denies it: the floor keeps the weights (16 x 70e9 / 8 = 140e9 B = 130 GiB > 80)
    denied = memory_reading({}, ["Llama-3.1-70B full fine-tune, zero3 without offload, 8x H100: OOM"], None, None)
    assert denied is not None and "at least 130 GiB" in denied.sentence and denied.exceeds
    # OpenRLHF's --ref_reward_offload moves the frozen models, not the actor's optimizer
    other = memory_reading({}, ["Llama-3-70B full PPO, --zero_stage 3 --ref_reward_offload on 8 A100 40G: OOM"],
                           "openrlhf", None)
    assert other is not None and "with offload" not in other.sentence


def test_a_trl_config_without_an_adapter_setting_is_a_full_fine_tune():
    args = {"per_device_train_batch_size": 1, "num_generations": 8, "learning_rate": 1e-6, "bf16": True}
    read = memory_reading(args, ["GRPO OOM with Qwen2.5-7B on one L40S"], "trl", None)
    # 7e9 (from the name's "7B") x 8 B = 56e9 B = 52 GiB > 48
    assert read is not None and "a full fine-tune under no ZeRO sharding read (1 GPU)" in read.sentence
    assert "at least 52 GiB" in read.sentence and "peft `LoraConfig`" in read.fix
    # the tuner was not read: the sentence says it is assumed, and why
    assert read.sentence.endswith("Assumed: a full fine-tune (none of the settings read asks for an adapter, and this "
                                  "framework then trains every weight).")
    # no ZeRO and no GPU count in the words: the floor (72e9 x 8 B = 536 GiB) does not depend on the count, and none
    # is said
    uncounted = memory_reading({}, ["Qwen2.5-72B full fine-tune on A100 80GB: OOM"], None, None)
    assert uncounted is not None and "a full fine-tune under no ZeRO sharding read keeps at least 536 GiB" in \
        uncounted.sentence and "GPU)" not in uncounted.sentence.split("keeps")[0]


def test_llamafactory_cli_flags_are_read_as_the_runs_settings():
    read = launchers.read_launch("FORCE_TORCHRUN=1 llamafactory-cli train --stage sft --finetuning_type lora "
                                 "--model_name_or_path Qwen/Qwen3-8B --cutoff_len 8192")
    assert read is not None and read.framework == "llamafactory"
    assert read.flags["finetuning_type"] == "lora" and read.flags["cutoff_len"] == 8192
    yaml = launchers.read_launch("llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml")
    assert yaml is not None and yaml.program == "examples/train_lora/llama3_lora_sft.yaml" and not yaml.flags


def test_a_config_line_is_not_the_words_of_the_failure():
    said = prose_lines(lines("freeze_vision_tower: true  # keep the tower frozen so training never hangs here\n"
                             "The run hangs after the first step and never prints another line.\n"))
    assert [ln.text for ln in said] == ["The run hangs after the first step and never prints another line."]
    # a flag followed by a person's Chinese sentence is that person's words
    assert len(prose_lines(lines("--report_to none  这个参数去掉就可以了\n"))) == 1


def test_blown_up_ram_in_chinese_is_the_hosts_memory():
    found = symptom(prose_lines(lines("加载数据集的时候爆内存了，机器直接卡死\n")))
    assert found is not None and found[0] == "host-oom-killed"


def test_the_generic_levers_leave_out_the_ones_the_paste_shows_pulled():
    from doctor.checks.hang.memory_said import levers_left
    args = {"per_device_train_batch_size": 1, "gradient_checkpointing": True, "finetuning_type": "lora",
            "cutoff_len": 8192, "deepspeed": "examples/deepspeed/ds_z3_config.json"}
    # batch 1, checkpointing on, LoRA, ZeRO-3 already: left are the length and the offload
    assert levers_left(args, [], "llamafactory") == (
        "Meanwhile, the levers this paste's settings leave, in the order they free GPU memory for training: a shorter "
        "cutoff_len (now 8192), ZeRO-3's CPU offload of the optimizer and weights.")
    trl = {"per_device_train_batch_size": 4, "max_completion_length": 1024, "use_vllm": True,
           "vllm_gpu_memory_utilization": 0.7}
    left = levers_left(trl, [], "trl")
    # trl trains every weight and leaves checkpointing off unless told
    assert left is not None and "per_device_train_batch_size 4 -> 2" in left and "gradient checkpointing on" in left
    assert "LoRA instead of full fine-tuning" in left and "vllm_gpu_memory_utilization now 0.7" in left
    assert levers_left({"model": "x"}, [], None) is None   # no settings shown: the generic line stays


def test_a_pasted_llamafactory_command_alone_is_no_whole_log(tmp_path):
    # LLaMA-Factory prints no echo of its command: the line is the person's, and an input with nothing else read
    # still gets the last-resort warning instead of "No problem found."
    log = tmp_path / "log.txt"
    log.write_text("LoRA SFT of Qwen3-8B with this command, any advice?\nllamafactory-cli train \\\n"
                   "    --stage sft \\\n    --finetuning_type lora \\\n    --cutoff_len 4096\n")
    report = analyze([str(log)])
    assert [f.rule_id for f in report.findings] == ["GD330"]
    # its three flags (stage, finetuning_type, cutoff_len) were read as the run's settings
    assert "it holds settings (3 read) and 5 non-empty lines" in report.findings[0].message


def test_a_colocated_vllm_engine_with_its_share_unset_is_a_lever_with_the_frameworks_default():
    from doctor.checks.hang.memory_said import levers_left
    swift = {"rlhf_type": "grpo", "per_device_train_batch_size": 8, "use_vllm": "true", "vllm_mode": "colocate"}
    left = levers_left(swift, [], "ms-swift")
    assert "ms-swift's default 0.9, assumed" in left and "sleep_level 1" in left
    assert "sleep_level" not in levers_left({**swift, "sleep_level": 1}, [], "ms-swift")
    # a rollout server holds its own GPUs: its share is no lever of the training GPUs
    assert "vLLM memory share" not in levers_left({**swift, "vllm_mode": "server"}, [], "ms-swift")
    assert "the release's default" in levers_left({**swift, "vllm_mode": "colocate"}, [], "trl")


def test_verl_shards_its_states_with_fsdp_and_takes_its_own_keys():
    # devlogs68/7102: verl's FSDP shards weights, gradients and optimizer states over every GPU by default; a 14B full
    # fine-tune on 8 x 80 GB keeps 14e9 x 16 B / 8 = 28e9 B = 26 GiB a GPU: no claim that the states do not fit
    args = {"actor_rollout_ref.model.path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
            "actor_rollout_ref.actor.fsdp_config.param_offload": "False",
            "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "False",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "16"}
    assert memory_reading(args, ["Train 14B with 8*H100(80GB) OOM"], "verl", 8) is None
    # 70e9 x 16 B / 8 = 140e9 B = 130 GiB > 80: the floor said as FSDP's, the fix in verl's keys with the run's values
    big = memory_reading({**args, "actor_rollout_ref.model.path": "meta-llama/Llama-3.1-70B"},
                         ["Train 70B with 8*H100(80GB) OOM"], "verl", 8)
    assert big is not None and "FSDP full sharding over 8 GPUs" in big.sentence and "at least 130 GiB" in big.sentence
    assert "ZeRO" not in big.sentence and "accelerate" not in big.fix
    assert "actor_rollout_ref.actor.fsdp_config.param_offload=True" in big.fix
    assert "ppo_micro_batch_size_per_gpu=8 (was 16)" in big.fix
    # one of the two offload switches on: a split the floor does not model, so nothing is claimed
    half = {**args, "actor_rollout_ref.model.path": "meta-llama/Llama-3.1-70B",
            "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "True"}
    assert memory_reading(half, ["Train 70B with 8*H100(80GB) OOM"], "verl", 8) is None
