"""The fixes of the post-mortem hang rules (GD320, GD321): what to check in the phase the log stopped in,
with the flags of this run that matter there."""
from __future__ import annotations

import re
from typing import Any

from ...sources.swiftconfig import RunConfig
from ...swift.run import flag_in_version
from .._numbers import computed, read_or
from ..distributed._common import VLLM_GROUP_PORT
from ._progress import _Progress


def phase_fix(p: _Progress, phase: str | None, run: RunConfig, a: dict[str, Any]) -> list[str]:
    fix: list[str] = []
    world = run.world_size()
    vis = run.visible_gpus()
    nproc = run.env.get("NPROC_PER_NODE") or run.torchrun.get("nproc_per_node")
    use_vllm = run.args.get("use_vllm") is True
    mode = run.args.get("vllm_mode")
    tp_flag = "tensor_parallel_size" if "tensor_parallel_size" in run.args and \
        "vllm_tensor_parallel_size" not in run.args else "vllm_tensor_parallel_size"
    gm_flag = "gpu_memory_utilization" if "gpu_memory_utilization" in run.args and \
        "vllm_gpu_memory_utilization" not in run.args else "vllm_gpu_memory_utilization"
    tp = run.int_arg(tp_flag)
    gm = run.args.get(gm_flag)
    ds = str(run.args.get("deepspeed") or "")
    offl = {k: run.args.get(k) for k in ("offload_model", "offload_optimizer") if k in run.args}
    mpx = run.env.get("MAX_PIXELS")
    if phase in ("server-connect", "server-connected"):
        host = run.get("vllm_server_host") or run.get("vllm_server_base_url") or "<rollout host>"
        port = run.server_port() or 8000
        group = run.int_arg("vllm_server_group_port") or VLLM_GROUP_PORT
        if phase == "server-connect":
            to = read_or(run.get("vllm_server_timeout"), 240)  # ms-swift's default
            pnote = "" if run.server_port() is not None else " (port 8000 assumed: the default)"
            fix.append(f"The trainer polls http://{host}:{port}/health/{pnote} until vllm_server_timeout ({to} s) and then "
                       "raises ConnectionError: check that `swift rollout` is up (curl that URL from this node) "
                       "and that no proxy intercepts it.")
        fix.append(f"After the HTTP check the trainer joins the rollout server's NCCL weight-sync group on port "
                   f"{read_or(run.int_arg('vllm_server_group_port'), group)}+i: that port must be reachable from this node, and `swift rollout` must run the same "
                   "ms-swift / vLLM versions as the trainer.")
    elif phase in ("setup", "launch"):
        fix.append("Stuck before the model load: every rank must reach init_process_group. Check that "
                   f"NPROC_PER_NODE ({nproc or 'unset'}) matches the visible GPUs"
                   + (f" ({vis} in CUDA_VISIBLE_DEVICES)" if vis else "")
                   + ", that MASTER_ADDR/MASTER_PORT are the same on every node, and that no other run holds "
                     "the port.")
    elif phase in ("model-load",):
        fix.append("Stuck loading weights: each of the "
                   + (f"{world} " if world else "")
                   + "processes reads the checkpoint from disk (slow or hung network filesystem?) and holds a "
                     "CPU copy while loading; watch `free -g` (a host OOM kill ends the log the same way) and the "
                     "disk read rate.")
    elif phase == "model-loaded" or phase == "dataset-map":
        fix.append("Stuck preparing the dataset: with --dataset_num_proc > 1 a worker can hang or be killed; "
                   "try --dataset_num_proc 1, and check that every rank sees the same dataset files.")
    elif phase in ("trainer-init", "vllm-init"):
        # the engine's own lines show it is used when the arguments were not read (an excerpt without the command)
        engine_seen = phase == "vllm-init" or bool(p.vllm_lines)
        if (use_vllm or engine_seen and "use_vllm" not in run.args) and mode != "server":
            fix.extend(_vllm_colocate_fix(run, tp, tp_flag, gm, gm_flag, world, vis, ds, offl, mpx))
        elif use_vllm:
            fix.append("Server mode: the trainer only connects to `swift rollout`; check the rollout server's log.")
        elif not run.args:
            fix.append("No arguments of the run were read: this phase builds the reference model (unless beta is 0), "
                       "any reward model and the reward functions, and the colocated vLLM engine when --use_vllm is "
                       "set; the launch command tells which.")
        else:
            beta = run.args.get("beta")
            rm = run.args.get("reward_model")
            fix.append("This run does not use vLLM (no --use_vllm), so this phase builds the reference model"
                       + (f" (beta {beta}; --beta 0 skips it)" if beta not in (None, 0, 0.0) else "")
                       + (f", the reward model {rm}" if rm else "")
                       + " and the reward functions"
                       + (f" ({', '.join(map(str, run.args['reward_funcs']))})"
                          if isinstance(run.args.get("reward_funcs"), list) else "")
                       + ("; with several ranks every rank must reach the same collectives (ZeRO-3 gathers)."
                          if (world or 1) > 1 or ds else "."))
        if world and vis and world != vis and mode != "server":
            fix.append(f"{world} training processes but {vis} visible GPUs: colocated engines and ZeRO groups "
                       "expect one GPU per process (NPROC_PER_NODE = number of GPUs).")
    elif phase == "first-step":
        b = run.int_arg("per_device_train_batch_size")
        spg = run.int_arg("steps_per_generation") or run.int_arg("gradient_accumulation_steps")
        g = run.int_arg("num_generations")
        if b:
            spg_ = read_or(spg, 1)
            per_rank = b * spg_.value
            fix.append(f"The first step runs the first rollout: per_device_train_batch_size {b} x "
                       f"{'steps_per_generation' if run.int_arg('steps_per_generation') else 'gradient_accumulation_steps'} "
                       f"{spg_} = {computed(per_rank, spg_)} completions per rank"
                       + (f" ({per_rank // g if g and per_rank % g == 0 else '?'} prompt(s) x num_generations {g})"
                          if g else "")
                       + f"{' of up to ' + str(run.get('max_completion_length')) + ' tokens' if run.get('max_completion_length') else ''}"
                       ", then the rewards and the first optimizer step; a rank that never finishes it holds the "
                       "others in the next collective.")
        else:
            fix.append("The first step does the first rollout (generation of per_device_train_batch_size x "
                       "steps_per_generation completions per rank), the reward functions and the first optimizer "
                       "step; a rank that never finishes it holds the others in the next collective.")
        if use_vllm and mode != "server":
            fix.extend(_vllm_colocate_fix(run, tp, tp_flag, gm, gm_flag, world, vis, ds, offl, mpx))
        elif use_vllm:
            fix.append("Server mode: check that `swift rollout` is generating (its log) and that weight sync "
                       "reached it.")
        fix.append("Reward functions that call a network service or a judge model need a timeout.")
    elif phase in ("training", "eval"):
        lm = p.last_metrics
        speed = lm.get("train_speed(s/it)")
        ips = lm.get("train_speed(iter/s)")
        if isinstance(speed, float) and speed > 0:
            pace = f"{speed:.3g} s per step"
        elif isinstance(ips, float) and ips > 0:
            pace = f"{1 / ips:.3g} s per step"
        else:
            pace = None
        if pace:
            fix.append(f"Up to step {a['steps']} a step took about {pace} (train_speed in the last logged step"
                       + (f", elapsed {lm.get('elapsed_time')}" if lm.get("elapsed_time") else "")
                       + "): a stall many times longer than that is a hang, not a slow step.")
        else:
            fix.append(f"Compare with the normal step time (train_speed in the logged steps): a stall much "
                       f"longer than that after step {a['steps']} is a hang, not a slow step.")
        if phase == "eval":
            fix.append("It stopped in evaluation (the `Val` bar): eval generates num_generations completions per "
                       "prompt too; --eval_strategy no rules it out.")
        fix.append("A desynchronised collective (one rank skipped a step, an exception swallowed on one rank, "
                   "a reward call that never returns) hangs silently because ms-swift's --ddp_timeout defaults to "
                   "18000000 s: --ddp_timeout 1800 makes it fail with an NCCL timeout that names the collective.")
        if use_vllm:
            fix.append("With vLLM: a stuck generation or weight sync (server mode: is `swift rollout` alive?; "
                       "ZeRO-3: --move_model_batches) shows up exactly like this.")
    elif phase == "checkpoint-save":
        line = p.phase_line.get("checkpoint-save")
        z3 = "zero3" in ds
        fix.append("If the checkpoint below is incomplete, it is stuck in the save: check free disk space "
                   "(`df -h` on the output_dir) and a slow network filesystem"
                   + (f"; with --deepspeed {ds} rank 0 gathers the full 16-bit weights from every rank, which "
                      "takes minutes for large models and waits for all ranks" if z3 else "")
                   + ("; --save_only_model true skips the optimizer states" if run.args.get("save_only_model")
                      is not True else "") + ".")
        m = re.search(r"Saving model checkpoint to (\S+)", line.text) if line is not None else None
        if m:
            name = m.group(1).rstrip("/").rsplit("/", 1)[-1]
            fix.append(f"Check {name} ({m.group(1)}): its weights and trainer_state.json must be there before "
                       f"resuming from it (grpo-doctor check-ckpt {m.group(1)}).")
        fix.append("If it is complete, the save finished and the next step hangs: its rollout generation or a "
                   "reward function (a remote judge or sandbox called without a timeout never returns); "
                   "`py-spy dump --pid <pid>` shows which, and every network call in a reward needs a timeout.")
    return fix



def _vllm_colocate_fix(run: RunConfig, tp: int | None, tp_flag: str, gm: Any, gm_flag: str, world: int | None,
                       vis: int | None, ds: str, offl: dict[str, Any], mpx: str | None) -> list[str]:
    fix = []
    gm_txt = (f"{gm_flag} is {gm}" if gm is not None else f"{gm_flag} is the default 0.9" if run.args else
              f"no {gm_flag} was read from the inputs (ms-swift's default: 0.9)")
    sleep = ", and use --sleep_level 1 to free it during training" if flag_in_version(run, "sleep_level") else ""
    mmb = flag_in_version(run, "move_model_batches")
    fix.append(f"Colocated vLLM shares each GPU with training: {gm_txt}; lower it (e.g. 0.4-0.5) so the engine "
               f"fits next to the model{sleep}.")
    if tp:
        n = world or vis
        if n and n % tp:
            fix.append(f"--{tp_flag} {tp} does not divide the {n} training processes: use a divisor of {n}.")
        elif tp > 1:
            fix.append(f"--{tp_flag} {tp}: every group of {tp} ranks must build its vLLM engine together (all "
                       f"ranks reach it, NPROC_PER_NODE equal to the visible GPUs); try a smaller "
                       f"--{tp_flag} (e.g. {max(tp // 2, 1)}) if one engine per {tp} GPUs hangs at init.")
    if offl or "offload" in ds:
        on = [f"--{k} {v}" for k, v in offl.items()] + ([f"--deepspeed {ds}"] if ds else [])
        fix.append(f"{' '.join(on)}: CPU offload moves states through host RAM while the engine starts; check "
                   "`free -g`" + (", and with ZeRO-3 add --move_model_batches (e.g. 10) so weight sync gathers layers "
                                  "in groups instead of the whole model." if mmb and "zero3" in ds else "."))
    elif "zero3" in ds and mmb:
        fix.append(f"--deepspeed {ds}: add --move_model_batches (e.g. 10) so weight sync to vLLM gathers layers in "
                   "groups instead of the whole model at once.")
    if mpx or run.args.get("model_type", "") and "vl" in str(run.args.get("model_type")).lower() or \
            "VL" in str(run.args.get("model", "")):
        fix.append(f"Vision model: MAX_PIXELS={mpx or 'unset (the template default)'} bounds image tokens for vLLM's "
                   "profiling run and the rollouts; MAX_PIXELS=262144 (or lower) is the documented start.")
    return fix


def generic_fix(run: RunConfig) -> list[str]:
    world = run.world_size()
    vllm = " (and the vLLM engine processes)" if run.args.get("use_vllm") is True else ""
    if world and world > 1:
        return [f"While it is stuck take `py-spy dump --pid <pid>` of each of the {world} training processes{vllm}: "
                "the rank whose stack differs from the others is the cause; NCCL_DEBUG=INFO shows where the "
                "collectives stop."]
    return [f"While it is stuck take `py-spy dump --pid <pid>` of the training process{vllm} to see where it waits "
            "(pip install py-spy; add --native for NCCL / CUDA frames)."]
