"""The kind of trainer a run shows (doctor/swift/trainer_kind.py) and the GRPO-only sentences it removes from the
reports of other trainers (doctor/claim_trainer.py, the ``trainer`` claim of doctor/claims.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.claims import RunFacts, check_finding, check_text
from doctor.model import Finding, Severity
from doctor.swift.framework import is_library_path
from doctor.swift.trainer_kind import MetricMarks, detect

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def kind_of(args=None, command=None, commands=(), texts=(), paths=(), marks=None, loss_rows=0):
    got = detect(args or {}, command, list(commands), list(commands) + list(texts), paths, marks, loss_rows,
                 is_library_path)
    return got.kind, got.source


@pytest.mark.parametrize("args, command, commands, want", [
    ({"rlhf_type": "dpo"}, "rlhf", [], "dpo"),
    ({"rlhf_type": "grpo"}, "rlhf", ["swift sft --model x"], "grpo"),       # the resolved argument wins
    ({}, None, ["swift rlhf --rlhf_type kto --model Qwen/Qwen2.5-7B"], "kto"),
    ({}, None, ["CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B"], "sft"),
    ({}, None, ["swift rollout --model Qwen/Qwen2.5-7B"], "grpo"),          # ms-swift's rollout server serves GRPO
    ({}, None, ["trl dpo --model_name_or_path x --dataset_name y"], "dpo"),
    ({}, None, ["python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=8"], "grpo"),
    ({}, None, ["python3 -m verl.trainer.main_ppo algorithm.adv_estimator=gae"], "ppo"),
    ({}, None, ["ray job submit -- python -m openrlhf.cli.train_ppo_ray --advantage_estimator group_norm"], "grpo"),
    ({}, None, ["deepspeed --module openrlhf.cli.train_ppo --micro_train_batch_size 2"], "ppo"),   # default: gae
    ({}, None, ["deepspeed --module openrlhf.cli.train_dpo --beta 0.1"], "dpo"),
    ({}, None, ["vllm serve Qwen/Qwen2.5-7B --max-model-len 8192"], "serve"),
    ({}, "sft", [], "sft"),
    ({}, "rlhf", ["swift rlhf --model x"], None),                            # rlhf without --rlhf_type: not told here
])
def test_the_configuration_tells_the_trainer(args, command, commands, want):
    kind, source = kind_of(args, command, commands)
    assert kind == want
    assert source == ("config" if want else "none")


@pytest.mark.parametrize("paths, want", [
    (["/usr/lib/python3.10/site-packages/trl/trainer/dpo_trainer.py"], "dpo"),
    (["/opt/ms-swift/swift/llm/train/sft.py", "/opt/ms-swift/swift/trainers/rlhf_trainer/grpo_trainer.py"], "grpo"),
    (["/home/u/VLM-R1/src/open_r1/trainer/grpo_trainer.py"], "grpo"),
    (["/home/u/minimind/trainer/train_dpo.py"], "dpo"),                     # a user script named for its method
    (["/home/u/open-r1/src/open_r1/sft.py"], "sft"),
    (["/usr/lib/python3.10/site-packages/openrlhf/trainer/ppo_trainer.py"], None),  # OpenRLHF's GRPO runs here too
    (["/opt/ms-swift/swift/llm/train/sft.py"], None),                       # ms-swift's rlhf runs through its sft.py
    (["/home/u/rllm/rllm/trainer/verl/train_agent_ppo.py"], None),          # verl-style 'ppo' runs GRPO as well
])
def test_the_frames_tell_the_trainer(paths, want):
    assert kind_of(paths=paths)[0] == want


def test_transformers_own_compute_loss_in_the_frames_is_a_supervised_loop():
    from doctor.swift.trainer_kind import own_loss
    lib = "/opt/conda/lib/python3.10/site-packages/"
    # every GRPO, DPO and reward trainer overrides Trainer.compute_loss: the Trainer's own one ran a plain loop
    assert own_loss([(lib + "transformers/trainer.py", "training_step"), (lib + "transformers/trainer.py", "compute_loss")]) \
        == "supervised"
    assert own_loss([(lib + "transformers/trainer.py", "training_step"), (lib + "trl/trainer/grpo_trainer.py", "compute_loss")]) \
        is None
    # a trainer module in the frames decides before it (trl's GRPO trainer calling the Trainer's training_step)
    found = detect({}, None, [], [], [lib + "trl/trainer/grpo_trainer.py", lib + "transformers/trainer.py"],
                   frames=[(lib + "transformers/trainer.py", "compute_loss")])
    assert found.kind == "grpo"


def test_the_class_names_tell_the_trainer_only_when_one_kind_is_named():
    assert kind_of(texts=["  trainer = DPOTrainer(model, ref_model, args=training_args)"])[0] == "dpo"
    assert kind_of(texts=["trainer = UnslothGRPOTrainer("])[0] == "grpo"
    assert kind_of(texts=["DPOConfig(beta=0.1, output_dir='x')"])[0] == "dpo"
    assert kind_of(texts=["GRPOTrainer(...)", "You passed a dataset to the SFTTrainer"])[0] is None
    # transformers' own Trainer named as what ran (deepspeedai/DeepSpeed#2899's title and first line)
    assert kind_of(texts=["I try to use deepspeed ZERO-3 with huggingface Trainer to finetune a model"])[0] == \
        "supervised"
    assert kind_of(texts=["trainer = Trainer(model=model)"])[0] is None   # a call names no trainer kind
    assert kind_of(texts=["with HF Trainer", "GRPOTrainer(model)"])[0] is None


def test_zero3_in_the_words_of_an_oom_paste_changes_the_deepspeed_lever():
    from conftest import run_text
    oom = ("gpu-q-13: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB (GPU 2; 79.17 "
           "GiB total capacity; 76.68 GiB already allocated; 381.31 MiB free; 77.24 GiB reserved in total by PyTorch)")
    said = "I use deepspeed ZERO-3 with huggingface Trainer to finetune a 30b model on 4 nodes.\n"
    (f,) = [f for f in run_text(said + oom) if f.rule_id == "GD201"]
    fixes = " ".join(f.fix)
    assert "The log's words name ZeRO-3 (read from line 1" in fixes and "if the run does not use it yet" not in fixes
    assert "max_completion_length" not in fixes and "in GRPO" not in f.message   # a supervised run's levers
    (g,) = [f for f in run_text(oom) if f.rule_id == "GD201"]
    assert "--deepspeed zero3 if the run does not use it yet" in " ".join(g.fix)


def test_the_metric_keys_tell_the_trainer():
    grpo = MetricMarks()
    grpo.note({"loss": 0.1, "reward": 0.5, "reward_std": 0.2, "completions/mean_length": 120})
    assert kind_of(marks=grpo, loss_rows=10) == ("grpo", "metrics")
    dpo = MetricMarks()
    dpo.note({"loss": 0.69, "rewards_train/chosen": 0.1, "logps_train/rejected": -20.0})
    assert kind_of(marks=dpo, loss_rows=10) == ("preference", "metrics")
    sft = MetricMarks()
    sft.note({"loss": 1.2, "grad_norm": 3.0, "learning_rate": 1e-5, "epoch": 0.1})
    assert kind_of(marks=sft, loss_rows=1)[0] is None                # one row is too little to say it scores nothing
    assert kind_of(marks=sft, loss_rows=5) == ("supervised", "metrics")
    verl = MetricMarks()
    verl.note({"critic/score/mean": 0.2, "actor/pg_loss": 0.01})
    assert kind_of(marks=verl, loss_rows=5)[0] is None               # scored: GRPO or PPO, not told by the keys


DPO = RunFacts(trainer="dpo", trainer_label="DPO", trainer_config="DPOConfig")
SFT = RunFacts(trainer="sft", trainer_label="SFT", trainer_config="SFTConfig")
GRPO = RunFacts(trainer="grpo", trainer_label="GRPO", trainer_config="GRPOConfig")
UNKNOWN = RunFacts()


def test_a_grpo_parenthesis_leaves_the_sentence_of_a_dpo_run():
    text = ("Those tensors are the model's weights and the activations of the batch (in GRPO also the logits of the "
            "completions). Lower the batch size.")
    out, changes = check_text(text, DPO)
    assert out == "Those tensors are the model's weights and the activations of the batch. Lower the batch size."
    assert changes and changes[0][1] == "trainer" and "DPO" in changes[0][2]
    for facts in (GRPO, UNKNOWN):   # a GRPO run, or a run whose trainer is not told: unchanged
        assert check_text(text, facts) == (text, [])


def test_a_clause_after_a_semicolon_and_a_whole_grpo_sentence_go():
    text = ("Set max_model_len 7168: fits the 7344-token cache; GRPO needs only prompt + max_completion_length. "
            "Every GRPO group of 8 completions is flat. Restart from the last checkpoint.")
    out, _ = check_text(text, SFT)
    assert out == "Set max_model_len 7168: fits the 7344-token cache. Restart from the last checkpoint."


def test_clauses_that_lean_on_a_dropped_first_clause_go_with_it():
    # the clause after ";" refers back to the first one ("the slowest one"): alone it says nothing
    text = ("Time the parts of one step: generation, the reward functions, the update; the slowest one is what to "
            "change. Restart from the last checkpoint.")
    assert check_text(text, SFT)[0] == "Restart from the last checkpoint."
    # a ";" inside a parenthesis belongs to it; a clause that stands on its own stays, capitalised
    text = ("In GRPO this is what flat rewards do (zero advantages; no reward_std to tell); in supervised training "
            "it means every label is masked.")
    assert check_text(text, SFT)[0] == "In supervised training it means every label is masked."


def test_a_trl_config_class_is_the_runs_own():
    out, _ = check_text("Set GRPOConfig(max_grad_norm=0.5) and lower the learning rate.", DPO)
    assert out == "Set DPOConfig(max_grad_norm=0.5) and lower the learning rate."
    out, _ = check_text("Set GRPOConfig(num_generations=4). Lower the learning rate.", DPO)
    assert out == "Lower the learning rate."                        # a field DPOConfig does not have: the sentence goes
    assert check_text("Set GRPOConfig(max_grad_norm=0.5).", GRPO)[0] == "Set GRPOConfig(max_grad_norm=0.5)."



def test_a_trainer_without_a_known_config_class_reads_training_arguments():
    # told by its metrics only (rewards/chosen): a DPO-style trainer whose config class is not known. Its config, as
    # every trl config, is a TrainingArguments, so those fields keep their lever (devlogs70/7330 lost all three fixes)
    pref = RunFacts(trainer="preference", trainer_label="preference (DPO-style)")
    out, _ = check_text("Clip gradients harder: GRPOConfig(max_grad_norm=1.0) (assumed) -> 0.5.", pref)
    assert out == "Clip gradients harder: TrainingArguments(max_grad_norm=1.0) (assumed) -> 0.5."
    out, _ = check_text("Lower GRPOConfig.learning_rate from 6e-05 to 1e-05.", pref)
    assert out == "Lower TrainingArguments.learning_rate from 6e-05 to 1e-05."
    # a field of trl's configs only: the parenthesis that spells it goes, the lever stays
    text = ("Train in bfloat16 (GRPOConfig(model_init_kwargs={\"torch_dtype\": \"bfloat16\"}) with bf16=True) on "
            "Ampere or newer GPUs.")
    assert check_text(text, pref)[0] == "Train in bfloat16 on Ampere or newer GPUs."
    # a GRPO-only field, in a parenthesis or not
    assert check_text("Lower the batch (GRPOConfig(num_generations=4)) first.", pref)[0] == "Lower the batch first."
    assert check_text("Set GRPOConfig.num_generations to 4. Lower the rate.", pref)[0] == "Lower the rate."
def test_reward_functions_go_from_the_items_of_a_run_that_scores_nothing():
    text = "Compare the sample with the format the trainer documents (the image column, the columns your reward functions read)."
    assert check_text(text, SFT)[0] == "Compare the sample with the format the trainer documents (the image column)."
    ppo = RunFacts(trainer="ppo", trainer_label="PPO", trainer_config="PPOConfig")
    assert check_text(text, ppo)[0] == text                         # PPO scores its samples


def test_a_condition_or_quoted_text_is_not_a_claim_about_the_run():
    for text in ("If you meant to run GRPO, launch it with --rlhf_type grpo.",
                 "The log says `GRPO is not supported for this model` on rank 0."):
        assert check_text(text, DPO) == (text, [])


def test_vllm_rollout_advice_leaves_an_offline_trainers_report_even_as_a_condition():
    # fixtures/devlogs2/124: a DPO run's CUDA OOM was told to lower a colocated vLLM's share
    text = ("If vLLM runs colocated with training (use_vllm, vllm_mode colocate): --sleep_level 1 and a lower "
            "--vllm_gpu_memory_utilization (e.g. 0.5) free its share during the training step.")
    assert check_text(text, DPO)[0] == ""
    assert check_text(text, SFT)[0] == ""
    assert check_text(text, GRPO)[0] == text and check_text(text, UNKNOWN)[0] == text
    kept = ("Halve per_device_train_batch_size and double gradient_accumulation_steps; with a colocated rollout engine, "
            "also its vllm_gpu_memory_utilization.")
    assert check_text(kept, DPO)[0] == "Halve per_device_train_batch_size and double gradient_accumulation_steps."


def test_a_serving_run_loses_the_trainer_side_of_a_sentence_and_keeps_the_rest():
    # fixtures/devlogs14/1516 (`vllm serve`): "the engine failed, not the trainer" where no trainer ran
    serve = RunFacts(trainer="serve", trainer_label="model-serving")
    text = "The innermost library frame is inside vLLM (engine core, workers): the engine failed, not the trainer."
    assert check_text(text, serve)[0] == "The innermost library frame is inside vLLM (engine core, workers): the engine failed."
    assert check_text(text, GRPO)[0] == text and check_text(text, UNKNOWN)[0] == text
    fix = ("For a checkpoint, save it with the names vLLM serves; for a trainer's weight sync, use trl and vLLM releases "
           "made for each other.")
    assert check_text(fix, serve)[0] == "For a checkpoint, save it with the names vLLM serves."
    assert check_text("If a trainer syncs weights into this server, match their releases.", serve)[1] == []
    upgrade = ("Upgrade vLLM to a release that lists the model, together with the trainer versions that support that "
               "vLLM (ms-swift's README table); or check config.json.")
    assert check_text(upgrade, serve)[0] == "Upgrade vLLM to a release that lists the model; or check config.json."


def _analyze(log: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(log), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_a_serving_run_loses_a_trailing_trainer_item_and_its_verify_line_the_rollout():
    # fixtures/devlogs64/6720 (vLLM started beside memory held by something else) and devlogs60/6320 (a V0 server)
    serve = RunFacts(trainer="serve", trainer_label="model-serving")
    text = ("vLLM starts with 0.49 of 79.32 GiB free on its GPU, but gpu_memory_utilization 0.6 asks for 47.59 GiB: "
            "78.8 GiB are already held by another process or by this process's training state.")
    assert check_text(text, serve)[0] == text.replace(" or by this process's training state", "")
    assert check_text("free the GPU first (another job, a stale process, or the training state: see below).",
                      serve)[0] == "free the GPU first (another job, a stale process)."
    found = Finding("GD991", "x", "vllm-engine-error", Severity.error, "t", "m",
                    verify="the vLLM engine starts (KV cache / engine init lines) and the first rollout is logged")
    checked, _ = check_finding(found, serve)
    assert checked.verify == "the vLLM engine starts (KV cache / engine init lines)."
    # a training run keeps them
    assert check_finding(found, RunFacts(trainer="grpo", trainer_label="GRPO"))[0].verify == found.verify


def test_a_real_dpo_log_reads_as_dpo_with_no_grpo_sentence():
    # minimind's train_dpo.py running out of memory in backward (fixtures/devlogs2, from a public issue): the
    # stock memory account said "(in GRPO also the logits of the batch of completions ...)"
    rep = _analyze(next((FIX / "devlogs2").glob("124-*")) / "log.txt")
    assert rep["run"]["trainer"] == "dpo" and rep["run"]["trainer_source"] == "frames"
    primary = rep["findings"][0]
    assert primary["category"] == "cuda-oom"
    assert "GRPO" not in primary["message"] and not any("GRPO" in f for f in primary["fix"])


def test_a_real_grpo_run_keeps_its_grpo_wording():
    # a real trl GRPOTrainer run on CPU whose rewards stayed 0 (fixtures/logs/real-trl-trainer-state-flat)
    rep = _analyze(FIX / "logs" / "real-trl-trainer-state-flat")
    assert rep["run"]["trainer"] == "grpo" and rep["run"]["trainer_source"] == "metrics"
    assert "every GRPO advantage is 0" in rep["findings"][0]["message"]


def test_llamafactory_s_serving_and_chat_commands_pasted_among_the_lines():
    # llamafactory/launcher.py (0.9): api serves an OpenAI-style endpoint, chat and webchat run inference
    from doctor.swift.trainer_kind import from_text
    assert from_text(["CUDA_VISIBLE_DEVICES=0 API_PORT=8000 llamafactory-cli api --model_name_or_path m"]) == "serve"
    assert from_text(["llamafactory-cli webchat examples/inference/llama3.yaml"]) == "infer"
    assert from_text(["llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml"]) is None
    # two kinds told: not told
    assert from_text(["llamafactory-cli api a.yaml", "llamafactory-cli chat b.yaml"]) is None


def test_a_renamed_config_keeps_its_quoted_values():
    ppo = RunFacts(trainer="ppo", trainer_label="PPO", trainer_config="PPOConfig")
    text = 'Train in bfloat16 (GRPOConfig(model_init_kwargs={"torch_dtype": "bfloat16"}) with bf16=True) on Ampere.'
    assert check_text(text, ppo)[0] == ('Train in bfloat16 (PPOConfig(model_init_kwargs={"torch_dtype": "bfloat16"}) '
                                        'with bf16=True) on Ampere.')
