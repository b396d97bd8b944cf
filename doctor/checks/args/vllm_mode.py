"""GD403 / GD404: --use_vllm without a --vllm_mode (ms-swift >= 3.12), or a rollout mode without vLLM; server
mode without the address of a ``swift rollout`` server."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...sources.swiftconfig import RunConfig
from .._numbers import read_or
from ._layout import nproc_per_node


def _layout(run: RunConfig) -> tuple[int | None, int | None]:
    return (run.world_size() or nproc_per_node(run), run.visible_gpus())


def vllm_mode_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    n, vis = _layout(run)
    if g.get("unsupported"):
        mode = run.get("vllm_mode", "...")
        return Diagnosis(
            message=f"--vllm_mode {mode} was given but use_vllm is false: ms-swift >= 3.12 rejects a rollout "
                    f"mode without vLLM (generation would use plain transformers).",
            fix=(f"Add --use_vllm true to generate with vLLM in {mode} mode, or drop --vllm_mode {mode}.",))
    procs = f"each of the {n} training processes" if n else "each training process"
    fix = [f"--vllm_mode colocate: {procs} runs its own vLLM engine on its GPU (this was the default in 3.5-3.11); "
           f"leave memory for training with --vllm_gpu_memory_utilization 0.4-0.6 and --sleep_level 1 "
           f"(currently {read_or(run.get('vllm_gpu_memory_utilization'), 0.9)}).",
           "--vllm_mode server: start `CUDA_VISIBLE_DEVICES=<GPUs not used for training> swift rollout --model "
           "<model>` first, then add --vllm_server_host <host> --vllm_server_port <port> (swift rollout listens on "
           "8000 by default)."]
    if vis and n and vis > n:
        fix.append(f"{vis} GPUs are visible and {n} train: server mode can use the other {vis - n} for swift rollout.")
    return Diagnosis(
        message="--use_vllm true needs --vllm_mode: from ms-swift 3.12 it has no default (3.5-3.11 silently "
                "picked colocate, or server when a server host was given).",
        fix=tuple(fix))


def server_host_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    port = run.server_port() or 8000
    return Diagnosis(
        message="--vllm_mode server needs the address of a running `swift rollout` server, but neither "
                "--vllm_server_host nor --vllm_server_base_url is set; ms-swift checks it with a bare assert, "
                "so the AssertionError carries no message.",
        fix=(f"Start the rollout server on GPUs the trainer does not use (`CUDA_VISIBLE_DEVICES=... swift "
             f"rollout --model <model> --port {port}`) and add --vllm_server_host <its host, e.g. 127.0.0.1> "
             f"--vllm_server_port {port} (or --vllm_server_base_url http://host:{port}).",
             "Or run vLLM inside the training processes instead: --vllm_mode colocate."))
