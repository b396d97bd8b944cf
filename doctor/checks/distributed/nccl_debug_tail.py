"""GD308: a log whose last lines are NCCL's own debug output (``NCCL_DEBUG=INFO``: ``host:pid:tid [dev] NCCL INFO
...``) with no error after them: the processes stopped inside NCCL, building or using a communicator.

People turn on NCCL_DEBUG=INFO when a run hangs, and paste the end of what it printed; NCCL prints nothing more
while a collective waits, so the last INFO lines are where the ranks stood. Real cases: NVIDIA/nccl#857 (one GPU
hangs, the log ends in INFO lines), NVIDIA/nccl#1160 (hang before the training loop, ends in INFO lines),
modelscope/ms-swift#3934 (2-node GRPO hangs at step 5, ends in ncclCommSplit and service-thread lines).
The format is NCCL's own (src/include/debug.h, ``INFO(...)``: ``%s:%d:%d [%d] NCCL INFO``, NCCL 2.x).
"""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ..hang.endings import without_cut_last
from ..hang.prose import program_lines

_INFO = lazyre.compile(r"([A-Za-z][\w.-]*):\d+:\d+ \[(\d+)\] NCCL (?:INFO|WARN)")
# the lines a framework prints as it sets NCCL up, just before NCCL's own (vLLM: vllm/utils.py "Found nccl from library",
# device_communicators/pynccl.py "vLLM is using nccl==", distributed/parallel_state.py "... backend=nccl"): part of
# the same stop when NCCL's lines follow them
# Open MPI's per-rank output prefix (mpirun --tag-output): "[1,5]<stdout>:"
_MPI = lazyre.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s*")
_SETUP = lazyre.compile(r"Found nccl from library|vLLM is using nccl==|\bbackend=nccl\b")
_ERROR = ("Error", "ERROR", "Traceback", "Killed", "Segmentation fault", "core dumped")
TAIL_LINES = 8   # of the last non-blank lines, most must be NCCL debug lines
# what the last NCCL lines say the ranks were doing (first match in the last lines, most specific first)
_STAGES = (
    # NCCL's p2p transport when two GPUs cannot reach each other directly (transport/p2p.cc: "Could not enable P2P
    # between dev %d(=%lx) and dev %d(=%lx)"): the stop right after it is the peer-to-peer path (devlogs71/7413, 7423)
    ("Could not enable P2P", "the ranks were setting up the peer-to-peer (P2P) links between the GPUs, and NCCL "
                             "reported that it could not enable P2P between them"),
    ("Connection closed", "a peer closed its NCCL proxy connection (the service thread reports it): a rank left "
                          "or stopped answering while the others still wait in the collective"),
    ("ncclCommSplit", "the ranks were splitting a new communicator (a new process group: a tensor-parallel "
                      "group, a weight-sync group) and it never completed on every rank"),
    ("Init COMPLETE", "a communicator was built on the ranks shown; the first collective on it never returned"),
    ("Connected all", "the ranks were connecting a communicator's rings and trees"),
    ("Channel", "the ranks were connecting a communicator's channels (P2P, NET/IB or socket transports)"),
    ("Init START", "the ranks were initialising a communicator (NCCL's init.cc prints Init START, then its channels, "
                   "rings and trees, then Init COMPLETE)"),
    ("Bootstrap", "the ranks were bootstrapping NCCL (choosing the network interface); no communicator was formed"),
)


# NCCL's WARN for a CUDA call of its own that failed (src/include/checks.h CUDACHECK: "Cuda failure '%s'", the CUDA
# runtime's error string): an error, not debug output; what the string says, matched by its start (a paste may cut it)
_CUDA_WARN = lazyre.compile(r"NCCL WARN Cuda failure (?:\d+ )?'(?P<err>[^']*)'?")
# a WARN line's head: "host:pid:tid [dev] init.cc:263 NCCL WARN ..." (the source file and line between them)
_RANK_HEAD = lazyre.compile(r"([A-Za-z][\w.-]*):\d+:\d+ \[(\d+)\]")
_CUDA_ERRORS = (
    ("initialization error", "the CUDA context could not be created on that GPU (a GPU in a bad state, a driver "
                             "fault, or the device taken by another process in exclusive mode): check `nvidia-smi` and "
                             "`dmesg` for Xid errors on that device, and run a one-GPU job on it alone"),
    ("out of memory", "that GPU had no memory left for NCCL's buffers: another process holds it, or the job's own "
                      "allocations came first"),
    ("invalid device ordinal", "the rank's device index is not one the process sees (CUDA_VISIBLE_DEVICES against "
                               "the ranks per node)"),
    ("invalid argument", "the GPU or driver lacks a feature NCCL asked for (peer-to-peer or IPC between the GPUs, "
                         "NVLS): NCCL_P2P_DISABLE=1 or NCCL_NVLS_ENABLE=0 tests it"),
)


class NcclDebugTail(Rule):
    kinds = frozenset()

    def finish(self, ctx: RunState) -> list[Finding]:
        if ctx.ended or ctx.exceptions or ctx.open_tracebacks or ctx.preflight:
            return []
        if any(f.severity >= Severity.warning for f in ctx.findings):
            return []  # another rule explains the log (an NCCL timeout, a crash, a hang with its phase)
        for tail in ctx.tails.values():
            lines = without_cut_last([l for l in program_lines(list(tail)) if l.text.strip()])[-TAIL_LINES:]
            if len(lines) < 3:
                continue
            nccl = [l for l in lines if "NCCL " in l.text and _INFO.search(l.text)]
            setup = [l for l in lines if _SETUP.search(l.text)]
            if not nccl or (len(nccl) + len(setup)) * 4 < len(lines) * 3 or "NCCL" not in lines[-1].text:
                continue
            if any(w in l.text for l in lines for w in _ERROR):
                continue
            return [self._finding(ctx, lines, nccl)]
        return []

    def _cuda_failure(self, lines: list) -> Finding | None:
        """NCCL's WARN of a failed CUDA call among the last lines: the error the log ends in."""
        warn = next((l for l in reversed(lines) if "Cuda failure" in l.text and _CUDA_WARN.search(l.text)), None)
        if warn is None:
            return None
        err = _CUDA_WARN.search(warn.text).group("err")
        means = next((what for full, what in _CUDA_ERRORS if len(err) >= 6 and full.startswith(err[:len(full)])), None)
        dev = _RANK_HEAD.match(_MPI.sub("", warn.text.strip()))
        on = f" on device {dev.group(2)} of {dev.group(1)}" if dev else ""
        msg = (f"The log ends in an NCCL error, not in debug output: NCCL's call to CUDA failed{on} "
               f"(`Cuda failure '{err}'`)" + (f": {means}." if means else ".") + " The other ranks then wait for that "
               "one in NCCL's set-up.")
        fix = ["Fix that GPU first: its CUDA error is the cause; the other ranks' waits follow from it.",
               "Rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 on fewer GPUs, adding them back one at a time, to "
               "find the device that fails."]
        return self.make(message=msg, fix=fix, evidence=[Evidence(warn.where.path, warn.where.line, warn.raw)],
                         seq=warn.seq, title="NCCL error: a CUDA call of NCCL's own failed", severity=Severity.error,
                         verify="every rank's NCCL set-up completes (`Init COMPLETE` on every device) with no "
                                "`NCCL WARN Cuda failure` line")

    def _finding(self, ctx: RunState, lines: list, nccl: list) -> Finding:
        failed = self._cuda_failure(lines)
        if failed is not None:
            return failed
        text = " ".join(l.text for l in lines)
        stage = next((what for key, what in _STAGES if key in text), "the ranks were inside NCCL")
        # host names only from lines that start with the prefix (pasted ranks' lines can be glued together)
        hosts = sorted({m.group(1) for l in nccl if (m := _INFO.match(_MPI.sub("", l.text.strip())))})
        devs = sorted({int(m.group(2)) for l in nccl for m in _INFO.finditer(l.text)})
        when = (f"after {ctx.metrics_steps} logged training step(s)" if ctx.metrics_steps
                else "with no training step in the excerpt")
        fw = ctx.framework()[0]
        if fw is None and _SETUP.search(text) and "vLLM" in text:
            fw = "vllm"   # vLLM's own NCCL setup lines and no trainer told: vLLM alone
        mpi = any(_MPI.match(l.text.strip()) for l in lines)   # Open MPI's rank prefix: mpirun/Horovod, not torchrun
        where = (f" Last lines come from {len(hosts)} host(s) ({', '.join(hosts[:4])}) and device(s) "
                 f"{', '.join(map(str, devs[:16]))}: a rank or host missing from them is the one to look at."
                 if hosts else "")
        msg = (f"The log ends in NCCL debug output (NCCL_DEBUG=INFO) with no error after it, {when}: {stage}. NCCL "
               f"prints nothing while a collective waits, so the processes are stuck in (or died silently inside) "
               f"NCCL.{where}" + ("" if fw == "vllm" or mpi else
                                  " With a finite timeout the same stall ends as an NCCL watchdog timeout naming the "
                                  "collective."))
        last = lines[-1]
        doing = ("(vLLM's tensor-parallel workers building or using their communicator)" if fw == "vllm" else
                 "(a generation, a reward call, a save)")
        fix = [f"Take `py-spy dump --pid <pid>` of every rank on every node while it hangs: the rank that is not in "
               f"the same collective as the others {doing} is the cause."]
        # a trainer's process-group timeout exists only for a torch.distributed training run: not for vLLM alone (its
        # workers stop at engine start) nor for an Open MPI / Horovod job
        if fw == "ms-swift":
            fix.append("Give the collectives a finite timeout so the hang is reported with its collective: "
                       "--ddp_timeout 1800 and TORCH_NCCL_ASYNC_ERROR_HANDLING=1.")
        elif fw not in ("vllm", None) and not mpi:
            fix.append("Give the collectives a finite timeout so the hang is reported with its collective: "
                       "`ddp_timeout=1800` in the training arguments and TORCH_NCCL_ASYNC_ERROR_HANDLING=1.")
        elif fw is None and not mpi:
            fix.append("If the job runs on torch.distributed, give its process group a finite timeout (the "
                       "`timeout` of init_process_group, or the trainer's ddp_timeout) with "
                       "TORCH_NCCL_ASYNC_ERROR_HANDLING=1, so the hang is reported with its collective.")
        if len(hosts) > 1 or "NET/IB" in text or "NET/Socket" in text:
            fix.append("Across nodes, pin the NCCL network to one interface on every node (NCCL_SOCKET_IFNAME, "
                       "NCCL_IB_HCA) and rerun a plain all_reduce test (nccl-tests) on the same nodes.")
        if _SETUP.search(text) and "vLLM" in text:
            fix.insert(0, "vLLM's tensor-parallel workers stopped while building their NCCL communicator: test the GPUs' "
                          "peer-to-peer path (NCCL_P2P_DISABLE=1 in the environment, vLLM --disable-custom-all-reduce), "
                          "check `nvidia-smi topo -m` and the IOMMU/ACS settings, and run a two-GPU all_reduce outside "
                          "vLLM.")
        if "Could not enable P2P" in text and not (_SETUP.search(text) and "vLLM" in text):
            fix.insert(0, "Test the GPUs' peer-to-peer path: rerun with NCCL_P2P_DISABLE=1 in the environment (NCCL then "
                          "goes through host memory; a run that starts names the cause), and check `nvidia-smi topo -m` "
                          "and the IOMMU/ACS settings (`lspci -vvv | grep ACSCtl`: ACS on between the GPUs breaks P2P; "
                          "many consumer GPUs have P2P disabled).")
        if "NVLS" in text:
            fix.append("NVLS (NVLink SHARP) was in use: NCCL_NVLS_ENABLE=0 rules it out.")
        return self.make(message=msg, fix=fix, evidence=[Evidence(last.where.path, last.where.line, last.raw)],
                         seq=last.seq, severity=Severity.warning)
