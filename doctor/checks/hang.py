"""Hangs: a training console log that stops without an error and without ms-swift's end markers, or a
py-spy dump of a stuck process.

The check follows the run through its phases (server connection, model load, trainer init with the
colocated vLLM engine, first rollout, training steps, checkpoint save) from a few literal markers, and
at the end names the phase the log stopped in, the last line, and the flags of this run that matter in
that phase. Two catalog entries use it: GD320 (no training step was logged: hang-at-start) and GD321
(steps were logged, or a py-spy dump: hang-mid-training).

It stays silent when the run ended normally (End time of running main / last_model_checkpoint / the
logging.jsonl summary), when the log ends in an exception or another error finding (other rules explain
those), and when the input is not a training console log (a pasted error line, a metrics-only paste).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import EXCEPTION, LINE, METRICS, Evidence, ExceptionInfo, Finding, LogLine, Metrics, Severity
from ..rules import FinishContext, Rule, evidence_of
from ..sources.swiftconfig import RunConfig
from .distributed._common import VLLM_GROUP_PORT, flag_in_version
from .series import step_row

# --------------------------------------------------------------------------------------------- phases
# (literal, phase). The last marker seen decides where the run stopped.
_MARKERS: tuple[tuple[str, str], ...] = (
    ("run sh:", "launch"),
    ("Start connecting to vLLM server", "server-connect"),
    ("Connected to vLLM server", "server-connected"),
    ("local_rank: ", "setup"),
    ("args: RLHFArguments(", "setup"),
    ("args: TrainArguments(", "setup"),
    ("model_kwargs:", "model-load"),
    ("Loading checkpoint shards", "model-load"),
    ("Loading weights", "model-load"),
    ("model_info:", "model-loaded"),
    ("Start time of running main", "model-loaded"),
    ("train_dataset:", "model-loaded"),
    ("model_parameter_info:", "trainer-init"),
    ("The logging file will be saved in", "first-step"),
    ("***** Running training *****", "first-step"),
    ("Saving model checkpoint to", "checkpoint-save"),
)
# vLLM engine progress (not any line that mentions vllm: argument names and traceback paths do too)
_VLLM_WORDS = ("LLM engine", "cumem", "sleep mode", "KV cache", "CUDA graph", "EngineCore", "VllmWorker",
               "vLLM is using", "Model loading took", "Memory profiling", "GPU blocks", "init engine")
_VLLM_ORIGINS = ("vllm", "VllmWorker", "EngineCore", "RayWorkerWrapper", "EngineCore_DP0", "APIServer")
_SWIFT_EVIDENCE = ("[INFO:swift]", "[WARNING:swift]", "run sh:", "args: RLHFArguments(", "***** Running training *****")
_BAR = re.compile(r"^\s*(?P<desc>[^|]*?)\s*:?\s*(?P<pct>\d{1,3})%\|[^|]*\|\s*(?P<k>\d+)/(?P<n>\d+)\s*\[")
_SOCKET = re.compile(r"(?:The client socket has timed out after (?P<t>\d+)(?P<u>ms|s) while trying to connect to "
                     r"\((?P<host>[^,]+), (?P<port>\d+)\)|TCP client failed to connect(?:/validate)? to host "
                     r"(?P<host2>[\w.\-]+):(?P<port2>\d+))")
_NCCL = ("Watchdog caught collective operation timeout", "NCCL communicator was aborted")
# py-spy dump
_PYSPY_THREAD = re.compile(r'^\s*Thread (?:0x[0-9A-Fa-f]+|\d+) \((?P<state>idle|active|active\+gil|gil)\): "(?P<name>[^"]*)"')
_PYSPY_FRAME = re.compile(r"^\s+(?P<func>\S[^()]*?) \((?P<file>[^()]*?\.py):(?P<line>\d+)\)\s*$")
_PYSPY_PROCESS = re.compile(r"^Process \d+: ")

PHASE_TEXT = {
    "launch": "launch (before the arguments were parsed)",
    "server-connect": "connecting to the vLLM rollout server (`Start connecting to vLLM server` without `Connected`)",
    "server-connected": "joining the vLLM server's weight-sync NCCL group (right after `Connected to vLLM server`)",
    "setup": "argument parsing / process-group setup, before the model load",
    "model-load": "loading the model weights",
    "model-loaded": "dataset loading and preprocessing, after the model load",
    "trainer-init": "GRPO trainer init after the model load (reference / reward models, the colocated vLLM engine)",
    "vllm-init": "colocated vLLM engine init (inside the GRPO trainer init)",
    "first-step": "the first training step (first rollout generation, rewards, first optimizer step)",
    "training": "training",
    "checkpoint-save": ("a checkpoint save (ms-swift prints `Saving model checkpoint to` before saving and nothing "
                        "when the save ends, so the run is stuck either in that save or in the next step's "
                        "generation and reward functions)"),
    "eval": "evaluation",
    "dataset-map": "dataset preprocessing (datasets map)",
}

# py-spy frame classes, most specific first: (name, substrings of "file func")
_FRAME_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weight-sync", ("update_named_param", "_move_model_to_vllm", "update_flattened_params", "sync_weights",
                     "vllm_client.py", "load_weights")),
    ("collective", ("distributed_c10d.py", "deepspeed/comm", "all_reduce", "all_gather", "broadcast", "barrier",
                    "reduce_scatter", "ProcessGroup", "gather_object")),
    ("vllm-generate", ("vllm/", "generate (", "_run_engine", "execute_model")),
    ("reward", ("reward", "orm.py", "/rewards/", "plugin/orm")),
    ("checkpoint", ("save_pretrained", "_save_checkpoint", "save_model", "safetensors", "torch/serialization.py")),
    ("dataloader", ("torch/utils/data", "_next_data", "dataloader.py")),
    ("queue-wait", ("queue.py", "queues.py", "threading.py", "concurrent/futures", "selectors.py", "socket.py")),
)
_CLASS_TEXT = {
    "weight-sync": "syncing weights to vLLM",
    "collective": "waiting in a distributed collective (NCCL all_reduce / broadcast / barrier)",
    "vllm-generate": "inside vLLM generation",
    "reward": "inside a reward function",
    "checkpoint": "saving a checkpoint",
    "dataloader": "waiting for the dataloader",
    "queue-wait": "idle, waiting on a queue or a lock",
}


@dataclass
class _Thread:
    name: str
    state: str
    header: LogLine
    frames: list[tuple[str, str, int]] = field(default_factory=list)  # func, file, line (innermost first)


def classify_frames(frames: list[tuple[str, str, int]]) -> str | None:
    """The frame class of a stack (py-spy lists the innermost frame first)."""
    for name, keys in _FRAME_CLASSES:
        for func, path, _ in frames:
            hay = f"{path} {func} ("
            if any(k in hay for k in keys):
                return name
    return None


class _Progress:
    """What the hang rules read from a run: the phase markers, the last step, vLLM engine lines, socket and
    NCCL timeouts, exceptions, py-spy stacks. One per session, fed once, read by every HangCheck."""

    def __init__(self) -> None:
        self.phase_seq: dict[str, int] = {}
        self.phase_line: dict[str, LogLine] = {}
        self.swift_evidence: LogLine | None = None
        self.max_step = 0
        self.total_steps: int | None = None
        self.step_line: LogLine | None = None
        self.step_seq = 0
        self.metrics_seq = 0
        self.vllm_lines: list[LogLine] = []
        self.socket: list[tuple[LogLine, dict[str, str]]] = []
        self.nccl: list[LogLine] = []
        self.exceptions: list[ExceptionInfo] = []
        self.threads: list[_Thread] = []
        self._thread: _Thread | None = None
        self.last_path: str | None = None
        self.last_metrics: dict[str, Any] = {}

    def _mark(self, phase: str, line: LogLine) -> None:
        self.phase_seq[phase] = line.seq
        self.phase_line[phase] = line
        self.last_path = line.where.path

    def feed(self, kind: str, payload: Any) -> None:
        if kind == EXCEPTION:
            if len(self.exceptions) < 200:
                self.exceptions.append(payload)
            return
        if kind == METRICS:
            m: Metrics = payload
            row = step_row(m)
            if row is not None:
                k, n = row.gstep, row.max_steps
                if k is None:
                    step = m.values.get("step")
                    k = int(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else self.max_step + 1
                if k >= self.max_step:
                    self.max_step = k
                    self.total_steps = n or self.total_steps
                    self.last_metrics = m.values
                if m.source == "console":  # logging.jsonl is read after the logs: its order says nothing
                    self.metrics_seq = max(self.metrics_seq, m.seq)
            return
        line: LogLine = payload
        text = line.text
        # py-spy dump: thread headers and their frames
        if '): "' in text:
            t = _PYSPY_THREAD.match(text)
            if t:
                self._thread = _Thread(t.group("name"), t.group("state"), line)
                if len(self.threads) < 500:
                    self.threads.append(self._thread)
                return
        if self._thread is not None and ".py:" in text:
            f = _PYSPY_FRAME.match(text)
            if f:
                if len(self._thread.frames) < 80:
                    self._thread.frames.append((f.group("func"), f.group("file"), int(f.group("line"))))
                return
            self._thread = None
        if self.swift_evidence is None and any(e in text for e in _SWIFT_EVIDENCE):
            self.swift_evidence = line
        if "%|" in text:
            b = _BAR.match(text)
            if b:
                self._bar(b, line)
                return
        for lit, phase in _MARKERS:
            if lit in text:
                if lit == "local_rank: " and "world_size: " not in text:
                    continue  # the rank line of the startup, not torchrun's failure block
                if phase == "model-load" and "trainer-init" in self.phase_seq:
                    phase = "vllm-init"  # vLLM loads its own copy of the weights in the trainer init
                self._mark(phase, line)
                break
        else:
            if (line.origin in _VLLM_ORIGINS or any(w in text for w in _VLLM_WORDS)) and \
                    "Error" not in text and "Traceback" not in text and ", line " not in text:
                if len(self.vllm_lines) < 2000:
                    self.vllm_lines.append(line)
        if "socket has timed out" in text or "TCP client failed" in text:
            s = _SOCKET.search(text)
            if s and len(self.socket) < 100:
                self.socket.append((line, {k: v for k, v in s.groupdict().items() if v}))
        elif any(n in text for n in _NCCL) and len(self.nccl) < 100:
            self.nccl.append(line)

    def _bar(self, b: re.Match, line: LogLine) -> None:
        desc = b.group("desc").strip().rstrip(":").strip()
        k, n = int(b.group("k")), int(b.group("n"))
        if desc in ("Train", ""):
            if desc == "" and self.swift_evidence is None and "first-step" not in self.phase_seq:
                return  # a bare tqdm bar outside a trainer log is anyone's progress
            if k >= self.max_step:
                self.max_step = k
                self.total_steps = n
                self.step_line = line
            self.step_seq = line.seq
            if k == 0:
                self._mark("first-step", line)
            else:
                self._mark("training", line)
        elif desc.startswith("Val"):
            self._mark("eval", line)
        elif desc.startswith(("Map", "Filter", "Generating", "Tokeniz")):
            self._mark("dataset-map", line)
        elif desc.startswith(("Loading checkpoint shards", "Loading weights")):
            self._mark("vllm-init" if "trainer-init" in self.phase_seq else "model-load", line)
        elif desc.startswith(("Processed prompts", "Adding requests")):
            self.vllm_lines.append(line)
        elif desc.startswith(("Capturing CUDA graph", "Capturing CUDA graphs")):
            self.vllm_lines.append(line)


class HangCheck(Rule):
    kinds = frozenset({LINE, METRICS, EXCEPTION})
    # Every ms-swift marker line carries the [INFO:swift] logger prefix, so a few words route all phases.
    literals = ("[INFO:swift]", "[WARNING:swift]", "run sh:", "Loading checkpoint shards", "Loading weights",
                "***** Running training *****", "%|", "vllm", "vLLM", "LLM engine", "KV cache", "CUDA graph",
                "socket has timed out", "TCP client failed to connect") + _NCCL + ('(idle): "', "(active", ".py:")
    want: str = ""  # "hang-at-start" or "hang-mid-training": set by the subclasses

    def __init__(self, meta):
        super().__init__(meta)
        self.p = _Progress()

    def share(self, pool: dict[str, Any]) -> None:
        """HangAtStart and HangMidTraining read the same progress: the first one is fed, the other takes no
        signal (one parse of each line instead of one per rule)."""
        p = pool.get("hang-progress")
        if p is None:
            pool["hang-progress"] = self.p
        elif type(self).feed is HangCheck.feed:
            self.p = p
            self.kinds = frozenset()

    def feed(self, kind: str, payload: Any) -> None:
        self.p.feed(kind, payload)

    # ---------------------------------------------------------------- analysis
    def _last_phase(self, ctx: FinishContext | None = None) -> tuple[str | None, int]:
        if ctx is not None:  # vLLM engine lines (logger prefix stripped, origin kept) that carry no routed word
            for tail in ctx.tails.values():
                for line in tail:
                    if line.origin in _VLLM_ORIGINS and "Error" not in line.text and \
                            (not self.p.vllm_lines or line.seq > self.p.vllm_lines[-1].seq):
                        self.p.vllm_lines.append(line)
        phase, seq = None, 0
        for p, s in self.p.phase_seq.items():
            if s >= seq:
                phase, seq = p, s
        if self.p.metrics_seq > seq and self.p.max_step:
            phase, seq = "training", self.p.metrics_seq
        if self.p.vllm_lines:
            v = self.p.vllm_lines[-1]
            if v.seq > seq and phase in ("trainer-init", "vllm-init", "model-loaded"):
                phase, seq = "vllm-init", v.seq
            elif v.seq > seq and phase in ("first-step", "training"):
                seq = v.seq  # generation during a step: same phase, later progress
        return phase, seq

    def _analyse(self, ctx: FinishContext) -> dict[str, Any] | None:
        if ctx.ended:
            return None
        pyspy = [t for t in self.p.threads if t.frames or t.state]
        phase, last_seq = self._last_phase(ctx)
        if phase is None and not pyspy:
            return None
        if self.p.swift_evidence is None and not pyspy:
            return None  # not a training console log: a pasted error line, a metrics paste...
        from .fallback.exceptions import CONSEQUENCE_TYPES
        socket_ok = {"DistNetworkError", "DistStoreError"}
        interrupted: ExceptionInfo | None = None
        for e in self.p.exceptions:
            if e.seq < last_seq:
                continue
            if e.short_type == "KeyboardInterrupt":
                interrupted = e
                continue
            if self.p.socket and e.short_type in socket_ok:
                continue
            return None  # the log ends in an exception: other rules explain it
        for line, _frames in ctx.open_tracebacks or ():
            if line.seq > last_seq:
                return None
        for f in ctx.findings:
            if f.severity == Severity.error and f.role.value != "consequence" and f.first_seq > last_seq:
                return None
            if f.category == "host-oom-killed":
                return None
        if self.p.nccl and any(l.seq > last_seq for l in self.p.nccl):
            nccl_after = True
        else:
            nccl_after = False
        steps = self.p.max_step
        mid = steps > 0 or (pyspy and phase in (None, "training", "checkpoint-save", "eval"))
        if mid and not pyspy and interrupted is None and not nccl_after and phase == "training":
            # The log stops right after a normal step. That is what a hung run looks like, and also what any
            # pasted excerpt looks like: say it only when the log is a trainer console log from its start and
            # nothing else explains it.
            if "first-step" not in self.p.phase_seq:
                return None
            if any(f.severity >= Severity.warning and f.role.value != "consequence" for f in ctx.findings):
                return None
        return {"phase": phase, "last_seq": last_seq, "pyspy": pyspy, "interrupted": interrupted, "mid": mid,
                "nccl_after": nccl_after, "steps": steps}

    def finish(self, ctx: FinishContext) -> list[Finding]:
        a = self._analyse(ctx)
        if a is None:
            return []
        category = "hang-mid-training" if a["mid"] else "hang-at-start"
        if category != self.want:
            return []
        return [self._finding(a, ctx)]

    # ---------------------------------------------------------------- message and fix
    def _last_line(self, ctx: FinishContext) -> LogLine | None:
        paths = [self.p.last_path] if self.p.last_path in ctx.tails else list(ctx.tails)
        for p in paths:
            tail = ctx.tails.get(p)
            if tail:
                return tail[-1]
        return None

    def _finding(self, a: dict[str, Any], ctx: FinishContext) -> Finding:
        run = ctx.run
        phase = a["phase"]
        ev: list[Evidence] = []
        severity = Severity.warning
        parts: list[str] = []
        fix: list[str] = []
        last = self._last_line(ctx)
        if a["pyspy"]:
            return self._pyspy_finding(a, ctx)
        socket_after = [s for s in self.p.socket if s[0].seq > a["last_seq"] or phase in ("server-connect",
                                                                                            "server-connected")]
        if phase in ("server-connect", "server-connected") and socket_after:
            return self._server_finding(a, ctx, socket_after)
        steps, total = a["steps"], self.p.total_steps
        where = PHASE_TEXT.get(phase or "", phase or "an unknown phase")
        if a["mid"]:
            pct = f" ({100 * steps // total}%)" if total else ""
            parts.append(f"The log stops without an error and without ms-swift's end markers after training step "
                         f"{steps}{' of ' + str(total) if total else ''}{pct}; the last phase seen is {where}.")
        else:
            parts.append(f"The log stops before the first training step, without an error and without ms-swift's "
                         f"end markers; the last phase reached is {where}.")
        if last is not None:
            parts.append(f"Last line: `{last.text.strip()[:200]}`.")
        if a["interrupted"] is not None:
            e: ExceptionInfo = a["interrupted"]
            cls = classify_frames([(f.func, f.path, f.lineno) for f in reversed(e.frames)])
            parts.append("The run was then interrupted by hand (KeyboardInterrupt)"
                         + (f"; its stack shows it {_CLASS_TEXT[cls]}" if cls else "")
                         + (f" at {e.frames[-1].path}:{e.frames[-1].lineno} in {e.frames[-1].func}" if e.frames else "")
                         + ".")
            ev.append(Evidence(e.where.path, e.where.line, e.raw))
        if a["nccl_after"]:
            parts.append("NCCL watchdog timeouts follow (see that finding): the ranks were waiting for each other.")
        parts.append("If the process is still running, it is stuck there; if it is gone, it was killed without a "
                     "traceback (look for 'Killed' or the OOM killer in dmesg).")
        if last is not None:
            ev.append(evidence_of(last))
        pl = self.p.phase_line.get(phase or "")
        if pl is not None and (last is None or pl.seq != last.seq):
            ev.insert(0, evidence_of(pl))
        fix.extend(self._phase_fix(phase, run, a))
        fix.extend(_generic_fix(run))
        return self.make(message=" ".join(parts), fix=fix, evidence=ev[:5], severity=severity,
                         seq=last.seq if last is not None else a["last_seq"])

    def _server_finding(self, a: dict[str, Any], ctx: FinishContext,
                        socket: list[tuple[LogLine, dict[str, str]]]) -> Finding:
        run = ctx.run
        line, g = socket[0]
        host = g.get("host") or g.get("host2")
        port = int(g.get("port") or g.get("port2") or 0)
        t = g.get("t")
        waited = ""
        if t:
            secs = int(t) / (1000 if g.get("u") == "ms" else 1)
            waited = f" for {secs:.0f} s"
        group = run.int_arg("vllm_server_group_port") or VLLM_GROUP_PORT
        is_group = group <= port < group + 64
        start = self.p.phase_line.get("server-connect") or self.p.phase_line.get("server-connected")
        msg = (f"Training is stuck at start, connecting to the vLLM rollout server: after `Start connecting to vLLM "
               f"server` the trainer waited{waited} for a c10d connection to {host}:{port}"
               + (f", the rollout server's weight-sync group port (vllm_server_group_port, default {VLLM_GROUP_PORT}+i)"
                  if is_group else "")
               + ", and c10d keeps retrying: no training step can start until this connection is made.")
        fix = []
        hp = run.get("vllm_server_host") or host
        pp = run.get("vllm_server_port", 8000)
        fix.append(f"Check the rollout server: `curl http://{hp}:{pp}/health/` from the training node, and that "
                   f"`swift rollout` printed no error; port {port} must be reachable from this node too (firewall, "
                   "docker network, unset http_proxy/https_proxy for that host).")
        if host in ("127.0.0.1", "localhost", "0.0.0.0") or not run.get("vllm_server_host"):
            fix.append(f"The trainer connects to {host}: if `swift rollout` runs on another machine, pass "
                       "--vllm_server_host <its IP> (and --vllm_server_port).")
        fix.append("Run `swift rollout` and the trainer with the same ms-swift and vLLM versions, on separate GPUs "
                   "(CUDA_VISIBLE_DEVICES), and restart the rollout server before each new training run.")
        if flag_in_version(run, "vllm_server_group_port"):
            fix.append(f"If port {port} is taken by another run or blocked, use a free one with --vllm_server_group_port "
                       "(ms-swift >= 3.11) on the trainer.")
        fix.append("While it waits: `py-spy dump --pid <trainer pid>` shows the stack (init_communicator / TCPStore).")
        ev = ([evidence_of(start)] if start else []) + [evidence_of(line)]
        return self.make(message=msg, fix=fix, evidence=ev, severity=Severity.error, seq=line.seq)

    def _pyspy_finding(self, a: dict[str, Any], ctx: FinishContext) -> Finding:
        threads: list[_Thread] = a["pyspy"]
        classes: dict[str, list[_Thread]] = {}
        for t in threads:
            c = classify_frames(t.frames) or "other"
            classes.setdefault(c, []).append(t)
        main = [t for t in threads if t.name == "MainThread"]
        busy = [t for t in threads if t.state != "idle"]
        focus = main or busy
        names = sorted({t.name for t in threads})
        parts = [f"A py-spy dump of {len(threads)} thread(s) ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})"
                 " was taken from a process that had stopped making progress"
                 + (f" after training step {a['steps']}" if a["steps"] else "") + "."]
        fix: list[str] = []
        shown: dict[str, _Thread] = {}
        for t in focus or threads:
            shown.setdefault(t.name, t)
        ev = [evidence_of(t.header) for t in list(shown.values())[:4]]
        if focus:
            t = focus[0]
            c = classify_frames(t.frames)
            top = t.frames[0] if t.frames else None
            where = f" at {top[1]}:{top[2]} in {top[0]}" if top else ""
            parts.append(f"Thread {t.name!r} ({t.state}) is {_CLASS_TEXT.get(c or '', 'running')}{where}.")
            if c == "collective":
                fix.append("This rank waits in a collective for a rank that never arrives: dump every rank "
                           "(`py-spy dump --pid <pid>` for each training process) and find the one that is NOT in "
                           "this collective; its stack is the cause.")
                fix.append("ms-swift's --ddp_timeout defaults to 18000000 s (208 days), so a desynchronised "
                           "collective hangs silently: --ddp_timeout 1800 turns it into an NCCL timeout that names "
                           "the collective.")
            elif c == "vllm-generate":
                fix.append("Stuck in vLLM generation: lower --vllm_gpu_memory_utilization / --vllm_max_num_seqs, "
                           "check the engine's own log lines, and set --max_completion_length so a runaway "
                           "completion cannot run for ever.")
            elif c == "weight-sync":
                fix.append("Stuck while syncing weights to vLLM: in server mode check that the rollout server is "
                           "alive; with ZeRO-3 use --move_model_batches to sync in smaller groups.")
            elif c == "reward":
                fix.append("Stuck inside a reward function: add a timeout to any network / sandbox / judge-model call "
                           "in your reward plugin, and make sure every rank calls it the same number of times.")
            elif c == "dataloader":
                fix.append("Stuck waiting for data: try --dataloader_num_workers 0 to see the real error of a "
                           "worker, and check shared memory (docker --shm-size).")
        else:
            only = sorted(classes)
            parts.append("Every thread in this dump is idle"
                         + (" (queue feeders, executor workers waiting for work)" if set(only) <= {"queue-wait", "other"}
                            else "")
                         + ": the main thread, where the run is actually blocked, is not in it.")
            fix.append("Dump the main thread of every rank: `py-spy dump --pid <pid>` for each training process "
                       "(`ps aux | grep rlhf.py`), plus the vLLM engine processes (`py-spy dump --native` helps when "
                       "the main thread sits in NCCL or CUDA).")
            fix.append("The rank whose main thread is NOT waiting in a collective (all_reduce / broadcast) is the one "
                       "that is behind; its stack is the cause.")
        if any(t.name.startswith(("WorkerAsyncOutput", "VllmWorker", "EngineCore")) for t in threads):
            parts.append("A vLLM thread (WorkerAsyncOutput / VllmWorker / EngineCore) is in this process, so it "
                         "runs a vLLM engine (the trainer in colocate mode, or the rollout server): a generation or "
                         "weight sync that never returns on one rank stalls every rank.")
        return self.make(message=" ".join(parts), fix=fix, evidence=ev, severity=Severity.warning,
                         seq=threads[0].header.seq)

    def _phase_fix(self, phase: str | None, run: RunConfig, a: dict[str, Any]) -> list[str]:
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
            port = run.get("vllm_server_port", 8000)
            group = run.int_arg("vllm_server_group_port") or VLLM_GROUP_PORT
            if phase == "server-connect":
                to = run.get("vllm_server_timeout", 240)
                fix.append(f"The trainer polls http://{host}:{port}/health/ until vllm_server_timeout ({to} s) and then "
                           "raises ConnectionError: check that `swift rollout` is up (curl that URL from this node) "
                           "and that no proxy intercepts it.")
            fix.append(f"After the HTTP check the trainer joins the rollout server's NCCL weight-sync group on port "
                       f"{group}+i: that port must be reachable from this node, and `swift rollout` must run the same "
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
            if use_vllm and mode != "server":
                fix.extend(_vllm_colocate_fix(run, tp, tp_flag, gm, gm_flag, world, vis, ds, offl, mpx))
            elif use_vllm:
                fix.append("Server mode: the trainer only connects to `swift rollout`; check the rollout server's log.")
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
                per_rank = b * (spg or 1)
                fix.append(f"The first step runs the first rollout: per_device_train_batch_size {b} x "
                           f"{'steps_per_generation' if run.int_arg('steps_per_generation') else 'gradient_accumulation_steps'} "
                           f"{spg or 1} = {per_rank} completions per rank"
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
            lm = self.p.last_metrics
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
            line = self.p.phase_line.get("checkpoint-save")
            z3 = "zero3" in ds
            fix.append("If the checkpoint below is incomplete, it is stuck in the save: check free disk space "
                       "(`df -h` on the output_dir) and a slow network filesystem"
                       + (f"; with --deepspeed {ds} rank 0 gathers the full 16-bit weights from every rank, which "
                          "takes minutes for large models and waits for all ranks" if z3 else "")
                       + (f"; --save_only_model true skips the optimizer states" if run.args.get("save_only_model")
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

    # subclasses set `want`


def _vllm_colocate_fix(run: RunConfig, tp: int | None, tp_flag: str, gm: Any, gm_flag: str, world: int | None,
                       vis: int | None, ds: str, offl: dict[str, Any], mpx: str | None) -> list[str]:
    fix = []
    gm_txt = f"{gm_flag} is {gm}" if gm is not None else f"{gm_flag} is the default 0.9"
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


def _generic_fix(run: RunConfig) -> list[str]:
    world = run.world_size()
    vllm = " (and the vLLM engine processes)" if run.args.get("use_vllm") is True else ""
    if world and world > 1:
        return [f"While it is stuck take `py-spy dump --pid <pid>` of each of the {world} training processes{vllm}: "
                "the rank whose stack differs from the others is the cause; NCCL_DEBUG=INFO shows where the "
                "collectives stop."]
    return [f"While it is stuck take `py-spy dump --pid <pid>` of the training process{vllm} to see where it waits "
            "(pip install py-spy; add --native for NCCL / CUDA frames)."]


class HangAtStart(HangCheck):
    want = "hang-at-start"


class HangMidTraining(HangCheck):
    want = "hang-mid-training"
