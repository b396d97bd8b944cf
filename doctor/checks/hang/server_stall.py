"""GD322: a vLLM rollout server log (`swift rollout`, `trl vllm-serve`) that stops, with no error, in a
start-up phase: after the engine reported ready but before the HTTP server served, or after a trainer
called `/init_communicator/` but before any weight update or generation request came.

GD320/GD321 follow the trainer's console log; a rollout server's log has none of its markers, so they
stay silent on it. This rule reads the server's own milestones. It is a warning: a pasted excerpt that
just stops looks the same as a hang, and the finding says so.
"""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...registry import RuleMeta
from ...rules import Rule
from ...signals import ExceptionInfo, LogLine
from ...sources.command_text import SERVER_COMMANDS

# (literal, milestone), the last one seen decides where the server stopped
_MILESTONES: tuple[tuple[str, str], ...] = (
    ("init engine (profile, create kv cache", "engine-ready"),
    ("Core engine process 0 ready", "engine-ready"),
    ("Graph capturing finished", "engine-ready"),
    ("Asynchronous scheduling is enabled", "engine-ready"),
    ("Started server process", "server-starting"),
    ("Waiting for application startup", "server-starting"),
    ("Application startup complete", "serving"),
    ("Uvicorn running on", "serving"),
    ("/health/", "client-connected"),
    ("/get_world_size/", "client-connected"),
    ("/init_communicator/", "weight-sync-setup"),
    ("/get_model_state_keys/", "client-connected"),
    ("/update_", "serving-requests"),  # /update_flattened_params/, /update_named_param/, /update_adapter_*
    ("/infer/", "serving-requests"),
    ("/generate/", "serving-requests"),
    ("/close_communicator/", "serving-requests"),
    ("/reset_prefix_cache/", "serving-requests"),
)
_STUCK = {
    "engine-ready": ("the vLLM engine finished its start-up (KV cache, CUDA graphs) but the HTTP server never "
                     "reported `Application startup complete`: the server process is stuck between engine init "
                     "and binding its port (a multi-turn scheduler or plugin initialising, a second engine or "
                     "data-parallel rank that never came up)"),
    "server-starting": "the HTTP server started but never completed its start-up (lifespan)",
    "weight-sync-setup": ("a trainer called `/init_communicator/` and nothing followed: the NCCL group between the "
                          "trainer and the rollout server (weight sync) never formed; the trainer side waits too"),
}
_FIX = {
    "engine-ready": [
        "Wait a few minutes once; if the port still does not open, run the server with one engine "
        "(data_parallel_size 1, no multi-turn scheduler or external plugin) to find which part blocks.",
        "Take `py-spy dump --pid <server pid>` to see where the server process waits.",
        "Try the newest ms-swift and another vLLM release: the start-up path of `swift rollout` (engine, scheduler, "
        "plugins, port bind) changes between releases.",
    ],
    "server-starting": ["Take `py-spy dump --pid <server pid>`; check the server's start-up hooks and plugins."],
    "weight-sync-setup": [
        "The trainer must reach the server's host on the group port (--vllm_server_host / --vllm_server_port and "
        "the NCCL group port after it): open it in the firewall, and set NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
        "to the interface both nodes share.",
        "Do not mix modes: --vllm_mode server with --vllm_server_host, or colocate without any server flag.",
        "Rerun both sides with NCCL_DEBUG=INFO to see which side stops.",
    ],
}


# a vLLM engine inside the trainer's own job (OpenRLHF's LLMRayActor, verl's rollout workers, a colocated engine) has
# no HTTP server: its start-up ends at the engine, and what should follow is the trainer's first generation
_ENGINE_ONLY = ("the vLLM engine finished its start-up (KV cache, CUDA graphs) and nothing followed: the process that "
                "drives it (the trainer, its Ray actors) never sent a first generation. Before the first step the job "
                "still builds its process groups (the weight-sync group between the trainer and the engines) and "
                "places its other roles on GPUs; a group whose members never all arrive, or a Ray placement group "
                "waiting for GPUs the cluster does not have, waits like this")
_ENGINE_ONLY_FIX = [
    "Take `py-spy dump --pid <pid>` of the training processes (under Ray: `ray stack`, or py-spy on each worker) to "
    "see where they wait.",
    "Under Ray, `ray status`: a pending placement group means the job asks for more GPUs than the cluster offers "
    "(count every role: actor, reference, critic, reward, and vLLM engines x tensor parallel size).",
    "Rerun with NCCL_DEBUG=INFO: a weight-sync group that never forms shows which rank never joins (on several nodes, "
    "set NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME to the interface they share).",
]
_SERVER_SEEN = {"server-starting", "serving", "client-connected", "weight-sync-setup", "serving-requests"}


# the Ray actors of trainers that hold their vLLM engines themselves (OpenRLHF's LLMRayActor beside its
# ActorModelRayActor, verl's WorkerDict)
_TRAINER_ACTORS = ("LLMRayActor", "ActorModelRayActor", "ReferenceModelRayActor", "WorkerDict")


def _serves(ctx: RunState, seen: set[str]) -> bool:
    """The engine is a rollout server's (the default: this rule reads server logs), unless the log shows it inside a
    trainer's own job (OpenRLHF's or verl's Ray actors, their framework) and no server milestone or launch."""
    if seen & _SERVER_SEEN or ctx.run.command in ("rollout", "deploy"):
        return True
    if any(launch.command in SERVER_COMMANDS for launch in ctx.run.launches):
        return True
    if ctx.framework()[0] in ("openrlhf", "verl", "easyr1"):
        return False
    return not any(line.origin in _TRAINER_ACTORS for tail in ctx.tails.values() for line in tail)


class ServerStartStall(Rule):
    kinds = frozenset({LogLine, ExceptionInfo})
    literals = tuple(dict.fromkeys(lit for lit, _ in _MILESTONES))
    idle_silent = True   # fed nothing: no milestone line (doctor/lazyrules.py)

    def __init__(self, meta: RuleMeta) -> None:
        super().__init__(meta)
        self.last: tuple[str, LogLine] | None = None
        self.seen: set[str] = set()

    def feed(self, signal: LogLine | ExceptionInfo) -> None:
        if isinstance(signal, ExceptionInfo):
            self.seen.add("exception")
            return
        for lit, stage in _MILESTONES:
            if lit in signal.text:
                self.last = (stage, signal)
                self.seen.add(stage)
                return

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.last is None or ctx.ended or ctx.metrics_steps or "exception" in self.seen or ctx.open_tracebacks:
            return []
        stage, line = self.last
        if stage not in _STUCK:
            return []
        if any(f.severity >= Severity.warning for f in ctx.findings):
            return []  # another rule explains the log
        tail = ctx.tails.get(line.where.path) or ()
        errors = [t for t in tail if t.seq > line.seq and ("Error" in t.text or "ERROR" in t.raw)]
        if errors:
            return []
        after = sum(1 for t in tail if t.seq > line.seq)
        cli = ctx.run.cli
        sched = [f"--{k} {cli[k]}" for k in ("multi_turn_scheduler", "external_plugins") if cli.get(k)]
        likely = ""
        if stage == "engine-ready" and sched:
            likely = (f" This server was started with {' and '.join(sched)}: the scheduler is built between engine "
                      f"start-up and the port bind, so it is the likeliest place the start stops.")
        serves = stage != "engine-ready" or _serves(ctx, self.seen)
        stuck = _STUCK[stage] if serves else _ENGINE_ONLY
        msg = (f"The {'rollout server' if serves else 'run'}'s log stops with no error after "
               f"`{line.text.strip()[:160]}`: {stuck}.{likely} "
               f"{after} line(s) follow it, none of them a later milestone. A log pasted up to this point looks the "
               f"same, so this is a judgement on the excerpt: if the real log goes on, share all of it.")
        if not serves:
            return [self.make(message=msg, fix=list(_ENGINE_ONLY_FIX), seq=line.seq, severity=Severity.warning,
                              evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                              title="Stopped after the vLLM engine's start-up, before the first generation (no error)")]
        fix = list(_FIX[stage])
        framework = ctx.framework()[0]
        if stage == "engine-ready" and framework != "ms-swift":
            who = "trl (`trl vllm-serve`)" if framework in ("trl", "unsloth") else \
                "release of the framework that runs the server"
            fix[-1] = (f"Try another vLLM release and the newest {who}: the server's start-up path (engine, "
                       "scheduler, plugins, port bind) changes between releases.")
        return [self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                          seq=line.seq, severity=Severity.warning)]
