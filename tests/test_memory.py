"""Memory, vLLM and device rules (GD201-GD234): parsing, which side ran out, fixes computed from the run."""
from __future__ import annotations

import pytest
from conftest import feed_text

from doctor.checks.memory._facts import Facts, facts_of, params_b, zero_stage
from doctor.checks.memory._ladders import training_state_gb
from doctor.checks.memory._oom import parse_oom, side_of
from doctor.checks.memory.cut_traceback import classify_cut
from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.signals import Frame
from doctor.sources.argv import split_shell
from doctor.sources.command_text import split_launches, yaml_args
from doctor.sources.swiftconfig import RunConfig

SP = "/opt/conda/lib/python3.10/site-packages"


def run_log(text: str, command: str | None = None):
    """All catalog rules over one log text (and an optional command.txt), like `analyze`."""
    run = RunConfig()
    if command:
        run.add_command(command)
    s = Session(load_catalog(), run=run)
    feed_text(s, text, "t.log")
    return s.finish()


def tb(rank: int | None, frames: list[tuple[str, str, str]], last: str | None) -> str:
    pre = f"[rank{rank}]: " if rank is not None else ""
    out = [f"{pre}Traceback (most recent call last):"]
    for path, func, code in frames:
        out.append(f'{pre}  File "{path}", line 10, in {func}')
        out.append(f"{pre}    {code}")
    if last:
        out.append(pre + last)
    return "\n".join(out) + "\n"


LOSS_FRAMES = [(f"{SP}/transformers/trainer.py", "training_step", "loss = self.compute_loss(model, inputs)"),
               (f"{SP}/swift/rlhf_trainers/grpo_trainer.py", "compute_loss", "return self._compute_loss(model, inputs)")]
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU {g} has a total capacity of "
       "23.58 GiB of which 2.10 GiB is free. Including non-PyTorch memory, this process has 21.45 GiB memory in use.")
CMD_7B = """NPROC_PER_NODE=8 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 swift rlhf --rlhf_type grpo \\
  --model Qwen/Qwen2.5-7B-Instruct --tuner_type full --use_vllm true --vllm_mode colocate \\
  --deepspeed {ds} --per_device_train_batch_size 4 --gradient_accumulation_steps 2 {extra}"""


# ----------------------------------------------------------------------------------- parsing

def test_parse_oom_torch2_wording():
    o = parse_oom(OOM.format(g=3) + " Of the allocated memory 19.80 GiB is allocated by PyTorch, and 1.12 GiB is "
                                    "reserved by PyTorch but unallocated.")
    assert o["alloc"] == pytest.approx(3.71) and o["gpu"] == 3
    assert o["total"] == pytest.approx(23.58) and o["free"] == pytest.approx(2.10)
    assert o["in_use"] == pytest.approx(21.45) and o["unalloc"] == pytest.approx(1.12)


def test_parse_oom_torch1_wording_in_mib_and_cut_message():
    o = parse_oom("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB total capacity; 22.01 GiB already "
                  "allocated; 7.69 MiB free; 22.41 GiB reserved in total by PyTorch)")
    assert o["alloc"] == pytest.approx(20 / 1024) and o["free"] == pytest.approx(7.69 / 1024)
    assert o["reserved"] == pytest.approx(22.41) and o["by_torch"] == pytest.approx(22.01)
    cut = parse_oom("CUDA out of memory. Tried to allocate 1.17 GiB. GPU 0 has a total capacity of 79.4")
    assert cut["alloc"] == pytest.approx(1.17) and cut["total"] == pytest.approx(79.4) and cut["free"] is None


def test_parse_oom_several_processes_on_one_gpu():
    o = parse_oom("Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free. "
                  "Process 111 has 40.00 GiB memory in use. Process 222 has 37.9 GiB memory in use.")
    assert o["procs"] == [(111, 40.0), (222, 37.9)]


@pytest.mark.parametrize("name,b", [("Qwen/Qwen2.5-VL-7B-Instruct", 7.0), ("./Qwen3-1_7B", 1.7),
                                    ("./DeepSeek-R1-Distill-Qwen-1___5B", 1.5), ("Qwen/Qwen3-30B-A3B", 30.0),
                                    ("Qwen/Qwen3-0.6B", 0.6), ("/x/checkpoint-800", None), (None, None)])
def test_params_from_model_name(name, b):
    assert params_b(name) == b


def test_zero_stage_names():
    assert zero_stage("zero3_offload") == (3, True)
    assert zero_stage("zero2") == (2, False)
    assert zero_stage("configs/ds_z3_config.json") == (3, False)
    assert zero_stage(None) == (None, False)


def test_training_state_estimate():
    run = RunConfig()
    run.add_command(CMD_7B.format(ds="zero2", extra=""))
    f = facts_of(run)
    # full 7B: 2P weights + (2P grads + 12P Adam) / 8 ranks = 14 + 98/8
    assert training_state_gb(f, 2, False) == pytest.approx(26.25)
    assert training_state_gb(f, 3, False) == pytest.approx(14.0)
    f.tuner = "lora"
    assert training_state_gb(f, 2, False) == pytest.approx(14.0)
    assert training_state_gb(f, 3, False) == pytest.approx(14.0 / 8)


def test_a_deepspeed_lever_that_frees_nothing_by_the_runs_numbers_is_not_offered():
    from doctor.checks.memory._ladders import ds_advice
    run = RunConfig()
    # one process, LoRA on a 2B model: zero3_offload keeps the 16-bit weights' estimate where it is (4 GB -> 4 GB)
    run.add_command("swift sft --model Qwen/Qwen2-VL-2B-Instruct --train_type lora --per_device_train_batch_size 1")
    assert ds_advice(facts_of(run), for_vllm=False) is None
    full = RunConfig()
    full.add_command(CMD_7B.format(ds="zero2", extra=""))
    assert "zero3" in (ds_advice(facts_of(full), for_vllm=False) or "")   # 26.25 GB -> 14 GB a GPU: offered


def test_an_oom_said_above_a_cut_stack_gets_the_levers_of_the_runs_command():
    from conftest import run_text
    command = ("CUDA_VISIBLE_DEVICES=0,1,2,3 swift sft --model Qwen/Qwen2-VL-2B-Instruct --train_type lora "
               "--max_length 1024 --per_device_train_batch_size 1")
    text = ("Fine-tuning on 4 4090s fails at start with CUDA out of memory\n"
            "Traceback (most recent call last):\n"
            '  File "/root/ms-swift/swift/trainers/mixin.py", line 261, in train\n'
            "    res = super().train(*args, **kwargs)\n")
    (f,) = [f for f in run_text(text, command=command) if f.rule_id == "GD999"]
    assert f.category == "cuda-oom"
    assert any(x.startswith("Meanwhile, if the exception is the out-of-memory") and "MAX_PIXELS=" in x for x in f.fix)


# ------------------------------------------------------------------------------- which side

def _facts(use_vllm=True) -> Facts:
    run = RunConfig()
    run.args["use_vllm"] = use_vllm
    return facts_of(run)


def test_side_training_vs_vllm_by_innermost_marker():
    loss = tuple(Frame(p, 1, fn, c) for p, fn, c in LOSS_FRAMES)
    assert side_of(loss, "", "", _facts()).side == "training"
    gen = loss[:1] + (Frame(f"{SP}/swift/rlhf_trainers/grpo_trainer.py", 1, "_generate_completions"),
                      Frame(f"{SP}/vllm/model_executor/models/qwen2.py", 1, "forward"))
    s = side_of(gen, "", "", _facts())
    assert (s.side, s.stage) == ("vllm", "generation")
    kv = (Frame(f"{SP}/vllm/engine/llm_engine.py", 1, "_initialize_kv_caches"),)
    assert side_of(kv, "", "", _facts()).stage.startswith("KV")


def test_side_without_frames_uses_prefix_and_message():
    f = _facts()
    assert side_of((), "ERROR 09-20 19:54:33 [core.py:398] torch.OutOfMemoryError: x", "x", f).side == "vllm"
    assert side_of((), "(VllmWorker rank=1 pid=9) torch.OutOfMemoryError: x", "x", f).side == "vllm"
    assert side_of((), "", "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62", f).side == "vllm"
    assert side_of((), "[rank0]: torch.OutOfMemoryError: x", "x", f).side == "training"


def test_hf_generate_without_vllm_is_training():
    frames = (Frame(f"{SP}/swift/rlhf_trainers/grpo_trainer.py", 1, "_generate_completions"),
              Frame(f"{SP}/transformers/generation/utils.py", 1, "generate"))
    assert side_of(frames, "", "", _facts(use_vllm=False)).side == "training"
    assert side_of(frames, "", "", _facts(use_vllm=True)).side == "vllm"


# ---------------------------------------------------------------------------------- folding

def test_eight_ranks_fold_to_one_finding():
    log = "".join(tb(r, LOSS_FRAMES, OOM.format(g=r)) for r in range(8))
    found = [f for f in run_log(log, CMD_7B.format(ds="zero2", extra="")) if f.rule_id == "GD201"]
    assert len(found) == 1
    assert found[0].count == 8 and found[0].ranks == tuple(range(8))
    assert not [f for f in run_log(log) if f.rule_id == "GD202"]


# ------------------------------------------------------------------------------ fix ladders

def _fix(findings, rid):
    return "\n".join(next(f for f in findings if f.rule_id == rid).fix)


def test_training_ladder_follows_what_is_not_set():
    log = tb(0, LOSS_FRAMES, OOM.format(g=0))
    fix = _fix(run_log(log, CMD_7B.format(ds="zero2", extra="")), "GD201")
    assert "--deepspeed zero3 instead of --deepspeed zero2" in fix
    assert "--sleep_level 1" in fix and "--vllm_gpu_memory_utilization 0.5 (was 0.9 (assumed))" in fix
    assert "--per_device_train_batch_size 2 with --gradient_accumulation_steps 4" in fix
    assert "--tuner_type lora" in fix
    done = _fix(run_log(log, CMD_7B.format(ds="zero3", extra="--sleep_level 1 --vllm_gpu_memory_utilization 0.4")),
                "GD201")
    assert "--deepspeed zero3 " not in done and "zero3_offload" in done
    assert "--sleep_level" not in done and "--vllm_gpu_memory_utilization" not in done


def test_train_type_flag_on_3x():
    log = tb(0, [(f"{SP}/swift/trainers/rlhf_trainer/grpo_trainer.py", "compute_loss", "x")], OOM.format(g=0))
    cmd = CMD_7B.format(ds="zero3", extra="").replace("--tuner_type", "--train_type")
    assert "--train_type lora" in _fix(run_log(log, cmd), "GD201")


def test_vl_model_without_max_pixels_gets_max_pixels_first():
    log = tb(0, LOSS_FRAMES, OOM.format(g=0))
    cmd = "swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-VL-7B-Instruct --tuner_type lora"
    first = next(f for f in run_log(log, cmd) if f.rule_id == "GD201").fix[0]
    assert "MAX_PIXELS=262144" in first
    with_mp = "MAX_PIXELS=200000 " + cmd
    assert "MAX_PIXELS" not in _fix(run_log(log, with_mp), "GD201")


def test_vllm_oom_colocate_ladder_and_low_util_warning():
    log = "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"
    cmd = CMD_7B.format(ds="zero3", extra="--vllm_gpu_memory_utilization 0.1")
    f = next(x for x in run_log(log, cmd) if x.rule_id == "GD202")
    fix = "\n".join(f.fix)
    assert "only 0.1" in fix and "--sleep_level" not in fix  # cumem means sleep mode is on already
    assert "--offload_model true --offload_optimizer true" in fix
    assert "--vllm_tensor_parallel_size 2 (was 1 (assumed))" in fix


def test_rollout_server_oom_fixes_go_on_the_server_command():
    cmd = ("CUDA_VISIBLE_DEVICES=3 swift rollout --model Qwen/Qwen2.5-VL-7B-Instruct --port 8014\n\n"
           "VIDEO_MAX_PIXELS=50176 FPS_MAX_FRAMES=40 NPROC_PER_NODE=2 swift rlhf --rlhf_type grpo --use_vllm true "
           "--vllm_mode server --vllm_server_port 8014\n")
    log = ("ERROR 09-20 19:54:33 [core.py:398] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.17 GiB. "
           "GPU 0 has a total capacity of 79.44 GiB of which 0.5 GiB is free.\n")
    f = next(x for x in run_log(log, cmd) if x.rule_id == "GD202")
    assert "rollout server" in f.message
    assert "VIDEO_MAX_PIXELS=50176 FPS_MAX_FRAMES=40" in f.fix[0] and "swift rollout" in f.fix[0]
    assert f.fix[1].startswith("--vllm_gpu_memory_utilization 0.8 on the swift rollout command")


def test_kv_cache_numbers():
    f = run_log("ValueError: Free memory on device (21.35/79.19 GiB) on startup is less than desired GPU memory "
                "utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                "processes.\n")
    kv = next(x for x in f if x.rule_id == "GD203")
    assert "0.25" in kv.fix[0]
    f = run_log("ValueError: To serve at least one request with the models's max seq len (32768), (3.50 GiB KV cache "
                "is needed, which is larger than the available KV cache memory (1.20 GiB). Based on the available "
                "memory, the estimated maximum model length is 11200. Try increasing `gpu_memory_utilization` or "
                "decreasing `max_model_len` when initializing the engine.\n",
                "swift rlhf --rlhf_type grpo --use_vllm true --max_length 4096")
    kv = next(x for x in f if x.rule_id == "GD203")
    assert kv.fix[0].startswith("--vllm_max_model_len 4096 (was 32768")
    f = run_log("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
                "stored in KV cache (14336). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`.\n")
    assert next(x for x in f if x.rule_id == "GD203").fix[0].startswith("--vllm_max_model_len 14336 (was 32768)")


def test_engine_core_failure_is_a_consequence_of_the_kv_error():
    log = ("ERROR 08-02 09:14:12 [core.py:586] ValueError: No available memory for the cache blocks. Try increasing "
           "`gpu_memory_utilization` when initializing the engine.\n"
           "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    ids = [f.rule_id for f in run_log(log)]
    assert ids.index("GD203") < ids.index("GD220")


# ------------------------------------------------------------------------------ cut tracebacks
# (where a cut traceback counts, GD204 / GD205, and the offload readings of GD206 are cases in rules/memory/cases.toml)

def test_classify_cut_stages():
    def fr(path, func, code=""):
        return Frame(path, 1, func, code)
    assert classify_cut((fr(f"{SP}/trl/trainer/grpo_trainer.py", "compute_loss"),))[0] == "training"
    assert classify_cut((fr(f"{SP}/vllm/engine/llm_engine.py", "__init__"),
                         fr(f"{SP}/vllm/engine/llm_engine.py", "_initialize_kv_caches")))[0] == "vllm-kv"
    assert classify_cut((fr(f"{SP}/swift/trainers/rlhf_trainer/grpo_trainer.py", "prepare_vllm",
                            "engine = GRPOVllmEngine("),))[0] == "vllm-init"
    assert classify_cut((fr(f"{SP}/vllm/engine/arg_utils.py", "create_model_config"),))[0] == "vllm-config"
    assert classify_cut((fr("/home/me/reward.py", "my_reward"),)) is None


# ------------------------------------------------------------------------------ device mismatch

DEV = ("[rank0]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
       "cuda:3 and cuda:0! (when checking argument for argument index in method wrapper_CUDA__index_select)\n")


def test_device_mismatch_vllm_device_by_version():
    old = run_log("[INFO:swift] swift.__version__: 3.4.1\n" + DEV, "swift rlhf --rlhf_type grpo --use_vllm true "
                                                                   "--vllm_device cuda:3")
    new = run_log("[INFO:swift] swift.__version__: 3.8.0\n" + DEV, "swift rlhf --rlhf_type grpo --use_vllm true "
                                                                   "--vllm_device cuda:3")
    assert "vllm_device was removed in ms-swift 3.6" in _fix(new, "GD210")
    assert "removed" not in _fix(old, "GD210") and "3.1.1-3.4" in _fix(old, "GD210")
    trl = run_log(DEV, "accelerate launch --num_processes 3 train.py\nuse_vllm: true\nvllm_device: \"cuda:3\"\n")
    assert "vLLM >= 0.7.2" in _fix(trl, "GD210") and "trl vllm-serve" in _fix(trl, "GD210")


def test_device_mismatch_device_map_layout():
    f = run_log(DEV, "NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1,2,3 swift rlhf --rlhf_type grpo")
    assert "NPROC_PER_NODE=4" in next(x for x in f if x.rule_id == "GD210").fix[0]


def test_device_mismatch_inside_vllm_is_version_not_layout():
    frames = [(f"{SP}/vllm/model_executor/models/qwen2.py", "forward", "hidden_states = self.embed_tokens(input_ids)")]
    ids = [f.rule_id for f in run_log(tb(0, frames, "RuntimeError: Expe"))]
    assert ids[0] == "GD234" and "GD210" not in ids


# ------------------------------------------------------------------------------ core helpers

def test_split_shell_keeps_hash_inside_words():
    assert split_shell("swift rlhf --dataset AI-MO/NuminaMath-TIR#5000 \\\n --a 1 # note\n# c\n--b 'x # y'") == [
        "swift", "rlhf", "--dataset", "AI-MO/NuminaMath-TIR#5000", "--a", "1", "--b", "x # y"]


def test_split_launches_gives_each_command_its_env():
    text = ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\\nCUDA_VISIBLE_DEVICES=3 \\\nswift rollout \\\n"
            "  --model M --port 8014\n\nCUDA_VISIBLE_DEVICES=1,2 \\\nNPROC_PER_NODE=2 \\\nVIDEO_MAX_PIXELS=50176 \\\n"
            "swift rlhf \\\n  --rlhf_type grpo --use_vllm true\n")
    ro, tr = split_launches(text)
    assert ro.command == "rollout" and ro.env == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                                  "CUDA_VISIBLE_DEVICES": "3"}
    assert ro.flags == {"model": "M", "port": 8014}
    assert tr.command == "rlhf" and tr.env["VIDEO_MAX_PIXELS"] == "50176" and tr.flags["use_vllm"] is True


def test_yaml_args_from_a_pasted_config():
    assert yaml_args('# GRPO\nbeta: 0.001 # paper\nvllm_device: "cuda:3"\nuse_vllm: true\n') == {
        "beta": 0.001, "vllm_device": "cuda:3", "use_vllm": True}
    assert yaml_args("only: one\n") == {}


def test_device_mismatch_during_weight_sync_is_not_a_version_problem():
    frames = [(f"{SP}/swift/trainers/rlhf_trainer/grpo_trainer.py", "_move_model_to_vllm", "llm_model.load_weights(x)"),
              (f"{SP}/vllm/model_executor/models/qwen2.py", "load_weights", "weight_loader(param, loaded_weight)")]
    ids = [f.rule_id for f in run_log(tb(0, frames, DEV.split("]: ", 1)[1].strip()))]
    assert ids[0] == "GD210" and "GD234" not in ids
