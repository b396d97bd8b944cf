"""NCCL errors other than timeouts (pattern rules' diagnose hooks): GD302 "unhandled system error"
(shared memory), GD303 two ranks on one GPU, GD304 a collective that failed (usually another rank first)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._common import rank_list

# NCCL's INFO lines: "host:pid:tid [dev] NCCL INFO comm 0x.. rank 11 nranks 16 cudaDev 3 ..." (init.cc)
_NCCL_HOST = lazyre.compile(r"^(?:\[rank\d+\]:\s*)?([\w.-]+):\d+:\d+ \[\d+\] NCCL ")
_NRANKS = lazyre.compile(r"\bnranks (\d+)\b")
_GPUS_PER_NODE = 8   # the most GPUs a training node has in practice: more ranks than that span nodes


def _spans_nodes(ctx: RunState) -> str | None:
    """What shows that the job spans several nodes (NNODES, two NCCL host names, more ranks than one node holds)."""
    nnodes = ctx.run.env.get("NNODES") or ctx.run.torchrun.get("nnodes")
    if nnodes and str(nnodes).isdigit() and int(nnodes) > 1:
        return f"NNODES {nnodes}"
    hosts: set[str] = set()
    nranks = 0
    for tail in ctx.tails.values():
        for line in tail:
            if "NCCL" not in line.text:
                continue
            m = _NCCL_HOST.match(line.text)
            if m:
                hosts.add(m.group(1))
            n = _NRANKS.search(line.text)
            if n:
                nranks = max(nranks, int(n.group(1)))
    if len(hosts) > 1:
        return f"NCCL lines from {len(hosts)} hosts"
    if nranks > _GPUS_PER_NODE:
        return f"nranks {nranks}"
    # the paste's own words: "ncclSystemError with multi-node multi-gpu training", "works on a single node but not in a
    # multi-node setup", "2 machines"
    from ..hang.symptom_words import MULTI_NODE
    said = next((ln for tail in ctx.tails.values() for ln in tail
                 if "NCCL" not in ln.text[:60] and MULTI_NODE.search(ln.text)), None)
    if said is not None:
        return f"line {said.where.line}: `{' '.join(said.text.split())[:80]}`"
    return None


# NCCL's last error naming its network transport (net_socket.cc, proxy.cc's service thread "Error encountered progressing
# operation=Connect, res=3, closing connection", NET/Socket, NET/IB): the connection between processes failed, not shm
_NETWORK_LAST = lazyre.compile(r"(?i)operation=Connect\b|closing connection|\bNET/(?:Socket|IB)\b|\bsocket\b|remote peer")


def nccl_system_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    texts = " ".join(h.evidence.text for h in hits)
    shm = "/dev/shm" in texts or "shared memory" in texts
    world = ctx.run.world_size()
    nodes = None if shm else _spans_nodes(ctx)
    last = None if shm else _last_error(ctx)
    network = last if last is not None and _NETWORK_LAST.search(last) else None
    msg = ("NCCL failed with a system error while it set up its transports"
           + (" because it could not create or extend a shared-memory segment in /dev/shm." if shm else
              " (ncclSystemError: a system call such as shm_open, socket or malloc failed)."))
    shm_fix = ["Give the container more shared memory: `docker run --shm-size=16g ...` or `--ipc=host` "
               "(Kubernetes: mount an emptyDir with medium: Memory at /dev/shm).",
               "Check it on the node: `df -h /dev/shm`.",
               "Rerun with NCCL_DEBUG=INFO to see the failing call; as a stop-gap NCCL_SHM_DISABLE=1 makes NCCL "
               "use sockets/P2P instead of shared memory (slower)."]
    if nodes:
        msg += (f" The job spans several nodes ({nodes}, read from the log): between nodes NCCL uses the network "
                f"(sockets or InfiniBand), and a failed socket or verbs call there is the usual system error.")
    if network:
        msg += (f" NCCL's own last error, `{network[:120]}`, is a network connection that failed (its proxy or "
                f"socket transport), not shared memory.")
    if nodes or network:
        # (a failed connection alone does not say the job spans nodes: then the processes, not the nodes)
        peers = "the nodes" if nodes else "the processes"
        fix = [f"Check the network NCCL picks between {peers}: NCCL_SOCKET_IFNAME set to the interface {peers} "
               f"reach each other on, firewalls open between them, and for InfiniBand/RoCE the right NCCL_IB_HCA "
               f"(NCCL_IB_DISABLE=1 to test over sockets).",
               "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: the WARN line before the error names the "
               "failing call and interface."]
        if nodes:
            # between nodes the transport is the network: a container's /dev/shm only serves the ranks of one node
            fix.append("Each node's own transport: run the same job on one node; if it fails there too, check "
                       "`df -h /dev/shm` in its container (Docker: --shm-size=16g or --ipc=host).")
            return Diagnosis(message=msg, fix=tuple(fix),
                             verify="no `unhandled system error`: NCCL initialises across the nodes (with "
                                    "NCCL_DEBUG=INFO, the ring or tree lines list the other nodes' ranks)")
        return Diagnosis(message=msg, fix=tuple(fix + shm_fix[:2]))
    msg += (" In a container the default /dev/shm (Docker: 64 MB) is far too small for NCCL between "
            + (f"{world} local ranks" if world else "the local ranks") + ".")
    fix = shm_fix + ["If /dev/shm is large, the same error comes from the network (NCCL_SOCKET_IFNAME set to the right "
                     "interface, InfiniBand: NCCL_IB_DISABLE=1 to test)."]
    return Diagnosis(message=msg, fix=tuple(fix))


# the ranks are a vLLM server's own data-parallel engines, not training ranks: the server's script or engine in the
# stack (trl/scripts/vllm_serve.py spawns one process per DP rank, 0.18+; vLLM's DPEngineCoreProc / EngineCore_DP<N>),
# or a server launch with data parallelism in the command
_SERVER_FRAMES = ("trl/scripts/vllm_serve.py", "vllm/entrypoints/", "vllm/v1/engine/core.py")
_SERVER_TEXT = lazyre.compile(r"vllm_serve\.py|data[_-]parallel[_-]size|DPEngineCore|EngineCore_DP\d")
_DP_TP = lazyre.compile(r"--(data|tensor)[_-]parallel[_-]size[ =](\d+)")


def _server_ranks(ctx: RunState, hits: list[Hit]) -> tuple[bool, dict[str, int]]:
    """Whether the duplicate ranks belong to a vLLM server (its DP engines), and the DP/TP sizes its command gives."""
    paths = [f.path for e in ctx.exceptions for f in e.frames] + [f.path for _, fr in ctx.open_tracebacks for f in fr]
    texts = list(ctx.run.command_texts) + [ln.text for tail in ctx.tails.values() for ln in tail]
    texts += [h.line.origin for h in hits if h.line is not None and h.line.origin]  # "(EngineCore_DP1 pid=..)"
    server = any(s in p for p in paths for s in _SERVER_FRAMES) or any(_SERVER_TEXT.search(t) for t in texts)
    sizes: dict[str, int] = {}
    for t in ctx.run.command_texts:
        for m in _DP_TP.finditer(t):
            sizes.setdefault(m.group(1), int(m.group(2)))
    return server, sizes


def _same_gpu(hits: list[Hit]) -> str:
    g = hits[0].groups
    return (f"NCCL found rank {g.get('a', '?')} and rank {g.get('b', '?')} on the same GPU (device "
            f"{g.get('dev', '?')}) and refused to build the communicator: NCCL needs one GPU per rank.")


def duplicate_gpu_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if _server_ranks(ctx, hits)[0]:
        return None  # a vLLM server's own data-parallel engines: GD222
    run = ctx.run
    msg = _same_gpu(hits)
    if ctx.framework()[0] in ("verl", "easyr1", "openrlhf"):
        # Ray places these frameworks' workers (its placement groups set each worker's CUDA_VISIBLE_DEVICES): no
        # launcher's process count is involved
        msg += (" The ranks are Ray workers: Ray gives each worker its GPUs through placement groups and sets its "
                "CUDA_VISIBLE_DEVICES; two of them seeing the same device is Ray's placement (or a device the worker "
                "picked itself), not a process count.")
        return Diagnosis(message=msg, fix=(
            "Check the Ray version the framework documents (older Ray releases mis-assign GPUs to colocated workers) "
            "and that the trainer's GPUs per node match the GPUs Ray sees (`ray status`); do not set "
            "CUDA_VISIBLE_DEVICES inside the workers.",
            "Make sure no code pins a device itself (cuda:0, torch.cuda.set_device with a fixed index) inside a "
            "worker."))
    nproc = run.env.get("NPROC_PER_NODE") or run.torchrun.get("nproc_per_node")
    visible = run.env.get("CUDA_VISIBLE_DEVICES")
    n_vis = run.visible_gpus()
    fix = []
    if nproc is not None and n_vis is not None:
        fix.append(f"NPROC_PER_NODE={nproc} but CUDA_VISIBLE_DEVICES={visible} shows {n_vis} GPU(s): "
                   f"use NPROC_PER_NODE={n_vis}, or list {nproc} GPUs in CUDA_VISIBLE_DEVICES.")
    else:
        now = (f" (now NPROC_PER_NODE={nproc or 'unset'}, CUDA_VISIBLE_DEVICES={visible or 'unset'})"
               if nproc is not None or visible is not None else "")
        fix.append("Make NPROC_PER_NODE (training processes per node) equal to the number of GPUs in "
                   f"CUDA_VISIBLE_DEVICES{now}; `nvidia-smi -L` lists the GPUs.")
    fix.append("Colocated vLLM / reward models must not be pinned to a GPU that a training rank owns "
               "(no explicit device like cuda:0 in your plugin code).")
    fix.append("In your own scripts call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before "
               "init_process_group.")
    return Diagnosis(message=msg, fix=tuple(fix))


def server_duplicate_gpu_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    """GD222: two of the vLLM server's own data-parallel engines on one GPU (trl vllm-serve --data_parallel_size, vllm
    serve --data-parallel-size): each DP rank takes TP GPUs of the server's visible devices, in order. None when the
    ranks are not a server's (GD303)."""
    server, sizes = _server_ranks(ctx, hits)
    if not server:
        return None
    msg = _same_gpu(hits)
    dp, tp = sizes.get("data"), sizes.get("tensor")
    need = f"{dp} x {tp} = {dp * tp} (computed)" if dp and tp else "data_parallel_size x tensor_parallel_size"
    have = "`nvidia-smi -L` in the server's environment lists the GPUs it sees"
    msg += (" The ranks are the vLLM server's data-parallel engines (its start-up failed, so the trainer's client has "
            "nothing to connect to): each engine needs tensor_parallel_size GPUs of its own among the server's "
            "visible GPUs.")
    fix = (f"Start the server on exactly {need} GPUs: `CUDA_VISIBLE_DEVICES=<that many GPUs> trl vllm-serve --model "
           f"<model> --data_parallel_size D --tensor_parallel_size T` (vllm serve: --data-parallel-size / "
           f"--tensor-parallel-size); {have}.",
           "In a container or a SLURM step, check that every visible GPU is a distinct device: `nvidia-smi -L` and "
           "`python -c 'import torch; print([torch.cuda.get_device_properties(i).uuid for i in "
           "range(torch.cuda.device_count())])'` inside it (docker --gpus / NVIDIA_VISIBLE_DEVICES, srun "
           "--gpus-per-task, CUDA_VISIBLE_DEVICES set by the scheduler and again by hand).",
           "To rule the data-parallel start-up out, start the server with --data_parallel_size 1 on one GPU: if that "
           "serves, the GPU mapping is the cause.",
           "Train on GPUs the server does not use (the trainer's own CUDA_VISIBLE_DEVICES).")
    return Diagnosis(message=msg, fix=fix)


_NCCL_REASON = lazyre.compile(r"NCCL error in: [^,]*, ([^,(]+)")


# NCCL's warning when a CUDA call it makes fails (include/alloc.h, transport/*.cc: `NCCL WARN Cuda failure 1 'invalid
# argument'`), with or without its "host:pid:tid [dev] file:line" head
_CUDA_FAILURE = lazyre.compile(r"\bCuda failure \d+ '[^']+'")


def _own_cuda_failure(ctx: RunState):
    """NCCL's WARN line of a failed CUDA call of its own, in the last lines of any log; None when there is none."""
    return next((ln for tail in ctx.tails.values() for ln in tail if _CUDA_FAILURE.search(ln.text)), None)


# torch appends NCCL's own last warning to its exception (c10d NCCLUtils getNcclErrorDetailStr: "\nLast error:\n" +
# ncclGetLastError()), the line that names what failed inside NCCL; before it a process prefix and a logger's may stand
_LAST_ERROR = lazyre.compile(r"\bLast error:\s*(?P<rest>.*)$")
_LOGGER_PREFIX = lazyre.compile(r"^(?:\(\w+ pid=\d+(?:, ip=[\d.]+)?\)\s*)?(?:\[rank\d+\]:\s*)?"
                                r"(?:(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d [\d:]+ [\w.]+:\d+\]\s*)?")
# what NCCL's last error names, and where to look: its topology detection (graph/xml.cc, topo.cc "Attribute %s of node
# %s not found"), the network interfaces it picks (net_socket.cc, "no socket interface found"), InfiniBand verbs calls
_LAST_ERROR_KINDS = (
    (lazyre.compile(r"(?i)\bcuda failure\b|\bcuda error\b"),
     "A CUDA call NCCL made failed on this GPU: a driver older than the CUDA that torch and NCCL were built for, a "
     "feature the GPU or driver lacks (NCCL_NVLS_ENABLE=0, NCCL_P2P_DISABLE=1 test the transports that need them), "
     "Xid errors in `dmesg`; rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1."),
    (lazyre.compile(r"(?i)\b(?:attribute \w+ of node|topology|topo|xml|busid|pci)\b"),
     "NCCL's topology detection could not read this machine's devices (a NIC or GPU without the PCI attribute it "
     "looks up, common in containers and on less usual platforms): give it a topology file (NCCL_TOPO_FILE) or "
     "upgrade NCCL, and keep it off the device it cannot read (NCCL_SOCKET_IFNAME=<interface>, NCCL_IB_DISABLE=1)."),
    (lazyre.compile(r"(?i)\b(?:socket|interface|ifname|bootstrap|connect)"),
     "NCCL could not set up its sockets: set NCCL_SOCKET_IFNAME to the interface the processes reach each other on "
     "(`ip addr`), and check firewalls between nodes."),
    (lazyre.compile(r"(?i)\bibv_|\binfiniband\b|\bmlx\d|\bIB\b"),
     "NCCL's InfiniBand transport failed: NCCL_IB_DISABLE=1 tests the run over sockets; check NCCL_IB_HCA and the "
     "verbs devices (`ibv_devinfo`)."),
)


def _last_error(ctx: RunState) -> str | None:
    """NCCL's own last error that torch printed after its exception (the line after `Last error:`), or None."""
    for tail in ctx.tails.values():
        tail = list(tail)
        for i, line in enumerate(tail):
            m = _LAST_ERROR.search(line.text) if "Last error" in line.text else None
            if m is None:
                continue
            rest = m.group("rest").strip()
            if not rest and i + 1 < len(tail):
                rest = _LOGGER_PREFIX.sub("", tail[i + 1].text.strip(), count=1).strip()
            rest = rest.rstrip(" :")
            if rest:
                return rest[:200]
    return None


_ONE_PROCESS_CUDA = lazyre.compile(r"NCCL Error 1: unhandled cuda error")


def nccl_backend_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    ranks = sorted({h.rank for h in hits if h.rank is not None})
    reason = None
    for h in hits:
        m = _NCCL_REASON.search(h.evidence.text)
        if m:
            reason = m.group(1).strip()
            break
    remote = any("ncclRemoteError" in h.evidence.text or "remote process" in h.evidence.text for h in hits)
    who = f"rank(s) {rank_list(ranks)}" if ranks else "a rank"
    cuda_said = (reason and "cuda" in reason.lower()) or any("unhandled cuda error" in h.evidence.text for h in hits)
    own = _own_cuda_failure(ctx) if cuda_said else None
    if own is not None:
        # NCCL's own WARN line names the CUDA call it made that failed (include/alloc.h, transport/nvls.cc...): a
        # failure on this rank's GPU, not a broken peer
        msg = (f"An NCCL call failed on {who} ({reason or 'unhandled cuda error'}): NCCL's own WARN line reports a "
               f"CUDA call it made that failed (`{own.text.strip()[-160:]}`), so the cause is that process's CUDA call "
               f"on its GPU, not another rank's crash.")
        fix = ["The WARN line names the NCCL source that made the call: a driver older than the CUDA that torch and "
               "NCCL were built for, or a feature the GPU or driver lacks, fails this way; compare `nvidia-smi` "
               "(driver, CUDA version) with `python -c 'import torch; print(torch.version.cuda, "
               "torch.cuda.nccl.version())'`."]
        if "nvls" in own.text.lower():
            fix.append("The failing call is NVLink SHARP's (transport/nvls.cc): NCCL_NVLS_ENABLE=0 tests the run "
                       "without it.")
        fix.append("Rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 to see the call in full.")
        return Diagnosis(message=msg, fix=tuple(fix), title="NCCL error: a CUDA call of NCCL's own failed")
    if any(_ONE_PROCESS_CUDA.search(h.evidence.text) for h in hits):
        # torch/csrc/cuda/nccl.cpp's wording ("NCCL Error 1: unhandled cuda error"): torch.cuda.nccl, the NCCL calls
        # one process makes across its GPUs (nn.DataParallel's broadcasts and reductions), with no other rank to die
        # first; error 1 is ncclUnhandledCudaError, a CUDA call of NCCL's own that failed
        msg = ("A CUDA call that NCCL made failed (NCCL's error 1, unhandled cuda error), in torch's single-process "
               "NCCL calls (torch.cuda.nccl: one process driving several GPUs, as nn.DataParallel does), so there is "
               "no other rank whose crash it follows: the cause is on those GPUs, an earlier CUDA error in the same "
               "process (an illegal memory access, out of memory), peer-to-peer access between the GPUs, or a "
               "driver older than the CUDA that torch and NCCL were built for.")
        fix = ["Rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1: NCCL's WARN line then names the CUDA call that "
               "failed, and a CUDA error before it shows in its own traceback.",
               "Compare the driver with the CUDA that torch was built for (`nvidia-smi` against `python -c 'import "
               "torch; print(torch.version.cuda, torch.cuda.nccl.version())'`), look for Xid errors in `dmesg`, and "
               "test without peer-to-peer transfers (NCCL_P2P_DISABLE=1)."]
        return Diagnosis(message=msg, fix=tuple(fix), title="NCCL error: a CUDA call inside NCCL failed")
    last = None if remote else _last_error(ctx)
    if last is not None:
        # NCCL says what failed inside it: the cause is on this rank, not a peer that died
        msg = (f"An NCCL call failed on {who}" + (f" ({reason})" if reason else "") + f": NCCL's own last error, "
               f"printed under torch's exception, is `{last}`: the failure is inside NCCL on this process, not a "
               f"consequence of another rank.")
        kind = next((said for rx, said in _LAST_ERROR_KINDS if rx.search(last)), None)
        fix = ([kind] if kind else []) + ["Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET) to see the "
                                          "set-up steps before that error, and search NCCL's issues for its words."]
        return Diagnosis(message=msg, fix=tuple(fix), title="NCCL error: NCCL names its own failure")
    msg = (f"An NCCL collective failed on {who}" + (f" ({reason})" if reason else "") + ": "
           + ("a peer process exited or the connection to it broke, so the cause is on the other rank (or the "
              "network between nodes)." if remote else
              "the communicator broke; usually another rank exited or crashed first."))
    fix = ["Look for the first rank that failed before this error (a Python traceback, 'Killed' / exit code -9, a "
           "CUDA error): this error is a consequence of it."]
    if reason and "cuda" in reason.lower():
        fix.append("'unhandled cuda error': a CUDA failure on this GPU (driver/toolkit mismatch, Xid errors in "
                   "dmesg, an earlier illegal memory access); rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1.")
    fix.append("If every rank shows only this error: rerun with NCCL_DEBUG=INFO; across nodes check the network "
               "(NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE=1 to test).")
    ifname = ctx.run.env.get("NCCL_SOCKET_IFNAME")
    if remote and ifname:
        # the run chose the interface itself: a node where it is missing or does not reach the others breaks the
        # connection the same way
        fix.append(f"The run's NCCL_SOCKET_IFNAME names the interface `{ifname}`: check on every node that it exists "
                   f"and carries the address the other nodes reach (`ip addr show {ifname}`, ping the other node's "
                   f"address over it), and that no firewall blocks the ports between the nodes.")
    return Diagnosis(message=msg, fix=tuple(fix))
