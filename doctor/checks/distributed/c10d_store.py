"""c10d store errors (pattern rules' diagnose hooks): GD305 a store / socket connection that timed out
(rendezvous, or the vLLM rollout server's weight-sync group), GD306 a port already in use."""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import flag_in_version
from ...values import as_int
from .._numbers import READ, first, read_or
from .._units import duration
from ._common import VLLM_GROUP_PORT

_PORT = lazyre.compile(r"(?:\(([\w.\-:]+), (\d+)\)|host ([\w.\-]+):(\d+)|port: (\d+)|connect to ([\w.\-]+):(\d+))")
# the port of the address a server socket failed to bind ("[::]:29500", "0.0.0.0:29500", "localhost:29500") or
# c10d's "port: 29500": never digits after any colon, which a timestamp ("10:29:50") has too
_BIND_PORT = lazyre.compile(r"(?:\bport: |\]:|(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}:|\blocalhost:)(\d{2,5})\b")
# torch's socket.cpp: "SocketImpl(fd=11, addr=[host]:38674, remote=[::ffff:10.0.0.1]:23456)": the store's end
_REMOTE = lazyre.compile(r"remote=\[?(?:::ffff:)?([\w.\-:]+?)\]?:(\d+)\)")


_JOINED = lazyre.compile(r"waiting for clients\. (\d+)/(\d+) clients joined")
# a connection that was never made (the listening side not up, unreachable) against one that broke after it was made
_NEVER_CONNECTED = lazyre.compile(r"while trying to connect|failed to connect|waiting for clients|waitForInput|"
                                  r"Rendezvous(?:Connection|Timeout)Error|Socket Timeout|"
                                  r"Timed out initializing process group", re.I)
_BROKE = lazyre.compile(r"Connection reset|Failed to recv|Broken pipe|closed by (?:the )?(?:remote )?peer", re.I)


def socket_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    run = ctx.run
    ignored = [h for h in hits if h.groups.get("ignored")]
    hits = [h for h in hits if not h.groups.get("ignored")]
    if not hits:
        return None  # torchrun's master_addr warning alone: printed by healthy --standalone launches too
    if ignored and "RendezvousTimeoutError" in " ".join(h.evidence.text for h in hits):
        return _rendezvous_without_endpoint(ignored[0], ctx)
    host = port = None
    for h in hits:
        m = _PORT.search(h.evidence.text)
        if m:
            host = m.group(1) or m.group(3) or m.group(6)
            port = as_int(m.group(2) or m.group(4) or m.group(5) or m.group(7))
            break
        r = _REMOTE.search(h.evidence.text)
        if r:
            host, port = r.group(1), as_int(r.group(2))
            break
    text = " ".join(h.evidence.text for h in hits)
    timeout = None
    t = re.search(r"timed out after (\d+)(ms|s)", text)
    if t:
        timeout = int(t.group(1)) * (1 if t.group(2) == "ms" else 1000)
    group_port = run.int_arg("vllm_server_group_port") or VLLM_GROUP_PORT
    server = run.args.get("vllm_mode") == "server" or run.args.get("vllm_server_host") is not None or \
        run.args.get("vllm_server_base_url") is not None
    where = f"{host}:{port}" if host and port else (f"port {port}" if port else "the rendezvous store")
    waited = f" for {duration(timeout / 1000)}" if timeout else ""
    fix: list[str] = []
    fw = ctx.framework()[0]
    ran = _trained_before(ctx, hits[0].seq)
    if ran is not None and not _JOINED.search(text):
        return _mid_run(ran, where, waited, port is not None and group_port <= port < group_port + 64)
    if port is not None and group_port <= port < group_port + 64 and fw in ("trl", "unsloth", "verifiers"):
        # trl: VLLMClient(group_port=51216) joins the StatelessProcessGroup that `trl vllm-serve` hosts for weight sync
        msg = (f"The trainer waited{waited} to join the weight-sync process group of the `trl vllm-serve` server at "
               f"{where} (GRPOConfig vllm_group_port, default {VLLM_GROUP_PORT}) and nobody was listening there: the "
               f"server side never opened the group store on that host and port.")
        fix.append(f"Check that `trl vllm-serve` is running and that this node reaches it on port {port} as well as "
                   f"on its HTTP port: GRPOConfig vllm_server_host (or vllm_server_base_url) must name the server's "
                   f"address, not {host or 'a default'} when the server runs elsewhere; unset http_proxy/https_proxy "
                   f"and any variable that overrides the host address.")
        fix.append(f"If another run holds port {port}, pick a free one on both sides (GRPOConfig vllm_group_port); use "
                   f"the same trl and vLLM versions for the server and the trainer.")
    elif port is not None and group_port <= port < group_port + 64:
        msg = (f"The trainer waited{waited} to join the weight-sync process group of the vLLM rollout server at "
               f"{where} (vllm_server_group_port, default {VLLM_GROUP_PORT}+i) and nobody was listening there.")
        fix.append(f"Check that `swift rollout` is running and reachable from this node on port {port} "
                   f"(not only on its HTTP port {read_or(run.server_port(), 8000)}): firewall, a proxy "
                   "(unset http_proxy/https_proxy/all_proxy for the rollout host), or a server on another machine "
                   f"while the trainer connects to {host or 'the host you gave'}.")
        fix.append("Use the same ms-swift and vLLM versions for `swift rollout` and the trainer: the group "
                   "handshake changed between releases.")
        if flag_in_version(run, "vllm_server_group_port"):
            fix.append(f"If another run already holds port {port}, pass a free one with --vllm_server_group_port "
                       "(ms-swift >= 3.11), and restart `swift rollout` between runs.")
    elif joined := _JOINED.search(text):
        # the store's own side: torchrun's static rendezvous makes node 0 host the TCPStore and wait for every
        # node's agent (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py, torch 2.x)
        k, n = joined.groups()
        msg = (f"The rendezvous store on this node (the master) waited{waited} for the other nodes' launchers and "
               f"only {k} of {n} joined: the missing node(s) never started torchrun, or cannot reach "
               "MASTER_ADDR:MASTER_PORT.")
        fix.append(f"Start the job on all {n} nodes (NNODES {n}, each with its own NODE_RANK) within the rendezvous "
                   "timeout, or set NNODES to the nodes you have.")
        fix.append("From each missing node, check that MASTER_ADDR (this node's address) and MASTER_PORT are reachable "
                   "(firewall, a wrong interface address); the same NNODES / NPROC_PER_NODE everywhere.")
    else:
        master = run.env.get("MASTER_PORT") or run.torchrun.get("master_port")
        msg = (f"A c10d store connection to {where} timed out{waited} or broke: the process that should serve "
               "it (rank 0 / the master node) was not listening, had died, or is unreachable.")
        fix.append("Find out whether rank 0 (or the master node) is alive and got past the same point: if it died, "
                   "its error is the root cause.")
        fix.append("Multi-node: MASTER_ADDR must be the IP of node 0 reachable from every node, MASTER_PORT open "
                   f"({_master_port(master, port)}), the same NNODES / NPROC_PER_NODE everywhere.")
        if server:
            fix.append(f"Server mode: the trainer also connects to the rollout server's group port "
                       f"{read_or(run.int_arg('vllm_server_group_port'), group_port)}; make sure it is reachable.")
    # processes that never met before the first step: the run hangs at its start (its processes wait for each other
    # or for the server), the store's timeout only ends the wait
    at_start = ctx.metrics_steps == 0 and bool(_NEVER_CONNECTED.search(text)) and not _BROKE.search(text)
    return Diagnosis(message=msg, fix=tuple(fix), category="hang-at-start" if at_start else None)


def _trained_before(ctx: RunState, seq: int) -> tuple[int, int, str] | None:
    """(step, total, elapsed) of the last training progress bar before the store error, when it had passed step 0."""
    from ._slow_steps import last_rate
    rate = last_rate(None, ctx, seq)
    return (rate[1], rate[2], rate[3]) if rate is not None and rate[1] > 0 else None


def _mid_run(ran: tuple[int, int, str], where: str, waited: str, sync_group: bool) -> Diagnosis:
    """A store wait that timed out after training steps ran: the connection worked, its other side stopped answering."""
    step, total, elapsed = ran
    peer = ("the vLLM server's weight-sync group (its store serves every broadcast of new weights)" if sync_group
            else "the process that serves the store (rank 0 / the master node)")
    msg = (f"A c10d store wait on {where} timed out{waited} after the run had trained {step} of {total} steps "
           f"({elapsed}, read from its progress bar): the store worked before, so {peer} stopped answering in the "
           f"middle of the run (it died, hung, or the network between them dropped), not at start-up.")
    fix = ("Read the other side's own log at the time of the timeout (the rollout server's, or rank 0's): its "
           "traceback, a kill (`dmesg -T | grep -i -E 'killed|oom'`) or a hang (py-spy dump of its process) is the "
           "cause; the trainer's timeout only reports it.",
           "If it happens after hours every time, watch the other side's memory over the run (host RAM and GPU "
           "memory grow until a kill) and restart from the last checkpoint meanwhile.")
    return Diagnosis(message=msg, fix=fix, title="A c10d store wait timed out mid-run: its other side stopped answering",
                     verify=f"the run passes step {step} with no store or socket timeout, and the other side's log "
                            f"shows no error")


def _rendezvous_without_endpoint(warning: Hit, ctx: RunState) -> Diagnosis:
    """A rendezvous that timed out after torchrun said it ignores --master_addr: a dynamic (c10d) rendezvous with no
    --rdzv_endpoint, so each node's agent met at an endpoint of its own and the others never came."""
    msg = (f"The rendezvous timed out, and torchrun warned at the start (line {warning.evidence.line}) that "
           "`master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified`: torchrun "
           "prints it when the rendezvous backend is not `static` and no --rdzv_endpoint is given "
           "(torch/distributed/run.py config_from_args), so --master_addr/--master_port were not used to meet; each "
           "node's agent most likely waited at an endpoint of its own and the other nodes never joined it.")
    fix = ("On every node pass the same rendezvous: --rdzv_backend=c10d --rdzv_endpoint=<node 0's IP>:<port> "
           "--rdzv_id=<one id for the job> --nnodes=<N>; or use the static rendezvous: --master_addr <node 0's IP> "
           "--master_port <port> --node_rank <i> with no --rdzv_backend/--standalone.",
           "Check that the port is reachable from every node (firewall) before starting.")
    return Diagnosis(message=msg, fix=fix, category="hang-at-start" if ctx.metrics_steps == 0 else None,
                     title="Rendezvous timed out: torchrun ignored --master_addr")


def _master_port(master: object, store_port: int | None) -> str:
    """MASTER_PORT as the launch gives it, else the port of the store the log's socket line names, else assumed."""
    if master:
        return f"now {master}"
    if store_port is not None:
        return f"the store listens on {store_port}, read from the log"
    return "now 29500 (assumed), the default"


# the words of torch's store, its launchers and its socket code around a bind error
_STORE_WORDS = lazyre.compile(r"(?i)c10d|TCPStore|socket\.cpp|server socket|master_port|MASTER_ADDR|rendezvous|"
                              r"torch\.distributed|torchrun|elastic")


def _vllm_engine_started(ctx: RunState) -> bool:
    """The log shows a vLLM engine starting or failing: its frames, or its engine core's lines."""
    return any("vllm/" in f.path for e in ctx.exceptions for f in e.frames) or \
        any("EngineCore" in ln.text or "Engine core initialization failed" in ln.text for ln in ctx.last_tail())


def port_in_use_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    port = None
    for h in hits:
        m = _BIND_PORT.search(h.evidence.text)
        if m:
            port = as_int(m.group(1))
            break
    p_ = first((port, READ), (as_int(run.env.get("MASTER_PORT") or run.torchrun.get("master_port")), READ),
               default=29500)  # torchrun's default master port when neither the error nor the run names one
    p = p_.value
    if p_.assumed and not any(_STORE_WORDS.search(h.evidence.text) for h in hits) and _vllm_engine_started(ctx):
        # no port, no store, no launcher: the socket that could not bind is the vLLM engine's own (its ZMQ and
        # distributed-init ports), left held by the engine of an earlier crash
        return Diagnosis(
            message="An address is already in use in a log that shows a vLLM engine starting or failing: the "
                    "error names no port, and nothing in the log shows torch's store (c10d) or a launcher binding "
                    "one, so the socket is most likely the engine's own, still held by an engine process of an "
                    "earlier start or crash.",
            fix=("Stop the leftover engine processes before starting again (`ps aux | grep -i -E 'vllm|EngineCore'`, "
                 "`ss -ltnp` for the ports they hold); a restart inside the same job after a crash needs the old "
                 "engine core gone first.",
                 "Share the lines above `address already in use` (the engine core's own traceback) if it persists."),
            category="vllm-engine-error", confidence="possible",
            title="An address already in use when the vLLM engine starts")
    msg = (f"Port {p_} is already in use on this machine, so the distributed store could not listen: another "
           "training run (or a leftover process of an earlier one) holds it.")
    port = (f"Use another port: MASTER_PORT={p + 1} swift rlhf ... (ms-swift passes MASTER_PORT to torchrun)."
            if ctx.framework()[0] == "ms-swift" else
            f"Use another port: torchrun --master_port {p + 1} (accelerate launch --main_process_port {p + 1}, "
            f"deepspeed --master_port {p + 1}; MASTER_PORT={p + 1} where the launcher reads the environment).")
    fix = [port,
           f"Or free it: `lsof -i :{p}` / `ss -ltnp | grep {p}` and stop the stale process."]
    if p >= VLLM_GROUP_PORT and p < VLLM_GROUP_PORT + 64:
        fix.append("For the vLLM weight-sync group use --vllm_server_group_port with a free port (ms-swift >= 3.11).")
    if p_.assumed:
        msg += " The port is not in the log: torchrun's default master port is assumed."
    same = _same_rank_for_all(run)
    if same is not None:
        flag, value, procs = same
        msg = (f"Port {p_} could not be bound twice on this machine. The command passes `--{flag} {value}` to the "
               f"script itself, so each of the {procs} processes torchrun starts (--nproc_per_node {procs}) is told it "
               f"is {flag.replace('_', ' ')} {value}: when the script builds its process group from that value, every "
               f"process acts as rank {value} and tries to host the store on the same port, and all but the first "
               f"fail to listen. " + ("The port is not in the log: torchrun's default master port is assumed."
                                      if p_.assumed else ""))
        fix = [f"Drop `--{flag} {value}` from the command and read the rank from the environment torchrun sets "
               f"(int(os.environ['LOCAL_RANK']), RANK, WORLD_SIZE; torch.distributed.init_process_group() reads them "
               f"itself)."]
        return Diagnosis(message=msg.strip(), fix=tuple(fix), title="Every process was told it is rank "
                         f"{value}: the store's port bound twice")
    return Diagnosis(message=msg, fix=tuple(fix))


def _same_rank_for_all(run) -> tuple[str, int, int] | None:
    """(flag, value, processes) when a torchrun launch of several processes passes one fixed --local_rank or --rank
    to its script: torchrun gives every worker the same script arguments, so all of them get that value."""
    procs = as_int(run.torchrun.get("nproc_per_node"))
    if procs is None or procs < 2:
        return None
    for flag in ("local_rank", "rank"):
        value = as_int(run.cli.get(flag))
        if value is not None:
            return flag, value, procs
    return None
