"""GD998's run context: where in the run a native crash came and what of the run survives it (a fixer: pure)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...registry import find_rule
from ...rules import Diagnosis, Hit
from ..hang._progress import VLLM_ORIGINS
from .crash_lines import crash_symbol, faulthandler_dump, in_nccl, nccl_owner

# torch's NCCL watchdog ends a process whose collective timed out or whose NCCL call failed by throwing from its own
# thread (`terminate called after throwing an instance of 'c10::DistBackendError'`, what(): "... watchdog thread
# terminated with exception: ... Watchdog caught collective operation timeout"): that abort is the NCCL failure's
# teardown, which GD301/GD304 report. Only their words count: the same watchdog also carries a CUDA error (an illegal
# memory access), and then the native crash is the failure itself
_WATCHDOG = lazyre.compile(r"Watchdog caught collective operation timeout|NCCL error|NCCL communicator was aborted")


# the watchdog thread's own abort told only by its C++ side: what it threw (DistBackendError, the NCCL backend's error)
# or where ("Exception raised from ncclCommWatchdog / watchdogHandler at ...ProcessGroupNCCL.cpp"): ProcessGroupNCCL's
# ncclCommWatchdog rethrows whatever stopped it as "Process group watchdog thread terminated with exception", a
# collective's timeout or an NCCL error most often, a CUDA error it met otherwise (then its words are in the line)
_WATCHDOG_CPP = lazyre.compile(r"instance of 'c10::DistBackendError'|Exception raised from (?:ncclCommWatchdog|"
                               r"watchdogHandler|checkTimeout) at \S*ProcessGroupNCCL\.cpp|ProcessGroupNCCL::"
                               r"(?:ncclCommWatchdog|watchdogHandler)\(")
_CUDA_ERROR = lazyre.compile(r"CUDA error|illegal memory access|device-side assert|CUBLAS_STATUS|cudaError")


def _watchdog_abort(hit: Hit, ctx: RunState) -> bool:
    """The native abort at ``hit`` comes from torch's NCCL watchdog thread, by its C++ lines alone (no CUDA error
    beside them)."""
    tail = ctx.tails.get(hit.evidence.path) or ()
    near = [t.text for t in tail if hit.seq - 12 <= t.seq <= hit.seq + 12]
    return any(_WATCHDOG_CPP.search(t) for t in near) and not any(_CUDA_ERROR.search(t) for t in near)


def _watchdog_teardown(hit: Hit, ctx: RunState) -> bool:
    """The native abort at ``hit`` is torch's NCCL watchdog taking the process down (its lines just around it)."""
    tail = ctx.tails.get(hit.evidence.path) or ()
    near = [t.text for t in tail if hit.seq - 6 <= t.seq <= hit.seq + 3]
    return any(_WATCHDOG.search(t) for t in near)


# a vLLM process's own marks: its logger's "[file.py:N]" tag (0.5-0.7 without the bracket), the input dump it writes
# when model execution fails (worker/model_runner_base.py), its package's frames
# (V1's engine core dumps the batch it failed on, vllm/logging_utils/dump_input.py: "Dumping scheduler output for model
# execution: SchedulerOutput(scheduled_new_reqs=..., scheduled_cached_reqs=CachedRequestData(...,
# resumed_from_preemption=..., num_computed_tokens=...)", vllm/v1/core/sched/output.py: a paste may keep only its cut body)
_VLLM_TEXT = lazyre.compile(r"/vllm/|Writing input of failed execution|\b(?:model_runner(?:_base)?|gpu_model_runner|llm_engine|"
                        r"core|multiproc_executor|worker_base|gpu_worker|async_llm_engine|engine)\.py:\d+\]|"
                        r"Dumping scheduler output for model execution|\bSchedulerOutput\(|"
                        r"\b(?:scheduled_cached_reqs|resumed_from_preemption|num_scheduled_tokens)=")


# a vLLM engine's death as its API server or client reports it, wherever in the paste: V0's MQLLMEngine client
# (engine/multiprocessing/client.py "Engine process (pid N) died.", entrypoints/launcher.py "MQLLMEngine is already
# dead"), V1's engine core (v1/engine/utils.py wait_for_engine_startup, core_client.py; v1/engine/exceptions.py
# EngineDeadError, "EngineCore encountered an issue. See stack trace (above) for the root cause.", which a user's
# words shorten to EngineDead)
_ENGINE_DEATH = lazyre.compile(r"Engine process \(pid \d+\) died|MQLLMEngine is already dead|"
                               r"Engine core initialization failed|EngineCore\w* (?:encountered a fatal error|died)|"
                               r"\bEngineDead(?:Error)?\b|EngineCore encountered an issue")


def dumped_frames(hit: Hit, ctx: RunState) -> list[tuple[str, str]]:
    """(path, function) of the faulthandler stack CPython prints after a fatal signal ('Fatal Python error:
    Segmentation fault', then 'Stack (most recent call first):' and its File lines), innermost first: the frames the
    traceback reader kept (sources/traceback.py FAULT_FRAME) in the 60 lines after the crash line, in its log."""
    return [(f.path, f.func) for line, f in ctx.dumped_frames
            if line.where.path == hit.evidence.path and hit.seq <= line.seq <= hit.seq + 60]


# a call into a vLLM engine object as trainers name it (trl: self.llm.generate / self.llm.chat; verl, OpenRLHF:
# inference_engine.generate, llm.generate)
_ENGINE_CALL = lazyre.compile(r"\b(?:llm|inference_engine|vllm_engine|engine)\.(?:generate|chat|encode)\(")


def in_vllm(hit: Hit, ctx: RunState, dumped: list[tuple[str, str]] | None = None) -> bool:
    """The crash line belongs to a vLLM engine: printed by one of its processes (their prefixes, its logger), or beside
    its lines and frames (the few lines around it, an exception with vLLM frames at the same place, the stack
    faulthandler dumped after it: ``dumped``, dumped_frames when the caller read them)."""
    if hit.line is not None and hit.line.origin in VLLM_ORIGINS:
        return True
    tail = ctx.tails.get(hit.evidence.path) or ()
    near = [t for t in tail if hit.seq - 8 <= t.seq <= hit.seq + 3]
    if any(t.origin in VLLM_ORIGINS or _VLLM_TEXT.search(t.raw) for t in near):
        return True
    if any("/vllm/" in path for path, _ in (dumped_frames(hit, ctx) if dumped is None else dumped)):
        return True
    if any(_ENGINE_DEATH.search(t.raw) for t in tail):
        return True  # the engine died in the same paste: the crash is its own
    if any(abs(e.seq - hit.seq) <= 8 and any("/vllm/" in f.path for f in e.frames) for e in ctx.exceptions):
        return True
    framework, _version, _recipe, source = ctx.framework()
    if framework == "vllm" and source != "assumed":
        return True  # the job was vLLM itself (serving or offline inference, no trainer told): the crash is its engine's
    # a stack cut at a call into an in-process vLLM engine (`outputs = self.llm.generate(...)` in trl's GRPO trainer):
    # the crash came from inside that call
    return any(frames and frames[-1].code and _ENGINE_CALL.search(frames[-1].code) for _, frames in ctx.open_tracebacks)


# vLLM capturing its CUDA graphs at engine start (vllm/worker/model_runner.py capture_model; v1 gpu_model_runner.py
# capture_model; torch/cuda/graphs.py CUDAGraph.capture_begin)
_GRAPH_CAPTURE = ("capture_model", "capture_begin", "/cuda/graphs.py")


def native_crash_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if all(_watchdog_teardown(h, ctx) for h in hits):
        return None  # the NCCL rules (GD301, GD304) name the failure; this abort is how torch ends the process
    if _watchdog_abort(hits[0], ctx):
        return Diagnosis(
            message="The process was taken down by torch's NCCL watchdog thread: its C++ lines show it "
                    "(c10::DistBackendError, thrown from ProcessGroupNCCL's ncclCommWatchdog), which ends a process "
                    "when one of its collectives times out or fails (a peer rank that died or stalled, a broken "
                    "network path). The watchdog's own line that says which (`Watchdog caught collective operation "
                    "timeout` with its SeqNum, or `NCCL error`) is not in the excerpt, and no CUDA error is beside it."
                    + _context(ctx),
            fix=("Find the first rank that errored or stopped: search every rank's log for the first Traceback, "
                 "Error or 'Killed' before this abort; the ranks that abort this way are usually waiting for it.",
                 "Paste the lines above `terminate called after throwing` on this rank (the `[PG ... Rank N]` "
                 "watchdog line names the collective and the timeout).",
                 "Rerun with NCCL_DEBUG=INFO (and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 for torch's flight recorder)."),
            category="nccl-timeout", confidence="likely",
            title="NCCL watchdog aborted the process (its cause line not in the excerpt)")
    check = next((h for h in hits if h.groups.get("cuda_check")), None)
    if check is not None:
        return _cuda_check(check, ctx)
    failed = next((h for h in hits if h.groups.get("aexpr")), None)
    if failed is not None and failed is hits[0]:
        return _assertion(failed, ctx)
    what = hits[0].groups.get("what") or "a native crash"
    msg = f"A process died in C/C++/CUDA code ({what}), below Python: no Python exception names its cause."
    dumped = dumped_frames(hits[0], ctx)
    symbol = crash_symbol(hits[0], ctx)
    nccl = in_nccl(symbol)
    lines_fix = _crash_lines_fix(hits[0], ctx, dumped)
    if nccl:
        msg += (f" The crashing instruction is in `{symbol}`, {nccl_owner(symbol or '')}: the crash is in NCCL's "
                f"communication, not in a model kernel.")
    vllm = in_vllm(hits[0], ctx, dumped)
    if vllm and nccl:
        msg += (" It happened in a vLLM engine's worker: its tensor- or pipeline-parallel group's NCCL died, and "
                "errors its callers print after it are consequences.")
        fix = ("Rerun with NCCL_DEBUG=INFO on every node: the transport NCCL picked (NET/IB, NET/Socket) and the "
               "interface are named there; try NCCL_IB_DISABLE=1 or NCCL_SOCKET_IFNAME=<the interface the nodes "
               "share> to tell a broken network path from a bug.",
               "Check that every node has the same NCCL (pip list | grep nccl) and driver; across nodes, vLLM's "
               "documentation advises tensor parallelism within a node and pipeline parallelism across nodes.")
    elif vllm:
        msg += (" It happened in the vLLM engine (its process prefix, logger lines or frames are around the crash "
                "line): the rollout or serving engine died there, and errors its callers print after it are "
                "consequences.")
        if any(w in path or w == func for path, func in dumped for w in _GRAPH_CAPTURE):
            msg += (" The stack dumped after it is in vLLM's CUDA graph capture (capture_model, torch.cuda.graphs): "
                    "the engine died recording its graphs at start, before serving anything; enforce_eager (no "
                    "graphs) avoids that step.")
        fix = ("Run the engine once with enforce_eager (no CUDA graphs) and once with another attention backend "
               "(VLLM_ATTENTION_BACKEND): a crash that goes away names the kernel; report it to vLLM with its version.",
               "Check that vLLM, torch and the CUDA driver are a combination vLLM's release notes list (pip list | grep "
               "-E 'vllm|torch'; nvidia-smi), and rerun with CUDA_LAUNCH_BLOCKING=1 to see the failing kernel.")
    if vllm:   # the engine died: its category, whatever the crash was in
        return Diagnosis(message=msg + _context(ctx), fix=fix + lines_fix, category="vllm-engine-error",
                         title="The vLLM engine crashed in native code")
    if nccl:
        fix = ("Rerun with NCCL_DEBUG=INFO on every rank: the transport NCCL picked (NET/IB, NET/Socket, P2P) is named "
               "there; try NCCL_IB_DISABLE=1, NCCL_P2P_DISABLE=1 or NCCL_SOCKET_IFNAME=<the shared interface> to tell "
               "a broken path from a bug, and check that every node has the same NCCL and driver.",) + lines_fix
        return Diagnosis(message=msg + _context(ctx), fix=fix)
    if lines_fix:
        # the rule's own fixes, but for the faulthandler advice, which the log shows was already followed
        own = find_rule("GD998")
        kept = tuple(f for f in (own.fix if own else ()) if "faulthandler" not in f)
        return Diagnosis(message=msg + _context(ctx), fix=kept + lines_fix)
    return Diagnosis(message=msg + _context(ctx))


# the words a C/C++ assertion often carries after its condition ("... && \"mma -> mma layout conversion is only
# supported on Ampere\""): the check's own explanation
_ASSERT_TEXT = lazyre.compile(r'&&\s*"(?P<text>[^"]{8,})"')


def _assertion(hit: Hit, ctx: RunState) -> Diagnosis:
    """A C/C++ library's assert() that failed: glibc prints the file, line and condition, then aborts."""
    g = hit.groups
    where = f"{g['afile']}:{g['aline']}"
    said = _ASSERT_TEXT.search(g["aexpr"])
    msg = (f"A C/C++ assertion failed at {where} and aborted the process (SIGABRT; no Python traceback)"
           + (f": \"{said.group('text')}\"." if said else f": `{g['aexpr'][:200]}`."))
    fix = ["The file names the library whose check failed (a path under lib/Analysis, lib/Conversion or lib/Dialect is "
           "Triton's compiler, which builds the kernels of vLLM, flash-attention's Triton kernels and torch.compile): "
           "search its issues for the assertion's words, and check that its version supports this GPU "
           "(pre-Ampere GPUs such as V100 and T4 lack features newer kernels assume).",
           "Rerun with the feature that compiled the kernel turned off where the framework allows it (vLLM: "
           "enforce_eager, no prefix caching; torch.compile off) to confirm where it comes from."]
    if in_vllm(hit, ctx):
        return Diagnosis(message=msg + _context(ctx), fix=tuple(fix), category="vllm-engine-error")
    return Diagnosis(message=msg + _context(ctx), fix=tuple(fix))


def _cuda_check(hit: Hit, ctx: RunState) -> Diagnosis:
    """A native library's own report of a failed CUDA call (CUDA_CHECK_RETURN: print, then exit(1))."""
    g = hit.groups
    error, where = g["cuda_check"], f"{g['cfile']}:{g['cline']}"
    msg = (f"A native library's CUDA check failed: the CUDA runtime returned '{error}' at {where}, and the library "
           "printed it and exited with status 1 (C code calling exit(): no Python exception, no traceback).")
    fix = ["Find whose file it is (the path names the package's C/CUDA sources, e.g. bitsandbytes' csrc/ops.cu) and "
           "check that its version supports this GPU, CUDA and torch (its install notes; `python -m bitsandbytes` "
           "prints bitsandbytes' own check)."]
    if "out of memory" in error:
        return Diagnosis(message=msg + _context(ctx), fix=("The GPU ran out of memory inside the library's own CUDA "
                                                           "call: lower the batch or sequence length.", *fix),
                         category="cuda-oom")
    if "configuration" in error:
        fix.insert(0, "'invalid configuration argument' is a kernel launched with a grid or block the GPU refuses: "
                      "most often a tensor dimension of 0 or one larger than the kernel handles (an empty batch, a "
                      "very long sequence), or a build of the library for another GPU.")
    fix.append("Rerun with CUDA_LAUNCH_BLOCKING=1 so that the failing call is the one reported.")
    return Diagnosis(message=msg + _context(ctx), fix=tuple(fix))


def _crash_lines_fix(hit: Hit, ctx: RunState, dumped: list[tuple[str, str]]) -> tuple[str, ...]:
    """What to read or paste next given the dump the log already holds."""
    dump = faulthandler_dump(hit, ctx)
    if dump == "others":
        return ("The log holds faulthandler's dump, but only other threads' stacks (Thread 0x...): the crashing one is "
                "the block headed 'Current thread'; paste the whole dump.",)
    if dump == "header":
        return ("The log shows faulthandler's first line ('Fatal Python error') but not the stacks after it: paste "
                "the lines that follow it, the block headed 'Current thread' or 'Stack' first.",)
    if dump in ("current", "current among others"):
        # alone, the dumped frames are the crashing thread's (faulthandler prints them most recent call first)
        inner = f" (innermost: `{dumped[0][1]}` in {dumped[0][0]})" if dumped and dump == "current" else ""
        return (f"The 'Current thread' block of faulthandler's dump in the log is the Python stack that was running "
                f"when the process crashed{inner}: its innermost frames name the call into native code.",)
    return ()


def _context(ctx: RunState) -> str:
    msg = ""
    steps = ctx.metrics_steps
    if steps:
        msg += f" It came after {steps} logged training step(s) (read from the log's metric rows)."
    elif ctx.run.args or ctx.run.launches:
        msg += (" No training step's metrics were logged before it: start-up (model load, engine start, first step), "
                "or a run that logs its metrics rarely.")
    ckpts = [(p, s) for p, s in ctx.checkpoints if s is not None]
    if ckpts:
        path, step = max(ckpts, key=lambda c: c[1] or 0)
        msg += (f" The last checkpoint on disk is {path} (step {step}): resume from it once the cause is fixed; a "
                f"checkpoint that was being written when the process died is cut (grpo-doctor check-ckpt tells).")
    return msg
