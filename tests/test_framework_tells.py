"""More of the ways a paste tells its framework: NeMo-RL's and torchtune's package directories and commands, NeMo-RL
and NeMo-Aligner named, imports of DeepSpeed and accelerate in pasted code (runtimes), each with the name the report's
issue hint spells; and the launcher alone that is not read."""
from __future__ import annotations

from doctor.swift.framework import TRAINERS, detect, issues_of


def test_nemo_rl_from_its_checkout_package_and_name():
    frames = ["/opt/nemo-rl/3rdparty/Megatron-Bridge-workspace/Megatron-Bridge/src/megatron/bridge/utils/"
              "instantiate_utils.py"]
    assert detect(frames, [], {})[::3] == ("nemo-rl", "frames")
    assert detect(["/workspace/RL/nemo_rl/algorithms/grpo.py"], [], {})[::3] == ("nemo-rl", "frames")
    assert detect([], ["GRPO with NeMo RL hangs after the first step", "torchrun --nproc_per_node 8"], {})[::3] == \
        ("nemo-rl", "named")
    assert "nemo-rl" in TRAINERS and issues_of("nemo-rl") == "NeMo-RL"


def test_torchtune_from_its_cli_and_frames_never_from_prose():
    assert detect([], ["$ tune run lora_finetune_single_device --config llama3/8B_qlora_single_device"], {})[::3] == \
        ("torchtune", "text")
    assert detect([], ["`tune download meta-llama/Meta-Llama-3-8B-Instruct --output-dir /tmp/m`"], {})[0] == "torchtune"
    assert detect(["/usr/local/lib/python3.11/dist-packages/torchtune/training/checkpointing/_utils.py"], [], {})[::3] \
        == ("torchtune", "frames")
    assert detect([], ["we fine tune run after run and the loss never moves"], {})[0] is None
    assert issues_of("torchtune") == "torchtune"


def test_nemo_aligner_named_or_its_user_guide_linked():
    link = "Following the steps for DPO Training at https://docs.nvidia.com/nemo-framework/user-guide/latest/" \
           "modelalignment/dpo.html"
    assert detect([], [link], {})[::3] == ("nemo-aligner", "named")
    assert detect([], ["nemo_aligner/algorithms/dpo.py fails"], {})[0] == "nemo-aligner"
    assert issues_of("nemo-aligner") == "NeMo-Aligner"


def test_imports_of_deepspeed_and_accelerate_in_pasted_code_are_runtimes():
    assert detect([], ["import torch.nn as nn", "from deepspeed.ops.adam.fused_adam import FusedAdam"], {})[::3] == \
        ("deepspeed", "runtime")
    assert detect([], ["import deepspeed"], {"deepspeed": "0.14.0"})[:2] == ("deepspeed", "0.14.0")
    assert detect([], ["from accelerate import Accelerator"], {"accelerate": "1.12.0"})[::3] == ("accelerate", "runtime")
    assert detect([], ["from accelerate import Accelerator"], {"accelerate": "1.12.0"})[1] == "1.12.0"
    assert issues_of("accelerate") == "accelerate"
    # a trainer told wins over a runtime's import
    assert detect([], ["from trl import GRPOTrainer", "from accelerate import Accelerator"], {})[0] == "trl"
    # a sentence that mentions importing it is no import
    assert detect([], ["it fails when I import deepspeed"], {})[0] is None


def test_a_launcher_alone_names_no_framework():
    # trl's, transformers', peft's and axolotl's scripts are launched with it as often as accelerate's own
    assert detect([], ["accelerate launch --config_file fsdp_config.yaml dpo.py"], {})[0] is None
    assert detect([], ["python -m accelerate.commands.launch --config_file ./accelerate_fsdp.yaml run.py"], {})[0] is None


def test_a_name_glued_to_chinese_words_is_named():
    # fixtures/devlogs67/7023 ("刚上手verl框架"): a CJK character is a word character, so \b sees no edge there
    assert detect([], ["麻烦大佬们指点一二，刚上手verl框架"], {})[::3] == ("verl", "named")
    assert detect([], ["用trl训练GRPO时显存爆了"], {})[::3] == ("trl", "named")
    assert detect([], ["使用DPOTrainer训练loss为nan"], {})[::3] == ("trl", "named")
    assert detect([], ["openrlhf训练卡住了"], {})[::3] == ("openrlhf", "named")
    # still not a word inside another one, nor a path or a repository's name
    assert detect([], ["the controls library was loaded"], {})[0] is None
    assert detect([], ["see verl-project for details"], {})[0] is None


def test_verl_s_configuration_read_by_its_own_code_names_verl():
    # verl/trainer/ppo/ray_trainer.py's check, quoted (fixtures/devlogs36/3919)
    line = "Training Script: assert config.data.train_batch_size >= config.actor_rollout_ref.actor.ppo_mini_batch_size"
    assert detect([], [line], {})[0] == "verl"
    assert detect([], ["actor_rollout_ref is a name we chose for our own config"], {})[0] is None


def test_the_report_header_names_a_framework_whose_release_is_not_shown():
    from doctor.render import run_line
    assert run_line({"framework": "verl"}) == "verl"
    assert run_line({"framework": "trl", "framework_version": "0.19.0"}) == "trl 0.19.0"
    assert run_line({}) == "framework not told by the log"


def test_easyr1_from_its_checkout_its_trainer_files_its_entry_point_and_its_name():
    # EasyR1 keeps verl's package name: its checkout, or the trainer files verl has under ppo/ (or not at all)
    assert detect(["/workspace/EasyR1/verl/workers/fsdp_workers.py"], [], {})[::3] == ("easyr1", "frames")
    assert detect(["/opt/conda/lib/python3.10/site-packages/verl/trainer/ray_trainer.py"], [], {})[0] == "easyr1"
    assert detect(["/opt/conda/lib/python3.10/site-packages/verl/trainer/ppo/ray_trainer.py"], [], {})[0] == "verl"
    cmd = "python3 -m verl.trainer.main config=examples/config.yaml worker.actor.model.model_path=Qwen/Qwen2.5-7B"
    assert detect([], [cmd], {})[::3] == ("easyr1", "text")
    assert detect([], ["python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo"], {})[0] == "verl"
    assert detect([], ["EasyR1 GRPO of Qwen2.5-VL hangs at the first step"], {})[::3] == ("easyr1", "named")
    # a conda environment named for it is a folder, not the words of the paste (fixtures/devlogs41/3477's frames)
    assert detect([], ["/envs/easyr1-tor280-vllm0130/lib/python3.11/site-packages/vllm/entrypoints/llm.py"], {})[0] \
        != "easyr1"
    assert "easyr1" in TRAINERS and issues_of("easyr1") == "EasyR1"


def test_an_easyr1_launch_is_read_under_its_own_keys_and_the_rules_names():
    from doctor.sources.launchers import read_launch, run_facts
    from doctor.swift.terms import say
    read = read_launch("python3 -m verl.trainer.main config=examples/config.yaml worker.rollout.n=8 "
                       "worker.actor.micro_batch_size_per_device_for_update=4 trainer.n_gpus_per_node=4")
    assert read is not None and read.framework == "easyr1"
    args, layout = run_facts(read)
    assert args["num_generations"] == 8 and args["per_device_train_batch_size"] == 4 and args["use_vllm"] is True
    assert layout == {"nproc_per_node": 4, "nnodes": 1}
    assert say("Set --num_generations 4 so that the batch divides.", "easyr1") == \
        "Set worker.rollout.n=4 so that the batch divides."
    assert say("Set --move_model_batches 4.", "easyr1") is None   # no EasyR1 counterpart: the line goes


def test_a_link_to_a_framework_s_discussion_or_a_path_of_its_package_names_it():
    # fixtures/devlogs27/3106 and devlogs52/4605: a trl pull request named as the fix; devlogs25/3022: a verl issue
    assert detect([], ["https://github.com/huggingface/trl/pull/1664 should fix the issue"], {})[0] == "trl"
    assert detect([], ["same as https://github.com/verl-project/verl/issues/539#issuecomment-27"], {})[0] == "verl"
    assert detect([], ["see unslothai/unsloth/issues/1761"], {})[0] == "unsloth"
    # a test runner's frame (fixtures/devlogs64/6607) and a script named in a sentence (devlogs51/5004)
    assert detect([], ["  trl/experimental/ppo/ppo_trainer.py:912: in train"], {})[0] == "trl"
    assert detect([], ["Where `dpo.py` is the official example at [trl/scripts/dpo.py](https://github.com/x)"], {})[0] \
        == "trl"
    # a file of the repository (its Dockerfile: fixtures/devlogs57/5918, a vLLM run in verl's image) is not its run
    assert detect([], ["https://github.com/verl-project/verl/blob/main/docker/Dockerfile.stable.vllm"], {})[0] != "verl"
