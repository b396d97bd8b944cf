"""GD301: NCCL watchdog timeouts (hard-wrapped lines joined).

A consequence: when one rank dies or falls behind, every other rank reports a timeout. The message puts
the numbers of this run in it: the collective and its sequence number, the timeout in minutes, the ranks
that did *not* report (the one that was behind is usually among them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule, evidence_of
from ...signals import LogLine
from ...values import as_int
from .._units import duration
from ..hang._progress import VLLM_ORIGINS
from ._common import _raised_on, rank_list
from ._slow_steps import slow_steps

SETUP_SEQNUM = 10  # a collective with SeqNum below this ran while the ranks were still setting up

# the C++ frames of the watchdog's timeout check: ProcessGroupNCCL.cpp WorkNCCL::checkTimeout throws only when a
# collective ran past its timeout ("Exception raised from checkTimeout at ...ProcessGroupNCCL.cpp:N", c10's
# "frame #N: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(...)"): a paste that kept the frames and not the line
_WD_FRAMES = ("Exception raised from checkTimeout at", "ProcessGroupNCCL::WorkNCCL::checkTimeout(")
_WD_START = ("Watchdog caught collective operation", "Timeout at NCCL work", "NCCL communicator was aborted",
             "Heartbeat monitor timed out", "watchdog got stuck", "Timed out waiting") + _WD_FRAMES
_WD_RANK = lazyre.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]")
_WD_SEQ = lazyre.compile(r"SeqNum=(\d+)")
_WD_OP = lazyre.compile(r"OpType=(\w+)")
_WD_TIMEOUT = lazyre.compile(r"Timeout\(ms\)=(\d+)")
_WD_RAN = lazyre.compile(r"ran for (\d+) milliseconds")
_WD_NUMEL = lazyre.compile(r"NumelIn=(\d+)")
_WD_NUMEL_OUT = lazyre.compile(r"NumelOut=(\d+)")
# torch's all_gather_into_tensor (c10d OpType _ALLGATHER_BASE / ALLGATHER): every rank gives NumelIn elements and gets
# NumelOut = group size x NumelIn back; DeepSpeed ZeRO-3 (partition_parameters.py) and FSDP fetch a partitioned weight
# this way before each forward that uses it
_GATHERS = ("_ALLGATHER_BASE", "ALLGATHER", "_ALLGATHER")
# a partitioned weight's shard holds thousands of elements; a gather of a few is a value every rank shares
_WEIGHT_SHARD = 1024
_GLOO = lazyre.compile(r"Timed out waiting (\d+)ms for (send|recv) operation")
_HEARTBEAT = lazyre.compile(r"(?:Heartbeat monitor timed out|watchdog got stuck for (\d+) seconds)")
# torch ProcessGroupNCCL.cpp: "Timeout at NCCL work: N, last enqueued NCCL work: M, last completed NCCL work: K" (a
# paste often cuts the line after N)
_TIMEOUT_AT = lazyre.compile(r"Timeout at NCCL work: (\d+)(?:, last enqueued NCCL work: (\d+), last completed NCCL work: (\d+))?")


@dataclass
class _Timeout:
    """One collective timeout line and the numbers it gives."""
    rank: int | None
    seqnum: int | None
    op: str | None
    timeout_ms: int | None
    ran_ms: int | None
    numel: int | None
    line: LogLine
    kind: str  # "watchdog" | "gloo" | "heartbeat" | "aborted" | "work"
    numel_out: int | None = None


def _gather_group(t: _Timeout) -> int | None:
    """The number of ranks an all-gather collects from (NumelOut / NumelIn), or None for another collective."""
    if t.op not in _GATHERS or not t.numel or not t.numel_out or t.numel_out % t.numel:
        return None
    n = t.numel_out // t.numel
    return n if 2 <= n <= 1 << 16 else None


def _timeout_lever(ctx: RunState, secs: int) -> str:
    """The process group's timeout as an ms-swift flag; doctor/swift/terms.py says it in the framework that ran
    (transformers' ddp_timeout, verl's actor_rollout_ref.nccl_timeout)."""
    default = "; ms-swift's own default is 18000000" if ctx.framework()[0] == "ms-swift" else ""
    return f"--ddp_timeout {secs} (seconds{default})"


class NcclWatchdog(Rule):
    """Collective timeouts. Joins a watchdog line hard-wrapped by a terminal or a paste with the next line."""

    kinds = frozenset({LogLine})
    literals = ("Watchdog caught collective operation", "WorkNCCL(", "Timeout(ms)=", "before timing out",
                "Timeout at NCCL work", "NCCL communicator was aborted", "Heartbeat monitor timed out",
                "watchdog got stuck", "Timed out waiting", "Exception raised from") + _WD_FRAMES

    def __init__(self, meta):
        super().__init__(meta)
        self.items: list[_Timeout] = []
        self._pending: LogLine | None = None
        self._pool: dict[str, Any] | None = None
        self._raised: list[LogLine] = []

    def share(self, pool: dict[str, Any]) -> None:
        self._pool = pool  # the hang rules' progress (the last training bar), read at finish

    def feed(self, signal: Any) -> None:
        if not isinstance(signal, LogLine) or len(self.items) > 5000:
            return
        line: LogLine = signal
        text = line.text
        pend = self._pending
        if pend is not None:
            self._pending = None
            adjacent = pend.where.path == line.where.path and line.where.line == pend.where.line + 1
            if adjacent and not any(s in text for s in _WD_START):
                self._add(pend.text + text, pend)
                return
            self._add(pend.text, pend)
        if "Exception raised from" in text and "ProcessGroupNCCL.cpp" in text and "checkTimeout" not in text:
            if not self._raised:
                self._raised.append(line)  # the watchdog thread's own raise: evidence beside the timeout check's frames
            return
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
        if any(f in text for f in _WD_FRAMES):
            if self.items and self.items[-1].kind == "frames":
                return  # one frame block, one timeout
            self.items.append(_Timeout(rank, None, None, None, None, None, line, "frames"))
            return
        if "NCCL communicator was aborted" in text:
            kind = "aborted"
        elif "Timeout at NCCL work" in text:
            kind = "work"
            t = _TIMEOUT_AT.search(text)
            if t and not seq:
                self.items.append(_Timeout(rank, int(t.group(1)), None, None, None, None, line, kind))
                return
        if not (seq or to or kind == "aborted" or "Watchdog caught collective operation" in text):
            return  # a watchdog line cut before its numbers still names the failure
        out = _WD_NUMEL_OUT.search(text)
        self.items.append(_Timeout(rank, as_int(seq.group(1)) if seq else None, op.group(1) if op else None,
                                   as_int(to.group(1)) if to else None, as_int(ran.group(1)) if ran else None,
                                   as_int(numel.group(1)) if numel else None, line, kind,
                                   as_int(out.group(1)) if out else None))

    def finish(self, ctx: RunState) -> list[Finding]:
        if self._pending is not None:
            self._add(self._pending.text, self._pending)
            self._pending = None
        if not self.items:
            return []
        items = sorted(self.items, key=lambda t: t.line.seq)
        if any(t.kind != "frames" for t in items):
            items = [t for t in items if t.kind != "frames"]  # the watchdog's own lines give the numbers
        # every timeout printed by a vLLM engine's own worker processes (their prefix: Ray's RayWorkerWrapper,
        # VllmWorker, EngineCore; not vLLM's logger, which a trainer's colocated engine prints too): the group is the
        # engine's tensor/pipeline-parallel one, whose timeout no trainer flag sets
        engine = all(t.line.origin in VLLM_ORIGINS and t.line.origin != "vllm" for t in items)
        ranks = sorted({t.rank for t in items if t.rank is not None})
        main = next((t for t in items if t.seqnum is not None and t.op), None) or \
            next((t for t in items if t.seqnum is not None), None) or items[0]
        seqs = sorted({t.seqnum for t in items if t.seqnum is not None})
        timeout_ms = next((t.timeout_ms for t in items if t.timeout_ms), None)
        world = ctx.run.world_size()
        group = _gather_group(main)
        ev: list[Evidence] = []
        if main.kind == "frames" and self._raised:
            ev.append(evidence_of(self._raised[0]))
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
            after = f" after {duration(main.timeout_ms / 1000)}" if main.timeout_ms else ""  # no timeout printed: none shown
            parts.append(f"{who} timed out{after} waiting for a gloo {main.op} "
                         "from a peer that never sent it.")
        elif main.kind == "heartbeat":
            parts.append(f"{who}: the NCCL watchdog itself got stuck (heartbeat monitor), so the process was "
                         "terminated: a collective or a CUDA call never returned.")
        elif main.kind == "frames":
            # the watchdog's own line may be there in a form not read (cut, wrapped, glued): said only when absent
            told = any("collective operation timeout" in ln.raw or "WorkNCCL(" in ln.raw
                       for tail in ctx.tails.values() for ln in tail)
            parts.append(f"{who + ': t' if ranks else 'T'}orch's C++ frames show the NCCL watchdog's timeout check (WorkNCCL::checkTimeout) "
                         "raising, which it does only for a collective that ran past the process group's timeout; the "
                         "watchdog then took the process down (SIGABRT)." + (
                             "" if told else " The watchdog's own line, with the collective's OpType, SeqNum and "
                                             "timeout, is not in the excerpt."))
        else:
            what = f"{main.op} collective" if main.op else "collective"
            seq_txt = f" (SeqNum={main.seqnum}" + (f", {main.numel} elements" if main.numel is not None else "") + ")" \
                if main.seqnum is not None else ""
            to_txt = f" for Timeout(ms)={timeout_ms} ({duration(timeout_ms / 1000)})" if timeout_ms else ""
            parts.append(f"{who} waited{to_txt} in an NCCL {what}{seq_txt} that the other ranks never joined, "
                         "and the NCCL watchdog then took the process down.")
        setup = bool(seqs) and max(seqs) < SETUP_SEQNUM
        # steps as long as the timeout (doctor/checks/distributed/_slow_steps.py): slowness, not a dead rank
        slow = slow_steps(self._pool, ctx, items[0].line.seq, timeout_ms) if main.kind == "watchdog" and not setup \
            else None
        if setup:
            parts.append(f"SeqNum {max(seqs)} is tiny: these are among the first collectives of the process group, "
                         "so the ranks never got past setup (one rank was still loading the model, starting vLLM, "
                         "preparing data, or had already died).")
        if slow is not None:
            parts.append((f"SeqNum {max(seqs)}: the process group had already run that many collectives (past its "
                          "setup). " if seqs else "") + slow[0])
        elif seqs and not setup:
            parts.append(f"SeqNum {max(seqs)}: the process group had already run that many collectives, so the ranks "
                         "were past its setup (in training, or in a model load or evaluation that gathers weights); one "
                         "rank fell behind, hung or died at this collective while the others waited.")
        if len(seqs) > 1:
            parts.append(f"The ranks disagree on the sequence number ({', '.join(map(str, seqs))}): they are "
                         "desynchronised (one rank skipped or added a collective).")
        weight_gather = group is not None and main.numel >= _WEIGHT_SHARD
        if group is not None and not weight_gather:
            parts.append(f"OpType {main.op} of {main.numel} element(s) per rank (NumelOut {main.numel_out}, read): a "
                         "small value every rank shares (a size, a flag, a metric), not a weight; one rank never "
                         "reached it.")
        if weight_gather:
            parts.append(f"OpType {main.op} with NumelOut {main.numel_out} = {group} x NumelIn {main.numel} (computed): "
                         f"each of {group} ranks gives an equal shard, the shape of a DeepSpeed ZeRO-3 (or FSDP) "
                         "gather of a partitioned weight before a forward pass or a save. So the ranks had run "
                         "different numbers of forward passes, or one never reached the gather: a generation loop that "
                         "ends earlier on some ranks (transformers' generate keeps every rank stepping only with "
                         "synced_gpus=True), an evaluation or save that not every rank runs, or an uneven last batch.")
        missing: list[int] = []
        # with no world size read, an all-gather's group bounds the ranks (assumed to be ranks 0..group-1)
        bound_by_group = bool(ranks) and not world and group is not None and group > max(ranks)
        # the ranks the log's own prefixes show ([rankN]:), when no world size was read: a rank that printed other
        # lines but no timeout is shown, not unknown
        shown = max((ln.rank for tail in ctx.tails.values() for ln in tail if ln.rank is not None), default=None)
        if ranks and not world and not bound_by_group and shown is not None and shown > max(ranks):
            world = shown + 1
        if ranks:
            top = (world - 1) if world else (group - 1) if bound_by_group and group else max(ranks)
            missing = [r for r in range(0, min(top, 1 << 16) + 1) if r not in ranks]  # bounded: ranks come from logs
        # Ray folds lines that other workers printed alike ("... [repeated 3x across cluster]"): which ranks
        # reported is then not shown
        folded = any("across cluster]" in ln.raw for tail in ctx.tails.values() for ln in tail)
        if missing and folded:
            parts.append("Ray folded identical lines of other workers into `[repeated Nx across cluster]`, so which "
                         "ranks reported the timeout is not shown.")
            missing = []
        if missing:
            parts.append(f"Rank(s) {rank_list(missing)} did not report this timeout"
                         + (f" (the gather's {group} ranks taken as ranks 0-{group - 1}: the world size was not read)"
                            if bound_by_group else "" if world else f" (and any rank above {max(ranks)} is not shown)")
                         + ": the rank that never reached the collective is usually among them.")
        first_seq = items[0].line.seq
        culprit = _raised_on([e for e in ctx.exceptions if e.seq < first_seq and (e.rank is None or e.rank not in ranks)],
                             None)
        if culprit is not None:
            on = f"rank {culprit.rank}" if culprit.rank is not None else "a process"
            parts.append(f"Before the timeouts {on} raised `{culprit.type}: {culprit.message[:140]}` (line "
                         f"{culprit.where.line}): that is the cause; the timeouts are its consequence.")
        elif slow is None:
            parts.append("The timeout is a consequence; the cause is whatever stopped that rank.")

        fix = list(slow[1]) if slow is not None and culprit is None else []
        first = "Find the first rank that errored or stopped: search every rank's (and every node's) log for the " \
                "first Traceback / Error / 'Killed' before these timeouts"
        fix.append(first + (f"; start with rank(s) {rank_list(missing)}." if missing else "."))
        if seqs and max(seqs) < SETUP_SEQNUM and not engine:
            fix.append("Setup-stage timeout: compare where each rank's log stops (model load, vLLM engine init, "
                       "dataset map on rank 0); check NPROC_PER_NODE against the visible GPUs and that every node "
                       "runs the same command and code.")
        if slow is not None and all(e.line != slow[2].where.line or e.path != slow[2].where.path for e in ev):
            ev.append(evidence_of(slow[2]))
        if weight_gather:
            fix.append("Under ZeRO-3 or FSDP every rank must run the same forward passes: pass synced_gpus=True to any "
                       "generate() call of your own, run evaluation and checkpoint saves on every rank (not only rank "
                       "0), and drop an uneven last batch (dataloader_drop_last=True).")
        if engine:
            parts.append(f"These lines come from a vLLM engine's worker processes ({items[0].line.origin}): the group "
                         f"that timed out is the engine's own tensor/pipeline-parallel group, between its workers.")
            fix.append("Look at the engine's other workers (with Ray: /tmp/ray/session_latest/logs/worker-*.err on "
                       "every node): the one that never joined the all-reduce shows why; with NCCL_DEBUG=INFO, check "
                       "the path between the engine's GPUs (NCCL_P2P_DISABLE=1 on PCIe-only or virtualised GPUs; "
                       "across nodes, the interface in NCCL_SOCKET_IFNAME).")
        if timeout_ms and slow is None and not engine:
            secs = int(max(timeout_ms / 60000 * 2, 60) * 60)
            lever = _timeout_lever(ctx, secs)
            if main.kind == "gloo":
                # transformers 5.19 training_args.py (_setup_devices): with use_cpu the PartialState gets only cpu=True
                # and the backend, no timeout; accelerate (state.py) keeps a group the script already initialised
                lever += (f"; on CPU (use_cpu) transformers creates the gloo group without it, so there set it where the "
                          f"group is made: torch.distributed.init_process_group(backend=\"gloo\", "
                          f"timeout=timedelta(seconds={secs})) before the trainer")
            fix.append(f"Timeout(ms)={timeout_ms} is {duration(timeout_ms / 1000)}. Raise it only if a step legitimately takes "
                       f"longer (a slow first vLLM load, a long reward call): {lever}.")
        if not timeout_ms and slow is None and not engine and main.kind in ("watchdog", "frames", "work") \
                and ctx.framework()[0] != "vllm":
            # the timeout itself is not in the excerpt: the lever is still the process group's timeout, in the run's
            # own terms, for a step that is slow rather than stuck (torch's default is 30 minutes)
            fix.append("If every rank is alive and one step is only slow (a long generation, a first vLLM load, a "
                       "large evaluation), raise the process group's timeout above that step's duration: "
                       f"{_timeout_lever(ctx, 7200)}; torch's own default is 30 minutes.")
        fix.append("Rerun with NCCL_DEBUG=INFO (and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 for torch's flight recorder), "
                   "and while it waits take `py-spy dump --pid <pid>` of every rank: the rank not in a collective "
                   "is the one to fix.")
        heart = main.kind == "heartbeat"   # the watchdog thread stuck: no collective was shown to time out
        return [self.make(message=" ".join(parts), fix=fix, evidence=ev, count=len(items), ranks=tuple(ranks),
                          seq=items[0].line.seq,
                          title=("NCCL watchdog thread stuck (heartbeat monitor)" if heart else
                                 "gloo collective timed out" if main.kind == "gloo" else None),
                          verify=("the run passes the step where it stopped, with no `watchdog got stuck` or "
                                  "`Heartbeat monitor timed out` line" if heart else None))]
