"""What to do and what to paste next about how a log ended (GD323, GD324, GD326): per ending kind and phase."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...signals import LogLine
from ._advice import generic_fix
from .endings import (
    ENGINE_CORE_PHASE,
    GENERATION_PHASE,
    GROUP_PHASE,
    NCCL_ID_PHASE,
    RAY_START_PHASE,
    STORE_PHASE,
    WORKERS_PHASE,
    Ending,
)

_URL = lazyre.compile(r"https?://[\w.\-]+:\d{2,5}")

PASTE_NEXT = {
    "loop": "the other side's own log (the server's or the rank's it waits for: its first error is the cause) and "
            "both launch commands",
    "bar": "the stack of every rank taken while it is stuck (`py-spy dump --pid PID`) and the last 200 lines of "
           "each rank's log",
    "faulthandler": "the whole dump (every thread) and the 50 lines before it",
    "phase": "the last 200 lines of the log and `nvidia-smi` taken while it is stuck",
    "nccl": "the NCCL WARN lines of every rank, with NCCL_DEBUG=INFO, and the launch command",
    "native": "the error line above these frames (DistBackendError, DistStoreError or the watchdog's message) and rank "
              "0's own log from the same minutes",
    "heartbeat": "the stack of every training process taken while it is stuck (`py-spy dump --pid PID`) and the "
                 "lines the trainer printed before its last one",
    "error": "the 100 lines before this error line and the launch command",
    "crash-header": "the lines after this header in the full log (or each rank's log), down to the last "
                    "`SomeError: message` line",
    "signal": "the job scheduler's record of the job and the 100 lines before the signal",
    "ray": "`ray status` taken while it waits (the resources each node offers and the requests pending) and the "
           "launch command",
    "warning": "the lines where the run stopped or went wrong (a traceback, an exit code, the last metric rows) and "
               "the launch command",
}


def paste_key(e: Ending) -> str:
    """What to paste next for this ending: by its kind, but for a wait on Ray's resources, what Ray knows of them."""
    return "ray" if e.kind == "loop" and e.phase == RAY_START_PHASE else e.kind


def fix_for(e: Ending, ctx: RunState, lines: list[LogLine]) -> list[str]:
    if e.kind == "loop" and "server" in e.phase:
        url = next((m.group(0) for ln in reversed(lines) for m in [_URL.search(ln.text)] if m), None)
        target = url or "http://HOST:PORT"
        return [f"Check that the server answers from the trainer's host: `curl {target}/health/` (trl vllm-serve; "
                f"ms-swift rollout: `curl {target}/health/` too). No answer: the server is not up or not on that "
                "host/port, and its own log says why.",
                "An answer from curl but not from the trainer: a proxy in the trainer's environment intercepts the "
                "call; unset http_proxy/https_proxy or add the server's host to no_proxy in the trainer's shell.",
                "Start the server first and wait for its 'Application startup complete' line before the trainer."]
    if e.kind == "loop" and "download" in e.phase:
        return ["Download the model or dataset once (huggingface-cli download / modelscope download) and pass the "
                "local path; set HF_HUB_OFFLINE=1 on the training nodes, or HF_ENDPOINT for a mirror."]
    if e.kind == "loop" and "rendezvous" in e.phase:
        return ["Every node must use the same MASTER_ADDR and MASTER_PORT, and that port must be free and reachable "
                "from each node (a process left from an earlier run holds it: `ss -ltnp | grep PORT`)."]
    if e.kind == "native" and e.phase == NCCL_ID_PHASE:
        return ["Look at what rank 0 was doing meanwhile (its own log): the other ranks wait for it at the first "
                "collective, and a rank 0 still preprocessing the dataset, loading or crashed leaves them waiting until "
                "the store's timeout. Preprocess the data before the launch (or on every rank), and raise the timeout "
                "(TrainingArguments ddp_timeout / ms-swift --ddp_timeout) if rank 0 only needs longer."]
    if e.kind == "native" and e.phase == STORE_PHASE:
        return ["Every rank must use the same MASTER_ADDR / MASTER_PORT and reach the same collectives: find the rank "
                "that never set the key (its log stops earlier or shows an error) and start from its failure."]
    if e.kind == "nccl" or e.kind == "native":
        return ["The NCCL setup never completed on some rank: check that every rank reached this point, "
                "NCCL_SOCKET_IFNAME names an interface all nodes share, and try NCCL_P2P_DISABLE=1 on PCIe-only "
                "machines."] + generic_fix(ctx.run)
    if e.kind == "loop" and e.phase == ENGINE_CORE_PHASE:
        return ["The engine core process (its lines carry `EngineCore` or `Worker_TP<N>`) is stuck in its own start: "
                "model load, the NCCL setup between its tensor-parallel GPUs, compilation or CUDA graph capture. Its own "
                "last lines say which; take `py-spy dump --pid <EngineCore pid>` while it waits.",
                "With tensor parallelism over several GPUs the NCCL setup is the usual place: rerun with NCCL_DEBUG=INFO, "
                "try NCCL_P2P_DISABLE=1 (GPUs without a working peer-to-peer path: PCIe, VMs, GPU virtualization) and "
                "--disable-custom-all-reduce; --enforce-eager skips graph capture."]
    if e.phase == RAY_START_PHASE:
        return ["Run `ray status` while it waits: an actor or placement group that asks for more GPUs or CPUs than the "
                "cluster has waits without an error (verl: trainer.n_gpus_per_node x trainer.nnodes must match the GPUs "
                "Ray sees). The actors' own logs are in /tmp/ray/session_latest/logs/ (worker-*.err).",
                "On a multi-node cluster whose nodes have several addresses, the same wait appears when vLLM asks for "
                "a node by an address Ray does not use for it: set VLLM_HOST_IP on each node to the address of its "
                "`ray start --node-ip-address`."]
    if e.phase == WORKERS_PHASE:
        return ["verl's driver is waiting for the worker group's first worker to register (it gives up after "
                "ray_wait_register_center_timeout, 300 s by default): the workers have not started. Run `ray status`: a "
                "placement group asking for more GPUs than Ray sees stays pending (trainer.n_gpus_per_node x "
                "trainer.nnodes must not exceed them); otherwise a worker died at start, and its own log in "
                "/tmp/ray/session_latest/logs/ (worker-*.err) says why."]
    if e.phase == GROUP_PHASE:
        return ["Every rank announced it was joining the process group and none went on: they never formed it. Check "
                "that MASTER_ADDR and MASTER_PORT are reachable from every rank (a firewall, a port in use), rerun with "
                "NCCL_DEBUG=INFO to see how far NCCL gets, set NCCL_SOCKET_IFNAME to the interface the ranks share, and "
                "try NCCL_P2P_DISABLE=1 where GPU peer-to-peer is broken (consumer GPUs, IOMMU/ACS on): a run that then "
                "starts names the cause."]
    if e.phase == GENERATION_PHASE:
        return ["The engine was generating when the log stopped: its stats line shows the requests still running. Take "
                "`py-spy dump --pid PID` of the trainer and the engine while it is stuck; a generation that never ends "
                "is most often an unbounded max_tokens / response length or a rank waiting for the others' rollouts."]
    if e.phase == "model load":
        return ["A load that stops is most often slow storage or host memory running out: check `dmesg -T | grep -i kill` and "
                "`free -g` while it loads, and put the weights on a local disk."]
    if e.phase == "dataset preprocessing":
        return ["Run the preprocessing with one worker to confirm (ms-swift --dataset_num_proc 1; LLaMA-Factory "
                "preprocessing_num_workers: 1; datasets num_proc=1): a worker that died or deadlocked leaves the map "
                "waiting forever, and a cached, preprocessed dataset (LLaMA-Factory tokenized_path) skips the map on "
                "the next run."]
    return generic_fix(ctx.run)


__all__ = ["PASTE_NEXT", "fix_for", "paste_key"]
