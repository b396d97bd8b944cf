"""Distributed failures: NCCL watchdog timeouts, NCCL / c10d store errors, torchrun's ChildFailedError
block and processes killed by the host (OOM killer, SIGKILL).

Most of these are consequences: when one rank dies or falls behind, every other rank reports a
timeout or a broken connection. The rules here say so (``consequence = true`` in their TOML) and put
the numbers of this run in the message: the collective and its sequence number, the timeout in
minutes, the ranks that did *not* report (the one that was behind is usually among them), the rank
torchrun saw fail first and its exit code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import EXCEPTION, LINE, Evidence, ExceptionInfo, Finding, LogLine, Severity
from ..rules import FinishContext, Hit, Rule, evidence_of, fold
from ..sources.swiftconfig import RunConfig

SETUP_SEQNUM = 10  # a collective with SeqNum below this ran while the ranks were still setting up


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def minutes(ms: int) -> str:
    m = ms / 60000
    if m >= 120:
        return f"{m / 60:.0f} h"
    return f"{m:.0f} min" if m >= 1 else f"{ms / 1000:.0f} s"


def rank_list(ranks: list[int] | tuple[int, ...]) -> str:
    return ", ".join(map(str, ranks))


def flag_in_version(run: RunConfig, flag: str) -> bool:
    """A few flags used in the fixes below appeared in a known ms-swift version."""
    since = {"vllm_server_group_port": (3, 11), "vllm_server_timeout": (3, 4), "offload_model": (3, 3),
             "offload_optimizer": (3, 3), "move_model_batches": (3, 3), "sleep_level": (3, 3)}
    mm = run.swift_major_minor
    return mm is None or mm >= since.get(flag, (0, 0))


# ---------------------------------------------------------------------------------------------------
# GD301: NCCL watchdog timeout (hard-wrapped lines joined)

_WD_START = ("Watchdog caught collective operation timeout", "Timeout at NCCL work", "NCCL communicator was aborted",
             "Heartbeat monitor timed out", "watchdog got stuck", "Timed out waiting")
_WD_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]")
_WD_SEQ = re.compile(r"SeqNum=(\d+)")
_WD_OP = re.compile(r"OpType=(\w+)")
_WD_TIMEOUT = re.compile(r"Timeout\(ms\)=(\d+)")
_WD_RAN = re.compile(r"ran for (\d+) milliseconds")
_WD_NUMEL = re.compile(r"NumelIn=(\d+)")
_GLOO = re.compile(r"Timed out waiting (\d+)ms for (send|recv) operation")
_HEARTBEAT = re.compile(r"(?:Heartbeat monitor timed out|watchdog got stuck for (\d+) seconds)")
_TIMEOUT_AT = re.compile(r"Timeout at NCCL work: (\d+), last enqueued NCCL work: (\d+), last completed NCCL work: (\d+)")


@dataclass
class _Timeout:
    rank: int | None
    seqnum: int | None
    op: str | None
    timeout_ms: int | None
    ran_ms: int | None
    numel: int | None
    line: LogLine
    kind: str  # "watchdog" | "gloo" | "heartbeat" | "aborted" | "work"


class NcclWatchdog(Rule):
    """Collective timeouts. Joins a watchdog line hard-wrapped by a terminal or a paste with the next line."""

    kinds = frozenset({LINE})
    literals = ("Watchdog caught collective operation timeout", "WorkNCCL(", "Timeout(ms)=", "before timing out",
                "Timeout at NCCL work", "NCCL communicator was aborted", "Heartbeat monitor timed out",
                "watchdog got stuck", "Timed out waiting")

    def __init__(self, meta):
        super().__init__(meta)
        self.items: list[_Timeout] = []
        self._pending: LogLine | None = None

    def feed(self, kind: str, payload: Any) -> None:
        if kind != LINE or len(self.items) > 5000:
            return
        line: LogLine = payload
        text = line.text
        pend = self._pending
        if pend is not None:
            self._pending = None
            adjacent = pend.where.path == line.where.path and line.where.line == pend.where.line + 1
            if adjacent and not any(s in text for s in _WD_START):
                self._add(pend.text + text, pend)
                return
            self._add(pend.text, pend)
        if not any(s in text for s in _WD_START):
            return
        if "Watchdog caught" in text and ("before timing out" not in text or "Timeout(ms)=" not in text):
            self._pending = line  # hard-wrapped: the rest is on the next line
            return
        self._add(text, line)

    def _add(self, text: str, line: LogLine) -> None:
        m = _WD_RANK.search(text)
        rank = int(m.group(1)) if m else line.rank
        g = _GLOO.search(text)
        if g:
            self.items.append(_Timeout(rank, None, g.group(2), int(g.group(1)), None, None, line, "gloo"))
            return
        if _HEARTBEAT.search(text):
            self.items.append(_Timeout(rank, None, None, None, None, None, line, "heartbeat"))
            return
        seq = _WD_SEQ.search(text)
        op = _WD_OP.search(text)
        to = _WD_TIMEOUT.search(text)
        ran = _WD_RAN.search(text)
        numel = _WD_NUMEL.search(text)
        kind = "watchdog"
        if "NCCL communicator was aborted" in text:
            kind = "aborted"
        elif "Timeout at NCCL work" in text:
            kind = "work"
            t = _TIMEOUT_AT.search(text)
            if t and not seq:
                self.items.append(_Timeout(rank, int(t.group(1)), None, None, None, None, line, kind))
                return
        if not (seq or to or kind == "aborted"):
            return
        self.items.append(_Timeout(rank, _int(seq.group(1)) if seq else None, op.group(1) if op else None,
                                   _int(to.group(1)) if to else None, _int(ran.group(1)) if ran else None,
                                   _int(numel.group(1)) if numel else None, line, kind))

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if self._pending is not None:
            self._add(self._pending.text, self._pending)
            self._pending = None
        if not self.items:
            return []
        items = sorted(self.items, key=lambda t: t.line.seq)
        ranks = sorted({t.rank for t in items if t.rank is not None})
        main = next((t for t in items if t.seqnum is not None and t.op), None) or \
            next((t for t in items if t.seqnum is not None), None) or items[0]
        seqs = sorted({t.seqnum for t in items if t.seqnum is not None})
        ops = sorted({t.op for t in items if t.op})
        timeout_ms = next((t.timeout_ms for t in items if t.timeout_ms), None)
        world = ctx.run.world_size()
        ev: list[Evidence] = []
        seen: set[str] = set()
        for t in items:
            key = _WD_RANK.sub("", t.line.text)[-160:]
            if key in seen:
                continue
            seen.add(key)
            ev.append(evidence_of(t.line))
            if len(ev) >= 4:
                break

        parts = []
        who = f"Rank(s) {rank_list(ranks)}" if ranks else "A rank"
        if main.kind == "gloo":
            parts.append(f"{who} timed out after {minutes(main.timeout_ms or 0)} waiting for a gloo {main.op} "
                         "from a peer that never sent it.")
        elif main.kind == "heartbeat":
            parts.append(f"{who}: the NCCL watchdog itself got stuck (heartbeat monitor), so the process was "
                         "terminated: a collective or a CUDA call never returned.")
        else:
            what = f"{main.op} collective" if main.op else "collective"
            seq_txt = f" (SeqNum={main.seqnum}" + (f", {main.numel} elements" if main.numel is not None else "") + ")" \
                if main.seqnum is not None else ""
            to_txt = f" for Timeout(ms)={timeout_ms} ({minutes(timeout_ms)})" if timeout_ms else ""
            parts.append(f"{who} waited{to_txt} in an NCCL {what}{seq_txt} that the other ranks never joined, "
                         "and the NCCL watchdog then took the process down.")
        if seqs and max(seqs) < SETUP_SEQNUM:
            parts.append(f"SeqNum {max(seqs)} is tiny: these are among the first collectives of the process group, "
                         "so the ranks never got past setup (one rank was still loading the model, starting vLLM, "
                         "preparing data, or had already died).")
        elif seqs:
            parts.append(f"SeqNum {max(seqs)}: training had been running; one rank fell behind, hung or died at "
                         "this collective while the others waited.")
        if len(seqs) > 1:
            parts.append(f"The ranks disagree on the sequence number ({', '.join(map(str, seqs))}): they are "
                         "desynchronised (one rank skipped or added a collective).")
        missing: list[int] = []
        if ranks:
            top = (world - 1) if world else max(ranks)
            missing = [r for r in range(0, min(top, 1 << 16) + 1) if r not in ranks]  # bounded: ranks come from logs
        if missing:
            parts.append(f"Rank(s) {rank_list(missing)} did not report this timeout"
                         + ("" if world else f" (and any rank above {max(ranks)} is not shown)")
                         + ": the rank that never reached the collective is usually among them.")
        first_seq = items[0].line.seq
        culprit = _raised_on([e for e in ctx.exceptions if e.seq < first_seq and (e.rank is None or e.rank not in ranks)],
                             None)
        if culprit is not None:
            on = f"rank {culprit.rank}" if culprit.rank is not None else "a process"
            parts.append(f"Before the timeouts {on} raised `{culprit.type}: {culprit.message[:140]}` (line "
                         f"{culprit.where.line}): that is the cause; the timeouts are its consequence.")
        else:
            parts.append("The timeout is a consequence; the cause is whatever stopped that rank.")

        fix = []
        first = "Find the first rank that errored or stopped: search every rank's (and every node's) log for the " \
                "first Traceback / Error / 'Killed' before these timeouts"
        fix.append(first + (f"; start with rank(s) {rank_list(missing)}." if missing else "."))
        if seqs and max(seqs) < SETUP_SEQNUM:
            fix.append("Setup-stage timeout: compare where each rank's log stops (model load, vLLM engine init, "
                       "dataset map on rank 0); check NPROC_PER_NODE against the visible GPUs and that every node "
                       "runs the same command and code.")
        if timeout_ms:
            mins = timeout_ms / 60000
            fix.append(f"Timeout(ms)={timeout_ms} is {minutes(timeout_ms)}. Raise it only if a step legitimately takes "
                       f"longer (a slow first vLLM load, a long reward call): ms-swift --ddp_timeout "
                       f"{int(max(mins * 2, 60) * 60)} (seconds; ms-swift's own default is 18000000); trl / accelerate "
                       "scripts: ddp_timeout in the training arguments.")
        fix.append("Rerun with NCCL_DEBUG=INFO (and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 for torch's flight recorder), "
                   "and while it waits take `py-spy dump --pid <pid>` of every rank: the rank not in a collective "
                   "is the one to fix.")
        return [self.make(message=" ".join(parts), fix=fix, evidence=ev, count=len(items), ranks=tuple(ranks),
                          seq=items[0].line.seq)]


# ---------------------------------------------------------------------------------------------------
# GD302: NCCL "unhandled system error" (shared memory); GD305: c10d store / socket timeouts (fixers)

def nccl_system_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    texts = " ".join(h.evidence.text for h in hits)
    shm = "/dev/shm" in texts or "shared memory" in texts
    world = ctx.run.world_size()
    msg = ("NCCL failed with a system error while it set up its transports"
           + (" because it could not create or extend a shared-memory segment in /dev/shm." if shm else
              " (ncclSystemError: a system call such as shm_open, socket or malloc failed)."))
    msg += (" In Docker the default /dev/shm is 64 MB, far too small for NCCL between "
            + (f"{world} local ranks" if world else "the local ranks") + ".")
    fix = ["Give the container more shared memory: `docker run --shm-size=16g ...` or `--ipc=host` "
           "(Kubernetes: mount an emptyDir with medium: Memory at /dev/shm).",
           "Check it on the node: `df -h /dev/shm`.",
           "Rerun with NCCL_DEBUG=INFO to see the failing call; as a stop-gap NCCL_SHM_DISABLE=1 makes NCCL "
           "use sockets/P2P instead of shared memory (slower).",
           "If /dev/shm is large, the same error comes from the network (NCCL_SOCKET_IFNAME set to the right "
           "interface, InfiniBand: NCCL_IB_DISABLE=1 to test)."]
    return {"message": msg, "fix": fix}


_PORT = re.compile(r"(?:\(([\w.\-:]+), (\d+)\)|host ([\w.\-]+):(\d+)|port: (\d+))")
VLLM_GROUP_PORT = 51216


def socket_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    host = port = None
    for h in hits:
        m = _PORT.search(h.evidence.text)
        if m:
            host = m.group(1) or m.group(3)
            port = _int(m.group(2) or m.group(4) or m.group(5))
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
    waited = f" for {minutes(timeout)}" if timeout else ""
    fix: list[str] = []
    if port is not None and group_port <= port < group_port + 64:
        msg = (f"The trainer waited{waited} to join the weight-sync process group of the vLLM rollout server at "
               f"{where} (vllm_server_group_port, default {VLLM_GROUP_PORT}+i) and nobody was listening there.")
        fix.append(f"Check that `swift rollout` is running and reachable from this node on port {port} "
                   f"(not only on its HTTP port {run.get('vllm_server_port', 8000)}): firewall, a proxy "
                   "(unset http_proxy/https_proxy/all_proxy for the rollout host), or a server on another machine "
                   f"while the trainer connects to {host or 'the host you gave'}.")
        fix.append("Use the same ms-swift and vLLM versions for `swift rollout` and the trainer: the group "
                   "handshake changed between releases.")
        if flag_in_version(run, "vllm_server_group_port"):
            fix.append(f"If another run already holds port {port}, pass a free one with --vllm_server_group_port "
                       "(ms-swift >= 3.11), and restart `swift rollout` between runs.")
    else:
        master = run.env.get("MASTER_PORT") or run.torchrun.get("master_port")
        msg = (f"A c10d store connection to {where} timed out{waited} or broke: the process that should serve "
               "it (rank 0 / the master node) was not listening, had died, or is unreachable.")
        fix.append("Find out whether rank 0 (or the master node) is alive and got past the same point: if it died, "
                   "its error is the root cause.")
        fix.append("Multi-node: MASTER_ADDR must be the IP of node 0 reachable from every node, MASTER_PORT open "
                   f"(now {master or 'default 29500'}), the same NNODES / NPROC_PER_NODE everywhere.")
        if server:
            fix.append(f"Server mode: the trainer also connects to the rollout server's group port "
                       f"{group_port}; make sure it is reachable.")
    return {"message": msg, "fix": fix}


def port_in_use_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    port = None
    for h in hits:
        m = re.search(r"(?:port: |\]:|\d:)(\d{2,5})\b", h.evidence.text)
        if m:
            port = _int(m.group(1))
            break
    master = _int(run.env.get("MASTER_PORT") or run.torchrun.get("master_port")) or 29500
    p = port or master
    msg = (f"Port {p} is already in use on this machine, so the distributed store could not listen: another "
           "training run (or a leftover process of an earlier one) holds it.")
    fix = [f"Use another port: MASTER_PORT={p + 1} swift rlhf ... (ms-swift passes MASTER_PORT to torchrun).",
           f"Or free it: `lsof -i :{p}` / `ss -ltnp | grep {p}` and stop the stale process."]
    if p >= VLLM_GROUP_PORT and p < VLLM_GROUP_PORT + 64:
        fix.append("For the vLLM weight-sync group use --vllm_server_group_port with a free port (ms-swift >= 3.11).")
    return {"message": msg, "fix": fix}


# ---------------------------------------------------------------------------------------------------
# torchrun / elastic ChildFailedError block (GD306) and host OOM / SIGKILL (GD310)

_AGENT_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_FIELD = re.compile(r"^\s*(rank|exitcode|error_file|traceback|msg)\s*:\s*(.*)$")
_RANK_FIELD = re.compile(r"(-?\d+)(?: \(local_rank: (\d+)\))?")
_EXIT_FIELD = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")
_SIGNAL = re.compile(r"Signal (\d+) \((SIG\w+)\)")
SIGNALS = {-9: "SIGKILL", -15: "SIGTERM", -6: "SIGABRT", -11: "SIGSEGV", -7: "SIGBUS", -2: "SIGINT", -1: "SIGHUP"}


@dataclass
class Failure:
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    traceback: str = ""
    error_file: str = ""
    root: bool = False
    lines: list[LogLine] = field(default_factory=list)

    @property
    def signal(self) -> str | None:
        m = _SIGNAL.search(self.traceback)
        if m:
            return m.group(2)
        return SIGNALS.get(self.exitcode) if self.exitcode is not None and self.exitcode < 0 else None


class ElasticBlock:
    """Parses torchrun's ChildFailedError summary and the agent's 'failed (exitcode: N)' line."""

    LITERALS = ("ChildFailedError", "Failures:", "Root Cause", "local_rank", "exitcode", "traceback :", "traceback:",
                "c10::DistBackendError", "Watchdog caught collective operation timeout")

    def __init__(self) -> None:
        self.failures: list[Failure] = []
        self.agent: list[tuple[int, int, int, LogLine]] = []  # exitcode, local_rank, pid, line
        self.header: LogLine | None = None
        self.nccl_abort = False  # the NCCL watchdog aborted a process (its SIGABRT is then a consequence)
        self._section: str | None = None
        self._cur: Failure | None = None

    def feed(self, line: LogLine) -> None:
        text = line.text
        if "failed (exitcode:" in text:
            m = _AGENT_FAILED.search(text)
            if m:
                self.agent.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), line))
            return
        if "ChildFailedError" in text:
            if "ChildFailedError:" in text or text.rstrip().endswith("ChildFailedError"):
                self.header = self.header or line
            return
        if "c10::DistBackendError" in text or "Watchdog caught collective operation timeout" in text:
            self.nccl_abort = True
            return
        stripped = text.strip()
        if stripped.startswith("Root Cause"):
            self._section = "root"
            self._cur = None
            return
        if stripped == "Failures:":
            self._section = "failures"
            self._cur = None
            return
        if self._section is None:
            return
        m = _FIELD.match(text)
        if not m:
            return
        key, val = m.group(1), m.group(2).strip()
        if key == "rank":
            r = _RANK_FIELD.match(val)
            self._cur = Failure(root=self._section == "root")
            self._cur.lines.append(line)
            if r:
                self._cur.rank = int(r.group(1))
                self._cur.local_rank = _int(r.group(2))
            self.failures.append(self._cur)
            return
        cur = self._cur
        if cur is None:
            return
        if key != "error_file":
            cur.lines.append(line)
        if key == "exitcode":
            e = _EXIT_FIELD.match(val)
            if e:
                cur.exitcode = int(e.group(1))
                cur.pid = _int(e.group(2))
        elif key in ("traceback", "msg"):
            cur.traceback = val
        elif key == "error_file":
            cur.error_file = val

    @property
    def root(self) -> Failure | None:
        roots = [f for f in self.failures if f.root]
        if roots:
            return roots[0]
        if self.agent:
            code, local, pid, line = self.agent[0]
            return Failure(None, local, code, pid, "", "", True, [line])
        return None

    def others(self) -> list[Failure]:
        return [f for f in self.failures if not f.root]

    @property
    def seen(self) -> bool:
        return bool(self.failures or self.agent or self.header)


def _raised_on(exceptions: list[ExceptionInfo], rank: int | None) -> ExceptionInfo | None:
    from .fallback import CONSEQUENCE_TYPES
    for e in sorted(exceptions, key=lambda x: x.seq):
        if e.short_type in CONSEQUENCE_TYPES:
            continue
        if rank is None or e.rank is None or e.rank == rank:
            return e
    return None


class ChildFailed(Rule):
    """torchrun's ChildFailedError summary: which rank failed first, with which exit code."""

    kinds = frozenset({LINE})
    literals = ElasticBlock.LITERALS

    def __init__(self, meta):
        super().__init__(meta)
        self.block = ElasticBlock()

    def feed(self, kind: str, payload: Any) -> None:
        self.block.feed(payload)

    def finish(self, ctx: FinishContext) -> list[Finding]:
        b = self.block
        root = b.root
        if root is None:
            return []
        ev: list[Evidence] = []
        if b.header is not None:
            ev.append(evidence_of(b.header))
        ev.extend(evidence_of(l) for l in root.lines[:3])
        sig = root.signal
        who = f"rank {root.rank}" if root.rank is not None else f"local_rank {root.local_rank}"
        if root.rank is not None and root.local_rank is not None and root.local_rank != root.rank:
            who += f" (local_rank {root.local_rank})"
        code = f"exit code {root.exitcode}" + (f" ({sig})" if sig else "")
        others = b.others()
        msg = f"torchrun reports {who} as the first failure (Root Cause), with {code}."
        if others:
            o_codes = sorted({f.exitcode for f in others if f.exitcode is not None})
            o_ranks = [f.rank for f in others if f.rank is not None]
            stopped = all(c in (-15, -9) for c in o_codes)
            msg += (f" The other failure(s) (rank {rank_list(o_ranks)}, exit code {', '.join(map(str, o_codes))}) "
                    + ("are torchrun stopping the remaining ranks after the first one died." if stopped else
                       "came after it."))
        exc = _raised_on(ctx.exceptions, root.rank)
        fix: list[str] = []
        if root.exitcode is not None and root.exitcode > 0:
            if exc is not None:
                msg += f" Its Python error is `{exc.type}: {exc.message[:160]}` (line {exc.where.line})."
                fix.append(f"Fix the error {who} raised (`{exc.short_type}`, see the finding above); "
                           "ChildFailedError only reports it.")
            else:
                fix.append(f"Scroll up to the first Traceback printed by {who} (lines prefixed [rank{root.rank}]: "
                           "when the process group was up): that is the real error. ChildFailedError only reports it.")
                fix.append("If no traceback is there, rerun with the @record decorator's error file: set "
                           "TORCHELASTIC_ERROR_FILE=/tmp/err.json, or read the per-rank logs.")
        elif sig == "SIGABRT" and b.nccl_abort:
            msg += (" SIGABRT here is the NCCL watchdog taking the process down after a collective timeout "
                    "(see the NCCL finding), not a crash of its own.")
            fix.append("Follow the NCCL timeout back to the rank that did not reach the collective: its error, not "
                       f"{who}'s abort, is the cause.")
        elif sig == "SIGKILL":
            fix.append("SIGKILL without a Python traceback: the host's OOM killer or a scheduler memory limit "
                       "killed the process (see the host OOM finding); check `dmesg -T | grep -i 'killed process'`.")
        elif sig:
            fix.append(f"The process got {sig}: if nobody stopped it by hand, look for a native crash "
                       "(segfault, CUDA error) or a job scheduler ending the job.")
        else:
            fix.append("Look for the first error printed by that rank above this block.")
        return [self.make(message=msg, fix=fix, evidence=ev, count=1 + len(others),
                          ranks=(root.rank,) if root.rank is not None else (), seq=(b.header or root.lines[0]).seq)]


# ---------------------------------------------------------------------------------------------------
# GD310: host OOM killer / SIGKILL

_KILLED_PATTERNS = [
    ("bash", re.compile(r"^(?:\S*: )?(?:line \d+: )?\s*\d+ Killed\s+(?P<cmd>\S.*)$")),
    ("killed", re.compile(r"^\s*Killed\s*$")),
    ("dmesg", re.compile(r"(?:Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (?P<pid>\d+) \((?P<proc>[^)]*)\)")),
    ("dmesg", re.compile(r"oom-kill:.*task=(?P<proc>[\w.\-]+),pid=(?P<pid>\d+)")),
    ("subprocess", re.compile(r"died with <Signals\.SIGKILL: 9>")),
    ("dataloader", re.compile(r"DataLoader worker \(pid\(?s?\)? ?(?P<pid>[\d, {}]+)\)? (?:is killed by signal: Killed|exited unexpectedly)")),
    ("oomkilled", re.compile(r"\bOOMKilled\b|(?:exit(?:ed with)? code|exit status) 137\b")),
]


_TRAIN_BAR = re.compile(r"^\s*Train:\s*\d+%\|[^|]*\|\s*(\d+)/\d+")


class HostOomKilled(Rule):
    """A process killed with SIGKILL and no Python traceback: in practice the host's OOM killer."""

    kinds = frozenset({LINE})
    literals = ElasticBlock.LITERALS + ("Killed", "SIGKILL", "Out of memory", "out of memory: Kill", "oom-kill",
                                        "DataLoader worker", "OOMKilled", "code 137", "status 137", "Train:")

    def __init__(self, meta):
        super().__init__(meta)
        self.block = ElasticBlock()
        self.hits: list[tuple[str, LogLine, dict[str, str]]] = []
        self.training = 0  # last training step seen on a Train bar before the kill

    def feed(self, kind: str, payload: Any) -> None:
        line: LogLine = payload
        if "%|" in line.text and "Train" in line.text:
            m = _TRAIN_BAR.match(line.text)
            if m and int(m.group(1)) > 0:
                self.training = int(m.group(1))
            return
        self.block.feed(line)
        if len(self.hits) > 1000:
            return
        text = line.text
        for name, rx in _KILLED_PATTERNS:
            if name == "dataloader" and "DataLoader worker" not in text:
                continue
            m = rx.search(text)
            if m:
                if name == "dataloader" and "exited unexpectedly" in text and "Killed" not in text:
                    continue
                self.hits.append((name, line, {k: v for k, v in m.groupdict().items() if v}))
                return

    def finish(self, ctx: FinishContext) -> list[Finding]:
        root = self.block.root
        elastic_kill = root is not None and root.exitcode == -9
        if elastic_kill and _raised_on(ctx.exceptions, root.rank) is not None:
            # a Python error was printed (by that rank, or by a process without a rank prefix): the -9 came later
            elastic_kill = False
        if not elastic_kill and not self.hits:
            return []
        run = ctx.run
        ev: list[Evidence] = []
        kinds = [n for n, _, _ in self.hits]
        first_seq = min([l.seq for _, l, _ in self.hits] + ([root.lines[0].seq] if elastic_kill and root.lines else []))
        for _, l, _ in self.hits[:3]:
            ev.append(evidence_of(l))
        if elastic_kill:
            ev.extend(evidence_of(a[3]) for a in self.block.agent[:1])
            ev.extend(evidence_of(l) for l in root.lines[:3])
        dataloader_only = kinds and all(k == "dataloader" for k in kinds) and not elastic_kill
        if dataloader_only:
            msg = ("A DataLoader worker process was killed by the operating system (signal: Killed): the host ran "
                   "out of RAM (or /dev/shm) while the workers held their batches.")
        else:
            who = ""
            if elastic_kill:
                who = (f"torchrun's first failure is rank {root.rank} with exit code -9 (SIGKILL) and no Python "
                       "traceback from that rank. " if root.rank is not None else
                       "torchrun's first failure has exit code -9 (SIGKILL) and no Python traceback. ")
            elif "dmesg" in kinds:
                d = next(g for n, _, g in self.hits if n == "dmesg")
                who = f"The kernel's OOM killer killed process {d.get('pid', '?')} ({d.get('proc', '?')}). "
            elif "bash" in kinds or "killed" in kinds:
                who = "The shell reports the process as 'Killed' (SIGKILL, exit status 137). "
            elif "subprocess" in kinds:
                who = "The training process died with SIGKILL (signal 9). "
            elif "oomkilled" in kinds:
                who = "The container was OOM-killed (exit code 137). "
            msg = (who + "A process killed this way leaves no error of its own: on a training node it is almost "
                   "always the Linux OOM killer (host RAM, not GPU memory) or a job scheduler's memory limit.")
        fix = ["Confirm it: `dmesg -T | grep -iE 'killed process|out of memory'` on the node (or the scheduler's "
               "job log: OOMKilled / exceeded memory limit), and watch `free -g` during the run."]
        world = run.world_size()
        workers = run.int_arg("dataloader_num_workers")
        if workers is not None and workers > 0:
            per = f" x {world} ranks = {workers * world} worker processes" if world and world > 1 else ""
            fix.append(f"--dataloader_num_workers {workers}{per}, each holding batches (images/videos for VL "
                       f"models) in host RAM: try --dataloader_num_workers {max(workers // 4, 0) if workers > 1 else 0}.")
        elif dataloader_only:
            fix.append("Lower --dataloader_num_workers (0 loads data in the training process) and give the "
                       "container more /dev/shm (docker --shm-size=16g).")
        offl = [k for k in ("offload_optimizer", "offload_model") if run.args.get(k) is True]
        ds = str(run.args.get("deepspeed") or "")
        if offl or "offload" in ds:
            what = ", ".join(f"--{k} true" for k in offl) + ((", " if offl else "") + f"--deepspeed {ds}" if "offload" in ds else "")
            fix.append(f"{what}: CPU offload keeps model/optimizer states in host RAM on every rank (roughly the "
                       "model's full-precision size plus Adam states of about 12 bytes per trainable parameter). "
                       "Turn offload off or use a config without CPU offload if GPU memory allows, or train on "
                       "fewer ranks per node.")
        if self.training:
            fix.append(f"It died during training (after step {self.training}): host RAM grew while training, so look "
                       "at what accumulates per step: dataloader workers, CPU offload buffers, a reward function or "
                       "plugin that caches completions; `free -g` every few minutes shows the trend.")
        elif world and world > 1:
            fix.append(f"{world} processes per node each load the model on CPU before moving it to GPU: peak host RAM "
                       f"is about {world} x the checkpoint size during loading; lower NPROC_PER_NODE or use "
                       "--deepspeed zero3 (loads shards) if RAM is short.")
        if run.args.get("lazy_tokenize") is False or run.get("dataset_num_proc", 1) > 1:
            fix.append("Large datasets: --lazy_tokenize true encodes samples on the fly instead of holding the whole "
                       "encoded dataset in RAM" + (f"; --dataset_num_proc {run.get('dataset_num_proc')} also multiplies "
                                                   "memory during preprocessing." if run.get("dataset_num_proc", 1) > 1 else "."))
        if not run.args:
            fix.append("Host-RAM levers in ms-swift: --dataloader_num_workers, --offload_optimizer / --offload_model "
                       "(push states to CPU), --lazy_tokenize true, fewer processes per node (NPROC_PER_NODE).")
        return [self.make(message=msg, fix=fix, evidence=ev[:6], count=max(len(self.hits), 1),
                          ranks=(root.rank,) if elastic_kill and root.rank is not None else (), seq=first_seq)]


def duplicate_gpu_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    nproc = run.env.get("NPROC_PER_NODE") or run.torchrun.get("nproc_per_node")
    visible = run.env.get("CUDA_VISIBLE_DEVICES")
    n_vis = run.visible_gpus()
    msg = (f"NCCL found rank {g.get('a', '?')} and rank {g.get('b', '?')} on the same GPU (device {g.get('dev', '?')}) "
           "and refused to build the communicator: NCCL needs one GPU per rank.")
    fix = []
    if nproc is not None and n_vis is not None:
        fix.append(f"NPROC_PER_NODE={nproc} but CUDA_VISIBLE_DEVICES={visible} shows {n_vis} GPU(s): "
                   f"use NPROC_PER_NODE={n_vis}, or list {nproc} GPUs in CUDA_VISIBLE_DEVICES.")
    else:
        fix.append("Make NPROC_PER_NODE (training processes per node) equal to the number of GPUs in "
                   f"CUDA_VISIBLE_DEVICES (now NPROC_PER_NODE={nproc or 'unset'}, CUDA_VISIBLE_DEVICES={visible or 'unset'}); "
                   "`nvidia-smi -L` lists the GPUs.")
    fix.append("Colocated vLLM / reward models must not be pinned to a GPU that a training rank owns "
               "(no explicit device like cuda:0 in your plugin code).")
    fix.append("In your own scripts call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before "
               "init_process_group.")
    return {"message": msg, "fix": fix}


_NCCL_REASON = re.compile(r"NCCL error in: [^,]*, ([^,(]+)")


def nccl_backend_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    ranks = sorted({h.rank for h in hits if h.rank is not None})
    reason = None
    for h in hits:
        m = _NCCL_REASON.search(h.evidence.text)
        if m:
            reason = m.group(1).strip()
            break
    remote = any("ncclRemoteError" in h.evidence.text or "remote process" in h.evidence.text for h in hits)
    who = f"rank(s) {rank_list(ranks)}" if ranks else "a rank"
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
    return {"message": msg, "fix": fix}


# --------------------------------------------------------------------------- GD415 CPU processes without --use_cpu

_GROUP_VIEW = re.compile(r"shape '\[-1, (\d+)\]' is invalid for input of size (\d+)")
_CPU_MODEL = re.compile(r"model_kwargs: \{'device_map': 'cpu'")


class CpuDdpWithoutUseCpu(Rule):
    """Several torchrun processes on CPU without --use_cpu true: accelerate runs each rank as a single
    process, gathers nothing, and the advantage code's ``rewards.view(-1, num_generations)`` gets only
    this rank's completions (real run real-ddp2-cpu-gloo-shape-error-child-failed)."""

    kinds = frozenset({LINE, EXCEPTION})
    literals = ("model_kwargs", "is invalid for input of size")

    def __init__(self, meta):
        super().__init__(meta)
        self.exc: ExceptionInfo | None = None
        self.group = self.size = 0
        self.cpu_line: LogLine | None = None

    def feed(self, kind: str, payload: Any) -> None:
        if kind == EXCEPTION:
            m = _GROUP_VIEW.search(payload.message)
            if m and self.exc is None:
                self.exc, self.group, self.size = payload, int(m.group(1)), int(m.group(2))
            return
        if self.cpu_line is None and _CPU_MODEL.search(payload.text):
            self.cpu_line = payload

    def finish(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        world = run.world_size()
        if self.exc is None or self.cpu_line is None or not world or world < 2:
            return []
        if str(run.get("use_cpu")).lower() == "true":
            return []
        g = _int(run.get("num_generations"))
        if g is not None and g != self.group:
            return []
        per_rank = self.size
        msg = (f"{world} processes were started (torchrun) on CPU without --use_cpu true, so each one trained "
               f"alone: the advantage step grouped this rank's own {per_rank} reward(s) into groups of "
               f"{self.group} (`{self.exc.short_type}: {self.exc.message.strip()[:120]}`), instead of the "
               f"{per_rank * world} gathered from all {world} ranks.")
        fix = ["Add --use_cpu true (keep --ddp_backend gloo): the ranks then form one process group on CPU "
               "(verified on ms-swift 4.6.0).",
               f"Or run one process (no NPROC_PER_NODE) with --per_device_train_batch_size {per_rank * world} for "
               f"the same {per_rank * world} completions per step.",
               "On a GPU machine this means torch saw no GPU: check `python -c 'import torch; "
               "print(torch.cuda.is_available())'` and CUDA_VISIBLE_DEVICES on every node."]
        ev = [Evidence(self.exc.where.path, self.exc.where.line, self.exc.raw), evidence_of(self.cpu_line)]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=self.exc.seq)]
