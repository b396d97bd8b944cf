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

from dataclasses import replace
from typing import Any

from ... import lazyre
from ...engine.columns import Block
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule, evidence_of
from ...signals import ExceptionInfo, HangReport, LogLine, Metrics
from ...sources.command_text import SERVER_COMMANDS
from ...sources.train_bars import TrainBar
from ...swift.run import flag_in_version
from ..distributed._common import VLLM_GROUP_PORT
from ._advice import generic_fix, phase_fix
from ._progress import _CLASS_TEXT, _NCCL, LINE_WORDS, PHASE_TEXT, VLLM_ORIGINS, _Progress, _Thread, classify_frames
from .endings import TB_HEAD, plain
from .interrupted import (
    STARTUP_FIX,
    STARTUP_WHERE,
    dump_startup_phase,
    excerpt_from_signal,
    in_subprocess_wait,
    interrupted_at_start,
    message_and_fix,
    signal_excerpt_message_and_fix,
    signal_message_and_fix,
    signalled_at_start,
)
from .live import live_finding
from .prose import cut_before_error, error_said

# commands that train nothing: their start-up log cut after its launch, said to fail, is an excerpt, not a stop
_NO_TRAINING = frozenset({"export", "infer"}) | SERVER_COMMANDS


def _serves_or_exports(ctx: RunState) -> bool:
    return ctx.run.command in _NO_TRAINING or any(launch.command in _NO_TRAINING for launch in ctx.run.launches)


# Lib/warnings.py formatwarning: "{filename}:{lineno}: {category}: {message}", the source line after it
_WARNING_LINE = lazyre.compile(r"\.py:\d+: \w*Warning: ")


class HangCheck(Rule):
    # HangReport: the live hang watchdog of `grpo-doctor watch` (doctor/live) measured the silence itself; its report
    # (stacks, where the run stopped, the outlier rank) is the finding when there is one (formerly GD901/GD902)
    kinds = frozenset({LogLine, Metrics, ExceptionInfo, HangReport})
    # Every ms-swift marker line carries the [INFO:swift] logger prefix, so a few words route all phases.
    literals = ("[INFO:swift]", "[WARNING:swift]", "run sh:", "Loading checkpoint shards", "Loading weights",
                "***** Running training *****", "%|", "vllm", "vLLM", "LLM engine", "KV cache", "CUDA graph",
                "socket has timed out", "TCP client failed to connect") + _NCCL + ("(idle)", "(active", ".py:", "death signal")
    line_words = LINE_WORDS  # the other words its feed acts on (sources/quiet.py skips a prefix line without them)
    want: str = ""  # "hang-at-start" or "hang-mid-training": set by the subclasses

    def __init__(self, meta):
        super().__init__(meta)
        self.p = _Progress()
        self.reports: list[HangReport] = []
        # Train bars held among console rows are read by step (sources/train_bars.py): feed and feed_between take them
        self.takes_train_bars = type(self).feed is HangCheck.feed

    def share(self, pool: dict[str, Any]) -> None:
        """HangAtStart and HangMidTraining read the same progress: the first one is fed, the other takes no
        signal (one parse of each line instead of one per rule)."""
        p = pool.get("hang-progress")
        if p is None:
            pool["hang-progress"] = self.p
        elif type(self).feed is HangCheck.feed:
            self.p = p
            self.kinds = frozenset({HangReport})  # the progress comes through the other rule; live reports do not

    def feed(self, signal: Any) -> None:
        if type(signal) is HangReport:
            self.reports.append(signal)
        else:
            self.p.feed(signal)

    def feed_train_bar(self, bar: TrainBar) -> None:
        """feed() of a pure Train bar fed alone (sources/bars.py), read by its step as among rows (``takes_train_bars``)."""
        self.p.train_bar(bar)

    def feed_many(self, signals: list[Any]) -> None:
        if type(self).feed is HangCheck.feed and isinstance(signals[0], Metrics):  # one type (Session.emit_many)
            self.p.feed_metrics(signals)
        else:
            super().feed_many(signals)

    def feed_between(self, signals: list[Metrics], block: Block, lines: list[tuple[int, LogLine]],
                     kept: set[int] | None) -> bool:
        """The rows of a block and the lines among them in one call (Session._interleave); False: not taken."""
        if type(self).feed is not HangCheck.feed:
            return False
        return self.p.feed_between(signals, block, lines, kept)

    # ---------------------------------------------------------------- analysis
    def _last_phase(self, ctx: RunState | None = None) -> tuple[str | None, int]:
        if ctx is not None:  # vLLM engine lines (logger prefix stripped, origin kept) that carry no routed word
            for tail in ctx.tails.values():
                for line in tail:
                    if line.origin in VLLM_ORIGINS and "Error" not in line.text and \
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
            if v.seq > seq and phase in ("model-load", "trainer-init", "vllm-init", "model-loaded"):
                phase, seq = "vllm-init", v.seq
            elif v.seq > seq and phase in ("first-step", "training"):
                seq = v.seq  # generation during a step: same phase, later progress
        return phase, seq

    def _analyse(self, ctx: RunState) -> dict[str, Any] | None:
        if ctx.ended or ctx.crashed_after_end:
            return None  # a run that ended, or failed in its training call: not a stop (the failure's rules read it)
        pyspy = [t for t in self.p.threads if t.frames or t.state]
        phase, last_seq = self._last_phase(ctx)
        if phase is None and not pyspy:
            return None
        if self.p.swift_evidence is None and not pyspy:
            return None  # not a training console log: a pasted error line, a metrics paste...
        if not pyspy and cut_before_error(ctx):
            return None  # an excerpt whose author says an error follows: it is cut, the run did not stop there
        if not pyspy and not self.p.max_step and _serves_or_exports(ctx) and error_said(ctx.last_tail()) is not None:
            # an export or a server start whose author says it failed, not that it hung: the error was not copied (a
            # training start said to fail and cut before its first step stays a stop: the error may be that stop)
            return None
        socket_ok = {"DistNetworkError", "DistStoreError"}
        interrupted: ExceptionInfo | None = None
        for e in self.p.exceptions:
            if e.seq < last_seq:
                continue
            if e.short_type == "KeyboardInterrupt":
                # a launcher's interrupt in its wait for the child says nothing of where the training was: the
                # child's own interrupt (printed first or last) does
                if interrupted is None or not in_subprocess_wait(e.frames):
                    interrupted = e
                continue
            if self.p.socket and e.short_type in socket_ok:
                continue
            return None  # the log ends in an exception: other rules explain it
        for line, _frames in ctx.open_tracebacks or ():
            if line.seq > last_seq:
                return None
        if any(ln.seq > last_seq and TB_HEAD in ln.text and not any(e.seq > ln.seq for e in self.p.exceptions)
               for ln in ctx.last_tail()):
            return None  # a traceback's header cut before its first whole frame: a crash (GD326), not a stop
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
        # a dump taken before any step whose main thread sits in a start-up call (rendezvous, weight load, vLLM
        # engine start) shows a start-up hang, not a stop in training (a thread whose name py-spy could not read counts)
        at_start = not steps and any(t.name in ("MainThread", "") and dump_startup_phase(t.frames)
                                     for t in pyspy)
        mid = steps > 0 or (pyspy and phase in (None, "training", "checkpoint-save", "eval") and not at_start)
        words = None if mid or at_start else progress_in_words(ctx)
        mid = mid or words is not None  # the author says how far training got ("训练进度到2%的时候卡死", "stuck at step 40")
        if mid and not pyspy and interrupted is None and not nccl_after and phase == "training":
            # The log stops right after a normal step. That is what a hung run looks like, and also what any
            # pasted excerpt looks like: say it only when the log is a trainer console log from its start and
            # nothing else explains it.
            if "first-step" not in self.p.phase_seq:
                return None
            if any(f.severity >= Severity.warning and f.role.value != "consequence" for f in ctx.findings):
                return None
        return {"phase": phase, "last_seq": last_seq, "pyspy": pyspy, "interrupted": interrupted, "mid": mid,
                "nccl_after": nccl_after, "steps": steps, "words": words}

    def finish(self, ctx: RunState) -> list[Finding]:
        live = [r for r in self.reports if (r.steps > 0) == (self.want == "hang-mid-training")]
        if live:
            return [live_finding(self, live, self.p.max_step)]
        a = self._analyse(ctx)
        if a is None:
            stopped = interrupted_at_start(ctx, self.p.max_step) if self.want == "hang-at-start" else None
            if stopped is None:
                signalled = signalled_at_start(ctx, self.p.max_step, self.p.death) if self.want == "hang-at-start" \
                    else None
                if signalled is None:
                    return []
                assert self.p.death is not None
                excerpt, said = excerpt_from_signal(ctx, signalled[0]) if signalled[1] is None else (False, None)
                if excerpt:
                    msg, fix, ev = signal_excerpt_message_and_fix(signalled[0], self.p.death[1], said)
                    f = self.make(message=msg, fix=fix, evidence=ev, severity=Severity.warning, seq=signalled[0].seq,
                                  title=f"Stopped by {self.p.death[1]} from outside"
                                        + (" (the excerpt starts there)" if said is None else ""),
                                  confidence="likely", verify="the next run is not stopped by SIGHUP: it runs "
                                  "detached from the terminal and goes on past the point where it stopped"
                                  if self.p.death[1] == "SIGHUP" else None)
                    return [replace(f, category="other")]
                msg, fix, ev = signal_message_and_fix(signalled[0], self.p.death[1], signalled[1])
                return [self.make(message=msg, fix=fix, evidence=ev, severity=Severity.warning, seq=signalled[0].seq,
                                  title=f"Stopped by {self.p.death[1]} during start-up, before any training step")]
            msg, fix, ev = message_and_fix(*stopped)
            return [self.make(message=msg, fix=fix, evidence=ev, severity=Severity.warning, seq=stopped[0].seq,
                              title="Stopped by hand during start-up (KeyboardInterrupt)")]
        category = "hang-mid-training" if a["mid"] else "hang-at-start"
        if category != self.want:
            return []
        from .prose import slow_said
        if a["mid"] and not a["pyspy"] and a["interrupted"] is None and not a["nccl_after"] and slow_said(ctx):
            return []  # its author says it runs slowly, not that it stopped: where a paste ends is no stop (GD327)
        return [self._finding(a, ctx)]

    # ---------------------------------------------------------------- message and fix
    def _last_line(self, ctx: RunState) -> LogLine | None:
        paths = [self.p.last_path] if self.p.last_path in ctx.tails else list(ctx.tails)
        for p in paths:
            tail = ctx.tails.get(p)
            if tail:
                # CPython's warnings print the warning, then its source line indented: the warning says more
                if len(tail) > 1 and tail[-1].text[:1].isspace() and _WARNING_LINE.search(tail[-2].text):
                    return tail[-2]
                return tail[-1]
        return None

    def _finding(self, a: dict[str, Any], ctx: RunState) -> Finding:
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
        if a.get("words") is not None:
            parts.append(f"The log's own lines stop before a training step is logged, but the paste's words say "
                         f"training got further before it stopped: `{plain(a['words'].text)[:160]}`; the last phase "
                         f"the log shows is {where}.")
            ev.insert(0, evidence_of(a["words"]))
        elif a["mid"]:
            pct = f" ({100 * steps // total}%)" if total else ""
            parts.append(f"The log stops without an error and without an end-of-training line after training step "
                         f"{steps}{' of ' + str(total) if total else ''}{pct}; the last phase seen is {where}.")
        else:
            parts.append(f"The log stops before the first training step, without an error and without an "
                         f"end-of-training line; the last phase reached is {where}.")
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
        if a["interrupted"] is None:
            parts.append("If the process is still running, it is stuck there; if it is gone, it was killed without a "
                         "traceback (look for 'Killed' or the OOM killer in dmesg).")
        if last is not None and not any(x.path == last.where.path and x.line == last.where.line for x in ev):
            ev.append(evidence_of(last))
        pl = self.p.phase_line.get(phase or "")
        if pl is not None and (last is None or pl.seq != last.seq):
            ev.insert(0, evidence_of(pl))
        fix.extend(phase_fix(self.p, phase, run, a))
        fix.extend(generic_fix(run))
        return self.make(message=" ".join(parts), fix=fix, evidence=ev[:5], severity=severity,
                         seq=last.seq if last is not None else a["last_seq"])

    def _server_finding(self, a: dict[str, Any], ctx: RunState,
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
        pp = run.server_port() or 8000
        pp_note = "" if run.server_port() is not None else " (port 8000 assumed: the default)"
        fix.append(f"Check the rollout server: `curl http://{hp}:{pp}/health/`{pp_note} from the training node, and that "
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

    def _pyspy_finding(self, a: dict[str, Any], ctx: RunState) -> Finding:
        threads: list[_Thread] = a["pyspy"]
        classes: dict[str, list[_Thread]] = {}
        for t in threads:
            c = classify_frames(t.frames) or "other"
            classes.setdefault(c, []).append(t)
        main = [t for t in threads if t.name == "MainThread"]
        busy = [t for t in threads if t.state != "idle"]
        focus = main or busy
        names = sorted({t.name or t.tid for t in threads})
        parts = [f"A py-spy dump of {len(threads)} thread(s) ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})"
                 " was taken from a process that had stopped making progress"
                 + (f" after training step {a['steps']}" if a["steps"] else "") + "."]
        fix: list[str] = []
        action = None   # the rule's (restart) unless the stack says a restart would stop at the same place
        shown: dict[str, _Thread] = {}
        for t in focus or threads:
            shown.setdefault(t.name, t)
        ev = [evidence_of(t.header) for t in list(shown.values())[:4]]
        if focus:
            t = focus[0]
            c = classify_frames(t.frames)
            top = t.frames[0] if t.frames else None
            where = f" at {top[1]}:{top[2]} in {top[0]}" if top else ""
            startup = None if a["steps"] else dump_startup_phase(t.frames)
            doing = STARTUP_WHERE[startup] if startup else _CLASS_TEXT.get(c or "", "running")
            parts.append(f"Thread {t.label} ({t.state}) is {doing}{where}.")
            if startup:
                fix.extend(STARTUP_FIX[startup])
            elif c == "collective":
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
                # the same code runs again on a restart: it stops at the same call, so the code changes first
                parts.append("A restart runs the same reward code and most likely stops at the same call (unless "
                             "what it waited on was down for a moment): fix the reward function first (a timeout on "
                             "the call), then relaunch.")
                action = "stop"
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
                         seq=threads[0].header.seq, action=action)



class HangAtStart(HangCheck):
    want = "hang-at-start"


class HangMidTraining(HangCheck):
    want = "hang-mid-training"


# progress past the start named in a person's words: a percentage or a step number the run reached before it stopped
_PROGRESS_WORDS = lazyre.compile(r"(?i)(?:进度|progress|到了?|at|reach(?:ed|es)?)\s*(?:step\s*)?([1-9]\d?(?:\.\d+)?)\s*%|"
                                 r"\b(?:stuck|hangs?|hung|freez\w*|stops?|stopped)\b.{0,20}\bstep\s*([1-9]\d*)\b|"
                                 r"第\s*([1-9]\d*)\s*步")


def progress_in_words(ctx: RunState) -> LogLine | None:
    """The sentence of the paste that says training got past its first steps before it stopped, if one does."""
    from .prose import prose_lines
    return next((ln for tail in ctx.tails.values() for ln in prose_lines(list(tail))
                 if _PROGRESS_WORDS.search(plain(ln.text))), None)
