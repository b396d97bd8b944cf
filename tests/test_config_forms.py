"""The launch command and the settings read back wherever they are (issue 29 point 5): trl / transformers config
dumps, open-r1 recipes pasted in a log, verl's Hydra overrides, OpenRLHF's flags, accelerate / deepspeed / torchrun
launchers; the framework they imply; and numbers read from the field they belong to.

Real text: fixtures/config-forms (provenance in its README), fixtures/devlogs command files; lines written here say
where their wording comes from.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import feed_text

from doctor.checks.distributed.c10d_store import port_in_use_fix
from doctor.engine import Session
from doctor.engine.state import RunState
from doctor.model import Evidence
from doctor.rules import Hit
from doctor.sources import launchers, reprs
from doctor.sources.swiftconfig import RunConfig
from doctor.swift.framework import detect

ROOT = Path(__file__).resolve().parent.parent
FORMS = ROOT / "fixtures" / "config-forms"
DEVLOGS = ROOT / "fixtures" / "devlogs"


def _session(text: str) -> Session:
    s = Session([])
    feed_text(s, text)
    return s


def _framework(s: Session) -> tuple[str | None, str]:
    name, _, _, source = s.state.framework()
    return name, source


# ---------------------------------------------------------------- (a) trl / transformers config dumps

def test_grpoconfig_multiline_dump_in_a_log():
    # trl 0.29.1's own str(GRPOConfig), logged the way open-r1's grpo.py does ("Training parameters %s")
    dump = (FORMS / "trl-0.29.1-grpoconfig-str.txt").read_text()
    s = _session("2025-02-03 10:29:50 - INFO - __main__ - Training parameters " + dump
                 + "2025-02-03 10:29:51 - INFO - __main__ - *** Train ***\n")
    run = s.run
    assert run.args["num_generations"] == 4 and run.args["per_device_train_batch_size"] == 4
    assert run.args["vllm_mode"] == "server" and run.args["vllm_server_port"] == 8000
    assert run.args["eval_strategy"] == "no"              # IntervalStrategy.NO, the enum's value
    assert run.args["accelerator_config"]["split_batches"] is False
    assert run.provenance["num_generations"] == "dump" and "num_generations" not in run.cli
    assert not run._dump_open                            # closed at its ")"
    assert _framework(s) == ("trl", "config")


def test_one_line_dataclass_reprs_and_code_is_not_a_dump():
    # open-r1 grpo.py: logger.info(f"Model parameters {model_args}") -- trl ModelConfig is a plain dataclass
    s = _session("2025-02-03 10:29:50 - INFO - __main__ - Model parameters ModelConfig(model_name_or_path="
                 "'Qwen/Qwen2.5-1.5B-Instruct', model_revision='main', torch_dtype='bfloat16', trust_remote_code=False, "
                 "lora_target_modules=None, use_peft=False)\n")
    assert s.run.args["model_name_or_path"] == "Qwen/Qwen2.5-1.5B-Instruct" and s.run.args["use_peft"] is False
    assert reprs.one_line("x = GRPOConfig(..., use_vllm=True, max_prompt_length=4000, ...)") is None
    # verl's code line `return ModelConfig(` (fixtures/devlogs2/117) opens nothing
    s = _session("    return ModelConfig(\n        model=model,\n    )\n")
    assert not s.run._dump_open and "model" not in s.run.args
    assert reprs.value("<IntervalStrategy.STEPS: 'steps'>") == "steps" and reprs.value("SchedulerType.LINEAR") == "linear"


# ---------------------------------------------------------------- (b) open-r1 recipe pasted in a log

def test_open_r1_recipe_pasted_in_a_log():
    recipe = (FORMS / "open-r1-grpo-config_demo.yaml").read_text()
    s = _session("my config:\n" + recipe + "then it crashed\n")
    a = s.run.args
    assert a["num_generations"] == 16 and a["per_device_train_batch_size"] == 16
    assert a["gradient_accumulation_steps"] == 4 and a["vllm_gpu_memory_utilization"] == 0.7
    assert "use_reentrant" not in a                     # a nested mapping's key, not a setting


def test_stray_yaml_like_lines_are_not_a_recipe():
    s = _session("beta: 0.1\nsome text\nseed: 3\n")
    assert "beta" not in s.run.args and "seed" not in s.run.args
    block = reprs.YamlBlock()
    assert block.feed("beta: 0.1", "l", 1) == {} and block.feed("seed: 3", "l", 2) == {}
    assert block.feed("learning_rate: 1e-6", "l", 3) == {}   # three keys, none of GRPO's own
    assert block.feed("num_generations: 8", "l", 4)["num_generations"] == 8


# ---------------------------------------------------------------- (c) verl / OpenRLHF

def test_verl_hydra_overrides_from_verls_example():
    run = RunConfig()
    run.add_command((FORMS / "verl-run_qwen2-7b.sh").read_text())
    a = run.args
    assert a["actor_rollout_ref.rollout.n"] == 5 and a["num_generations"] == 5
    assert a["vllm_gpu_memory_utilization"] == 0.6 and a["vllm_tensor_parallel_size"] == 2
    assert a["max_completion_length"] == 1024 and a["max_prompt_length"] == 512
    assert a["data.train_batch_size"] == 1024 and a["use_vllm"] is True
    assert run.world_size() == 8 and run.implied == {"verl": "verl.trainer.main_ppo"}
    assert detect([], [], {}, False, run.implied)[:1] == ("verl",)


def test_verl_launch_in_a_ps_listing_line():
    # fixtures/devlogs2/102 (a `ps` row): the pid and %CPU before the command are not settings
    s = _session("4075157 0.35    python3 -m verl.trainer.main_ppo data.train_batch_size=512 "
                 "actor_rollout_ref.rollout.n=16 trainer.n_gpus_per_node=4 trainer.nnodes=2\n")
    assert s.run.args["num_generations"] == 16 and s.run.world_size() == 8
    assert _framework(s)[0] == "verl"


def test_verl_settings_from_hydras_failure_line_even_when_cut():
    # Hydra's run_and_report line (hydra/_internal/utils.py) as fixtures/devlogs36/3929 pastes it: the list is cut
    # inside its last item, which is not read; the whole items are the run's settings
    s = _session("(main_task pid=1860381) wandb:\n"
                 "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.train_batch_size=32', "
                 "'actor_rollout_ref.rollout.n=8', 'trainer.n_gpus_per_node=8', 'trainer.nnodes=2', "
                 "'actor_rollout_ref.rollout.tensor_model_parallel_size=2', 'actor_rollout_ref.actor.optim.lr=1e-6', '\n")
    a = s.run.args
    assert a["data.train_batch_size"] == 32 and a["num_generations"] == 8
    assert a["actor_rollout_ref.actor.optim.lr"] == 1e-6 and s.run.world_size() == 16
    assert _framework(s)[0] == "verl"
    cut = launchers.read_hydra_overrides("Error executing job with overrides: ['data.train_batch_size=32', 'trainer.n_gp")
    assert cut is not None and cut.overrides == {"data.train_batch_size": 32}
    assert launchers.read_hydra_overrides("Error executing job with overrides: []") is None


def test_openrlhf_flags_from_openrlhfs_example():
    run = RunConfig()
    run.add_command((FORMS / "openrlhf-train_grpo_ray_hybrid_engine.sh").read_text())
    a = run.args
    assert a["n_samples_per_prompt"] == 8 and a["num_generations"] == 8
    assert a["micro_train_batch_size"] == 8 and a["per_device_train_batch_size"] == 8
    assert a["vllm_gpu_memory_utilization"] == 0.6 and a["vllm_tensor_parallel_size"] == 2
    assert a["max_completion_length"] == 1024 and a["beta"] == 0.001
    assert run.world_size() == 8 and "openrlhf" in run.implied
    assert "kl_estimator" in a and "k2" not in str(a.get("kl_estimator"))  # the commented-out line is not read


# ---------------------------------------------------------------- (d) accelerate / deepspeed / torchrun

def test_a_llamafactory_config_implies_llamafactory_and_its_stage():
    # LLaMA-Factory's own arguments (hparams/finetuning_args.py: stage, finetuning_type), as in the config of
    # hiyouga/LlamaFactory#5964 (fixtures/devlogs2/123 command.txt, shortened)
    run = RunConfig()
    run.add_command("### method\nstage: sft\ndo_train: true\nfinetuning_type: full\n\n### dataset\n"
                    "template: qwen2_vl\ncutoff_len: 1024\n")
    assert run.implied.get("llamafactory") == "LLaMA-Factory config" and run.args["cutoff_len"] == 1024
    from doctor.swift.trainer_kind import from_config
    assert from_config(run.args, None, []) == "sft"
    # a recipe with its own `stage:` key but no finetuning_type is not LLaMA-Factory's
    other = RunConfig()
    other.add_command("stage: warmup\nlearning_rate: 1e-5\n")
    assert "llamafactory" not in other.implied and from_config(other.args, None, []) is None


def test_accelerate_launch_world_size_and_script_flags():
    # fixtures/devlogs/008 command.txt: launcher options are not the script's, the script's --config is
    run = RunConfig()
    run.add_command(next(DEVLOGS.glob("008-*")).joinpath("command.txt").read_text())
    assert run.world_size() == 3 and run.launcher == "accelerate"
    assert run.args["config"].endswith(".yaml") and "num_processes" not in run.args
    assert run.args["num_generations"] == 8          # the recipe pasted below the command
    run = RunConfig()
    run.add_command("accelerate launch --num_processes 8 --num_machines 2 --machine_rank 1 --main_process_port 29501 "
                    "--config_file zero3.yaml train_grpo.py --num_generations 8 --per_device_train_batch_size 2")
    assert run.torchrun == {"nproc_per_node": 4, "nnodes": 2, "node_rank": 1, "master_port": 29501}
    assert run.world_size() == 8 and run.args["per_device_train_batch_size"] == 2


def test_open_r1_accelerate_launch_is_trl_with_the_recipe():
    # fixtures/devlogs/061 command.txt
    run = RunConfig()
    run.add_command(next(DEVLOGS.glob("061-*")).joinpath("command.txt").read_text())
    assert run.world_size() == 7 and run.env["CUDA_VISIBLE_DEVICES"] == "1,2,3,4,5,6,7"
    name, _, recipe, _ = detect([], [], {}, False, run.implied)
    assert (name, recipe) == ("trl", "open-r1")


def test_torchrun_and_deepspeed_layouts():
    # fixtures/devlogs/053 command.txt (R1-V): torchrun's options stay the launcher's
    run = RunConfig()
    run.add_command(next(DEVLOGS.glob("053-*")).joinpath("command.txt").read_text())
    assert run.world_size() == 7 and run.torchrun["master_port"] == 12345
    assert run.args["num_generations"] == 7 and "master_port" not in run.args and "nproc_per_node" not in run.args
    run = RunConfig()
    run.add_command("deepspeed --num_gpus 4 --num_nodes 2 --master_port 29600 train.py --deepspeed ds.json "
                    "--per_device_train_batch_size 2")
    assert run.world_size() == 8 and run.torchrun["master_port"] == 29600 and run.args["deepspeed"] == "ds.json"
    # deepspeed --module (OpenRLHF's non-Ray trainers)
    read = launchers.read_launch("deepspeed --module openrlhf.cli.train_ppo --n_samples_per_prompt 4")
    assert read is not None and read.framework == "openrlhf" and read.flags["n_samples_per_prompt"] == 4
    # OpenRLHF's example scripts keep the module and its flags in a heredoc that `deepspeed --module
    # $training_commands` runs (OpenRLHF/OpenRLHF#398's script as posted, shortened)
    script = ("set -x\n\nread -r -d '' training_commands <<EOF\nopenrlhf.cli.train_ppo \\\n"
              "   --pretrain /x/lora_model \\\n   --micro_train_batch_size 2 \\\n   --train_batch_size 64 \\\n"
              "   --generate_max_len 1024 \\\n   --zero_stage 2\nEOF\n\ndeepspeed --module $training_commands\n")
    read = launchers.read_launch(script)
    assert read is not None and (read.framework, read.launcher) == ("openrlhf", "deepspeed")
    assert read.flags["micro_train_batch_size"] == 2 and read.flags["generate_max_len"] == 1024
    run = RunConfig()
    run.add_command(script)
    assert run.args["per_device_train_batch_size"] == 2 and run.args["max_completion_length"] == 1024


# ---------------------------------------------------------------- numbers from their own field

def _port_of(line: str) -> str:
    ev = Evidence("log.txt", 1, line)
    return port_in_use_fix([Hit({}, ev, None, 1)], RunState()).message


def test_a_port_is_not_read_from_a_timestamp():
    # glog-style prefix of torch's c10d lines: "[W1114 10:29:50.123456 ...]"; the port is the bind address's
    msg = _port_of("[W1114 10:29:50.123456 socket.cpp:462] [c10d] The server socket has failed to bind to "
                   "[::]:29512 (errno: 98 - Address already in use).")
    assert "Port 29512 " in msg and "Port 29 " not in msg
    msg = _port_of("2025-01-14 10:29:50 RuntimeError: Address already in use")
    assert "Port 29500 (assumed" in msg or "assumed" in msg
    assert "Port 29 " not in msg and "Port 50" not in msg
    msg = _port_of("[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any "
                   "local network address. port: 29501, useIpv6: 0, code: -98, name: EADDRINUSE")
    assert "Port 29501 " in msg
    msg = _port_of("The server socket has failed to bind to 0.0.0.0:29503 (errno: 98 - Address already in use)")
    assert "Port 29503 " in msg


def test_a_world_size_or_port_is_not_read_from_a_date_or_time():
    s = _session("[2025-01-14 10:29:50] + torchrun --nproc_per_node 2 --master_port=29400 train_grpo.py "
                 "--num_generations 4\n"
                 "2025-01-14 10:29:51,123 - INFO - step 8/16 world 2025\n")
    assert s.run.world_size() == 2 and s.run.torchrun["master_port"] == 29400
    assert s.run.args["num_generations"] == 4
    # a value that is not a number is not one: no world size
    run = RunConfig()
    run.add_command("accelerate launch --num_processes $NGPUS --main_process_port ${PORT} train_grpo.py --use_vllm")
    assert run.world_size() is None and "master_port" not in run.torchrun


@pytest.mark.parametrize("text,want", [
    ("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=5", "verl"),
    ("actor_rollout_ref.rollout.gpu_memory_utilization=0.6 trainer.n_gpus_per_node=8", "verl"),
    ("python3 -m recipe.dapo.main_dapo data.train_batch_size=512", "verl"),
    ("ray job submit -- python3 -m openrlhf.cli.train_ppo_ray --n_samples_per_prompt 8", "openrlhf"),
    ("python3 train.py --vllm_num_engines 4 --actor_num_gpus_per_node 8", "openrlhf"),
    ("accelerate launch --config_file zero2.yaml src/open_r1/grpo.py --config recipe.yaml", "trl"),
])
def test_framework_from_the_command(text, want):
    assert detect([], [text], {}, False)[0] == want


# ---------------------------------------------------------------- ms-swift / trl server launches pasted in a log
# the two launches of ms-swift's server mode as its docs and users write them (command of
# fixtures/devlogs26/3214-..., modelscope/ms-swift#5428): `swift rollout` on some GPUs, `swift rlhf` on the others
_TWO_LAUNCHES = (
    "CUDA_VISIBLE_DEVICES=0,1 \\\n"
    "swift rollout \\\n"
    "    --vllm_tensor_parallel_size 2 \\\n"
    "    --port 8001 \\\n"
    "    --model Qwen/Qwen2.5-VL-72B-Instruct\n"
    "[rank0]: CUDA_VISIBLE_DEVICES=2,3 NPROC_PER_NODE=2 swift rlhf --rlhf_type grpo --use_vllm true "
    "--vllm_mode server --vllm_server_host 127.0.0.1 --num_generations 8\n")


def test_a_pasted_swift_launch_line_is_read_and_the_servers_settings_stay_its_own():
    s = _session(_TWO_LAUNCHES)
    run = s.run
    # the trainer's line, read after its rank prefix
    assert run.args["rlhf_type"] == "grpo" and run.args["vllm_server_host"] == "127.0.0.1"
    assert run.env["CUDA_VISIBLE_DEVICES"] == "2,3" and run.env["NPROC_PER_NODE"] == "2"
    # the server's flags and GPUs are its launch's, never the trainer's settings
    assert "port" not in run.args and "vllm_tensor_parallel_size" not in run.args
    server = [launch for launch in run.launches if launch.command == "rollout"]
    assert server and server[0].env["CUDA_VISIBLE_DEVICES"] == "0,1"
    # the port the trainer must reach is the server's --port when the trainer's own flags do not name one
    assert run.server_port() == 8001
    run.set_arg("vllm_server_base_url", "http://10.0.0.5:8123", "command")
    assert run.server_port() == 8123
    run.set_arg("vllm_server_port", 8002, "command")
    assert run.server_port() == 8002


@pytest.mark.parametrize("line", [
    "I ran swift rlhf to train the model and it hangs",
    '  File "/usr/local/lib/python3.10/site-packages/swift/cli/rlhf.py", line 5, in <module>',
    "usage: vllm serve [-h] [--model MODEL]",
    "[INFO:swift] Start connecting to vLLM server",
])
def test_prose_paths_and_usage_lines_are_no_launch(line):
    s = _session(line + "\n")
    assert not s.run.args and not s.run.launches and s.run.command is None


def test_no_server_launch_no_port():
    s = _session("swift rlhf --rlhf_type grpo --use_vllm true --vllm_mode server\n")
    assert s.run.args["vllm_mode"] == "server" and s.run.server_port() is None


@pytest.mark.parametrize("opts", [{"lines": True}, {}])
def test_a_launch_continued_over_flag_lines_is_read_whole_by_both_scan_paths(tmp_path, opts):
    # flag lines ("    --nproc_per_node 4 \") hold no gate word: while a launch is open every line is its own
    from doctor.analyze import analyze
    log = tmp_path / "log.txt"
    log.write_text("torchrun \\\n    --nproc_per_node 4 \\\n    train_grpo.py \\\n    --num_generations 8\n")
    run = analyze([str(log)], scan_options=opts).to_json()["run"]
    assert run["world_size"] == 4 and run["args"]["num_generations"] == 8
    log.write_text(_TWO_LAUNCHES + "[INFO:swift] Start connecting to vLLM server\n")
    report = analyze([str(log)], scan_options=opts).to_json()
    assert report["run"]["env"]["CUDA_VISIBLE_DEVICES"] == "2,3" and report["run"]["args"]["rlhf_type"] == "grpo"
    # the hang advice names the server's own port, read from its launch, not the default
    fix = " ".join(report["findings"][0]["fix"])
    assert "http://127.0.0.1:8001/health/" in fix and "8000" not in fix


def test_a_pasted_llamafactory_config_is_read_whole_once_stage_and_finetuning_type_show_it():
    # LLaMA-Factory's example configs (examples/train_lora/llama3_lora_sft.yaml): its own keys open the block
    s = _session("model_name_or_path: /models/Llama-3-8B\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"
                 "output_dir: saves/llama3-8b/lora/sft\ncutoff_len: 1024\n")
    assert s.run.args["output_dir"] == "saves/llama3-8b/lora/sft" and s.run.args["model_name_or_path"] == "/models/Llama-3-8B"
    assert s.run.args["cutoff_len"] == 1024 and _framework(s)[0] == "llamafactory"
    # key: value lines without LLaMA-Factory's own two keys are no config
    s = _session("output_dir: saves/x\ndataset: alpaca\ntemplate: llama3\n")
    assert "output_dir" not in s.run.args


def test_a_launch_quoted_in_markdown_is_a_pasted_command_not_the_runs_echo():
    # axolotl#1041 (fixtures/devlogs38/4112): a list item in backticks; the settings are read, the log is not whole
    s = _session("The size of the model generated using deepspeed with zero3 is different.\n"
                 "- ` accelerate launch  axolotl/scripts/finetune.py cfg.yaml --deepspeed deepspeed/zero3.json`\n")
    assert s.run.args.get("deepspeed") == "deepspeed/zero3.json"
    assert not s.state.launch_in_log()
    # the same launch echoed by the shell (`set -x`) is the run's own line
    echoed = _session("+ accelerate launch axolotl/scripts/finetune.py cfg.yaml --deepspeed deepspeed/zero3.json\n")
    assert echoed.state.launch_in_log()


def test_llamafactory_old_entry_point_is_read_as_its_launch() -> None:
    # hiyouga/LlamaFactory#1989 (fixtures/devlogs66/6908): the README's command before llamafactory-cli existed
    text = ("CUDA_VISIBLE_DEVICES=0 python src/train_bash.py \\\n    --stage sft \\\n    --finetuning_type lora \\\n"
            "    --learning_rate 0.0005 \\\n    --bf16 True\n")
    read = launchers.read_launch(text)
    assert read is not None and read.framework == "llamafactory" and launchers.is_training(read)
    assert read.flags["learning_rate"] == 0.0005 and read.flags["stage"] == "sft"
    # another project's src/train.py without LLaMA-Factory's flags is not taken for it
    other = launchers.read_launch("python src/train.py --epochs 3 --lr 0.1\n")
    assert other is None or other.framework is None


def test_verl_printed_config_and_easyr1_yaml_are_read_into_dotted_keys():
    """verl's pprint of its config (Ray's prefix taken off by the reader) and EasyR1's YAML pasted in an issue
    (fixtures/devlogs27/3329, devlogs69/7226): nested keys by column or indentation, through the line gate."""
    import io

    from doctor.engine import Session
    from doctor.registry import load_catalog
    from doctor.sources.logtext import LineReader

    def facts(text: str):
        session = Session(load_catalog())
        for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
            session.feed_line(line)
        return session

    dump = ("(main_task pid=2422584) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n"
            "(main_task pid=2422584)                                  'fsdp_config': {'fsdp_size': -1,\n"
            "(main_task pid=2422584)                                                  'param_offload': False},\n"
            "(main_task pid=2422584)                                  'kl_loss_type': 'low_var_kl',\n"
            "(main_task pid=2422584)                                  'ppo_micro_batch_size_per_gpu': 4},\n"
            "(main_task pid=2422584)                        'rollout': {'n': 5}},\n")
    run = facts(dump).state.run
    assert run.args["actor_rollout_ref.actor.kl_loss_type"] == "low_var_kl"
    assert run.args["actor_rollout_ref.actor.fsdp_config.param_offload"] is False
    assert run.args["actor_rollout_ref.rollout.n"] == 5 and run.args["num_generations"] == 5  # the rules' name too
    yaml = ("data:\n  max_response_length: 2048\n  rollout_batch_size: 128  # verl's train_batch_size\n\n"
            "worker:\n  actor:\n    micro_batch_size_per_device_for_update: 1\n  rollout:\n"
            "    gpu_memory_utilization: 0.6\n")
    run = facts(yaml).state.run
    assert run.args["worker.actor.micro_batch_size_per_device_for_update"] == 1
    assert run.args["worker.rollout.gpu_memory_utilization"] == 0.6
    assert "easyr1" in run.implied
