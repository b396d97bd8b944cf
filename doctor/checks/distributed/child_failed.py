"""GD307: torchrun's ChildFailedError summary: which rank failed first, with which exit code (the other
failures are torchrun stopping the remaining ranks)."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule, evidence_of
from ...signals import LogLine
from ._common import _raised_on, rank_list
from ._elastic import ElasticBlock


class ChildFailed(Rule):
    """torchrun's ChildFailedError summary: which rank failed first, with which exit code."""

    kinds = frozenset({LogLine})
    literals = ElasticBlock.LITERALS
    idle_silent = True   # fed nothing: no block header, no root (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.block = ElasticBlock()

    def feed(self, signal: Any) -> None:
        self.block.feed(signal)

    def finish(self, ctx: RunState) -> list[Finding]:
        b = self.block
        root = b.root
        if root is None:
            return self._summary_cut(ctx) if b.header is not None else []
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
        if any(f.root for f in b.failures):   # the summary's "Root Cause (first observed failure)" entry was read
            msg = f"The launcher's failure summary names {who} as the first failure (Root Cause), with {code}."
        else:   # only the elastic agent's "failed (exitcode: N) local_rank: R" line (torchrun, accelerate launch)
            msg = (f"The launcher's line `failed (exitcode: {root.exitcode}) local_rank: {root.local_rank}` reports "
                   f"{who} as the first to fail, with {code} (the failure summary with its Root Cause entry is not "
                   f"in the log).")
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
                prefixed = f" (lines prefixed [rank{root.rank}]: when the process group was up)" \
                    if root.rank is not None else ""
                fix.append(f"Scroll up to the first Traceback printed by {who}{prefixed}: that is the real error. "
                           "ChildFailedError only reports it.")
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
        elif sig == "SIGBUS":
            # memory a mapping could not back: torch's DataLoader says so itself for its workers ("Unexpected bus
            # error encountered in worker. This might be caused by insufficient shared memory (shm)",
            # torch/utils/data/_utils/signal_handling.py and csrc/DataLoader.cpp)
            fix.append("A bus error (SIGBUS) is memory that a mapping could not back: most often /dev/shm too small "
                       "(DataLoader workers and NCCL pass tensors through it; Docker's default is 64 MB), else host RAM "
                       "or a memory-mapped file exhausted while the model loads. Check `df -h /dev/shm` (Docker: "
                       "--shm-size=16g or --ipc=host), lower the dataloader workers, and watch `free -g` while it "
                       "loads; `python -X faulthandler` shows where it crashed.")
        elif sig in ("SIGSEGV", "SIGFPE", "SIGILL"):
            # the process's own fault: no person or scheduler sends these
            fix.append(f"The process crashed in native code ({sig}): run it with `python -X faulthandler` (or "
                       f"PYTHONFAULTHANDLER=1) to get the Python stack of the crash, and check that "
                       f"{_native_packages(ctx)} were built for the same CUDA and torch (`pip list`).")
        elif sig:
            fix.append(f"The process got {sig}: if nobody stopped it by hand, look for a native crash "
                       "(segfault, CUDA error) or a job scheduler ending the job.")
        else:
            fix.append("Look for the first error printed by that rank above this block.")
        return [self.make(message=msg, fix=fix, evidence=ev, count=1 + len(others),
                          ranks=(root.rank,) if root.rank is not None else (), seq=(b.header or root.lines[0]).seq)]

    def _summary_cut(self, ctx: RunState) -> list[Finding]:
        """The ChildFailedError header with no failure entry after it: the paste stops before the summary names
        the rank, its exit code and its error."""
        header = self.block.header
        assert header is not None
        if any(f.severity >= Severity.warning for f in ctx.findings):
            return []  # the run's own error was read: the header only reports it
        tail = ctx.tails.get(header.where.path) or ()
        failed = next((ln for ln in tail if ln.seq > header.seq and ln.text.rstrip().endswith(" FAILED")), None)
        script = failed.text.strip()[:-len(" FAILED")].strip() if failed is not None else None
        msg = ("torchrun's launcher raised ChildFailedError: a training process " + (f"of `{script}` " if script else "")
               + "exited with an error. The paste stops before the failure summary's entries (the rank, its exit code "
               "and the error file under `Root Cause (first observed failure)`), and no traceback of the process "
               "itself is in it: the report can say that a rank failed, not why.")
        fix = ["Paste the whole failure summary (its `Root Cause` entry) and the first Traceback printed above it by "
               "the failed rank (lines prefixed [rankN]: once the process group was up): that error is the cause, "
               "ChildFailedError only reports it.",
               "If no traceback is there, rerun with TORCHELASTIC_ERROR_FILE=/tmp/err.json (torch's @record error "
               "file), or read the per-rank logs."]
        ev = [evidence_of(header)] + ([evidence_of(failed)] if failed is not None else [])
        return [self.make(message=msg, fix=fix, evidence=ev, seq=header.seq, severity=Severity.warning,
                          title="torchrun: a training process failed; the summary is cut before its cause",
                          confidence="possible")]


# the compiled packages a native crash is usually one of, named only when the log shows them (torch always runs)
_NATIVE = (("vLLM", lazyre.compile(r"(?i)\bvllm\b")), ("flash-attn", lazyre.compile(r"(?i)\bflash[-_]attn\b")),
           ("DeepSpeed", lazyre.compile(r"(?i)\bdeepspeed\b")))


def _native_packages(ctx: RunState) -> str:
    texts = [ln.text for tail in ctx.tails.values() for ln in tail] + list(ctx.run.versions)
    names = ["torch"] + [name for name, rx in _NATIVE if any(rx.search(t) for t in texts)]
    return "the compiled packages of the environment" if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

