"""GD408-GD411, GD421: the GPU/process layout errors ms-swift raises at start-up (visible GPUs not a multiple of
NPROC_PER_NODE, vLLM or DeepSpeed with device_map, a vLLM TP size that does not divide the world, and the
3.1-3.4 vllm_device / num_infer_workers split)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.batch import divisors, nearest
from ...values import as_int
from ._layout import gpu_ids, nproc_per_node


def ngpu_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    ngpu, lws = as_int(g.get("ngpu")), as_int(g.get("lws"))
    if not ngpu or not lws:
        return Diagnosis()
    if ngpu < lws:
        msg = (f"NPROC_PER_NODE is {lws} but only {ngpu} GPU(s) are visible to each process: ms-swift needs the "
               f"visible GPU count to be a multiple of the processes per node.")
        fix = [f"NPROC_PER_NODE={ngpu} (one process per visible GPU), or make {lws} GPUs visible "
               f"(CUDA_VISIBLE_DEVICES={gpu_ids(lws)})."]
    else:
        msg = (f"{ngpu} GPUs are visible but NPROC_PER_NODE is {lws}: {ngpu} is not a multiple of {lws}, so ms-swift "
               f"cannot give every process the same number of GPUs.")
        fix = [f"NPROC_PER_NODE={ngpu} (one process per GPU, the usual DDP/DeepSpeed layout), or "
               f"CUDA_VISIBLE_DEVICES={gpu_ids(lws)} to train on {lws} GPUs."]
        mult = [d for d in divisors(ngpu, 1) if d > 1 and ngpu // d >= 1]
        if mult:
            fix.append(f"Any NPROC_PER_NODE that divides {ngpu} passes this check ({', '.join(map(str, mult))}); "
                       f"fewer processes than GPUs means each process spreads one model over several GPUs "
                       f"(device_map), which DeepSpeed and vLLM refuse.")
    return Diagnosis(message=msg, fix=tuple(fix))


def vllm_device_map_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    vis = run.visible_gpus()
    n = nproc_per_node(run)
    have = (f"{vis} GPUs are visible and NPROC_PER_NODE is {n or 'not set (1 process)'}" if vis else
            "more GPUs are visible than there are training processes per node")
    fix = [f"NPROC_PER_NODE={vis or '<number of visible GPUs>'}: one training process per GPU; in colocate mode each "
           f"one also hosts its vLLM engine."]
    if vis and n and vis > n:
        fix.append(f"Or CUDA_VISIBLE_DEVICES={gpu_ids(n)} to train on {n} GPUs; GPUs meant for vLLM need "
                   f"--vllm_mode server with `swift rollout` started on them separately.")
    return Diagnosis(
        message=f"{have}, so each process would spread the model over several GPUs (device_map); GRPO with "
                f"vLLM requires one GPU per training process.",
        fix=tuple(fix))


def ds_device_map_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    ngpu, lws = as_int(g.get("ngpu")), as_int(g.get("lws"))
    if not ngpu or not lws:
        return Diagnosis()
    per = ngpu // lws if lws else ngpu
    return Diagnosis(
        message=f"{ngpu} GPUs are visible and {lws} process(es) run per node, so each process would spread the "
                f"model over {per} GPUs (device_map); DeepSpeed shards across processes instead and refuses "
                f"device_map.",
        fix=(f"NPROC_PER_NODE={ngpu} with --deepspeed (one process per GPU).",
             f"Or drop --deepspeed to keep the {per}-GPU-per-process device_map layout (naive model "
             f"parallelism: the GPUs take turns)."))


def tp_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    tp, ws = as_int(g.get("tp")), as_int(g.get("ws"))
    if not tp or not ws:
        return Diagnosis()
    ok = [d for d in divisors(ws, 1)]
    up = ((ws // tp) + 1) * tp
    return Diagnosis(
        message=f"Colocated vLLM groups consecutive training ranks into tensor-parallel groups of "
                f"{tp}, so the world size {ws} must be a multiple of {tp} ({ws} % {tp} = {ws % tp}).",
        fix=(f"--vllm_tensor_parallel_size {' or '.join(map(str, nearest(ok, tp)))} (divisors of the world "
             f"size {ws}).",
             f"Or train on a multiple of {tp} processes (e.g. NPROC_PER_NODE x NNODES = {up})."))


def old_layout_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    """ms-swift 3.1-3.4 GPU split messages (vllm_device / num_infer_workers)."""
    run = ctx.run
    g = hits[0].groups
    n = nproc_per_node(run)
    vis = run.visible_gpus()
    if g.get("notp"):
        return Diagnosis(
            message="ms-swift 3.3-3.4 async mode (and the LMDeploy backend) cannot shard the rollout engine "
                    "with tensor parallelism.",
            fix=("Drop --tensor_parallel_size (1 GPU per vLLM worker), or use colocate mode.",
                 "On ms-swift >= 3.5: --vllm_mode colocate/server with --vllm_tensor_parallel_size."))
    if g.get("dc") is not None:
        dc, niw = as_int(g["dc"]), as_int(g["niw"])
        return Diagnosis(
            message=f"Colocate mode (3.3-3.4) runs one vLLM worker per training GPU, so num_infer_workers "
                    f"({niw}) must equal the GPU count ({dc}).",
            fix=(f"--num_infer_workers {dc} with NPROC_PER_NODE={dc}.",
                 "On ms-swift >= 3.6 this flag is gone: --use_vllm true --vllm_mode colocate."))
    if g.get("tot") is not None:
        tot, tr, inf = as_int(g["tot"]), as_int(g["tr"]), as_int(g["inf"])
        fix = []
        if tot and inf is not None and tot - inf > 0:
            fix.append(f"NPROC_PER_NODE={tot - inf} (training) + --num_infer_workers {inf} (vLLM) = {tot} GPUs.")
        if tot and tr is not None and tot - tr > 0:
            fix.append(f"Or keep NPROC_PER_NODE={tr} and set --num_infer_workers {tot - tr}.")
        fix.append("On ms-swift >= 3.6 use --vllm_mode server with a separate `swift rollout` instead.")
        return Diagnosis(
            message=f"Async mode (3.3-3.4) puts training and vLLM on separate GPUs: {tot} visible != {tr} "
                    f"training + {inf} inference.",
            fix=tuple(fix))
    dev = g.get("dev") or "?"
    fix = []
    if vis:
        fix.append(f"Leave one GPU for vLLM: with {vis} visible GPUs use NPROC_PER_NODE={max(vis - 1, 1)} and "
                   f"--vllm_device auto (vLLM takes cuda:{max(vis - 1, 1)}).")
    elif n:
        fix.append(f"Make NPROC_PER_NODE+1 GPUs visible (CUDA_VISIBLE_DEVICES={gpu_ids(n + 1)} for NPROC_PER_NODE={n}) "
                   f"so that vLLM gets a GPU of its own.")
    else:
        fix.append("Make one more GPU visible than NPROC_PER_NODE, so vLLM gets a GPU of its own.")
    fix.append("On ms-swift >= 3.5 use --vllm_mode colocate (vLLM shares the training GPUs) or --vllm_mode server.")
    return Diagnosis(
        message=f"vLLM was placed on {dev}, which this process cannot see: in ms-swift 3.1-3.4 vLLM needs a GPU "
                f"beyond the training ones.",
        fix=tuple(fix))
