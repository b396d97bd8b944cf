"""How a log ends, read from its last lines alone (pure: the text of the lines in, an ``Ending`` out).

A log that stops without an exception still says where it stopped: a progress bar short of its total, a client
printing the same wait line until it was killed, a faulthandler dump, a phase marker as the last line, NCCL debug
lines and nothing after. Each shape is produced by library code whose wording is cited beside its pattern, so a
log nobody has seen is read by what printed it, not by a user's words.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ... import lazyre
from ...signals import LogLine
from ...sources.traceback import FAULT_FRAME
from .._units import duration

if TYPE_CHECKING:   # datetime only where a hang's span is read (~8 M instructions to import at every watch start)
    from datetime import datetime

# a traceback's header, also cut before its first frame ("[rank0]: Traceback (most recent call las")
TB_HEAD = "Traceback (most rec"
# tqdm's format_meter: "{desc}: {pct}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}]" (tqdm/std.py)
BAR = lazyre.compile(r"(?:^|\s|\r)(?P<desc>[^|\r]*?)\s*:?\s*(?P<pct>\d{1,3})%\|[^|]*\|\s*(?P<k>\d+)/(?P<n>\d+)\s*"
                 r"(?:\[(?P<elapsed>[\d:]+)?(?:<(?P<remaining>[\d:?]+))?(?:,\s*(?P<rate>[\d.]+\s*(?:s/it|it/s)))?|$)")


def _has_bar(text: str) -> bool:
    # BAR's lazy description tries every blank of a line that has no bar: quadratic (a 200 KB line of words took
    # minutes at the end of a watched flood); every bar has '%|'
    return "%|" in text and BAR.search(text) is not None


# a training bar's description (transformers' Trainer prints none; ms-swift "Train"; others "Training", "Epoch 1")
_TRAIN_DESC = lazyre.compile(r"^(?:|Train\w*|train\w*|Epoch\b.*|Iteration\w*|Steps?)$")
# CPython faulthandler (Python/traceback.c): "Thread 0x... (most recent call first):", then its frames (FAULT_FRAME)
FAULT_THREAD = lazyre.compile(r"^(?:Current thread|Thread) (?:0x[0-9a-fA-F]+|\d+) \(most recent call first\):")
FATAL = "Fatal Python error"
# "2025-08-11 16:11:59" (logging, ms-swift) or vLLM's "INFO 08-11 16:11:59" (no year: only differences are used)
# or transformers' logging format "11/28/2026 04:47:54"
_TS = lazyre.compile(r"(?P<d>(?:\d{4}-)?\d{2}-\d{2}|\d{2}/\d{2}/\d{4})[ T](?P<t>\d{2}:\d{2}:\d{2})")
_RANK = lazyre.compile(r"^\s*(?:\[rank\s*\d+\]:?\s*|\(\w+(?:\s+pid=\d+)?\)\s*)+")
_VOLATILE = lazyre.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")
# a line a waiting loop prints: trl vllm_client.check_server "Server is not up yet. Retrying in {s} seconds...",
# torch's TCPStore / c10d retries, huggingface_hub / requests retries, and generic "waiting for" loops
_WAIT_WORDS = ("retry", "Retry", "retrying", "Retrying", "not up yet", "waiting", "Waiting", "Connection refused",
               "connect", "Connect", "timed out", "Attempt", "attempt", "Trying", "trying")
# wordings printed only inside a wait loop: trl/extras/vllm_client.py VLLMClient.check_server (0.16-0.2x); vLLM V1's
# API server polling its engine core processes every 10 s until they report ready (vllm/v1/engine/utils.py
# wait_for_engine_startup: logger.debug "Waiting for %d local, %d remote core engine proc(s) to start.")
_LOOP_ONLY = ("Server is not up yet. Retrying in", "core engine proc(s) to start", "core engine proc(s) to connect")
# Ray's scheduler repeating that no node can take an actor's or placement group's resources: the job waits, with no
# error and no timeout, for GPUs or CPUs the cluster does not have (ray/autoscaler/_private/autoscaler.py: "No
# available node types can fulfill resource request", summarised every 30 s; the scheduler's "The following resource
# request cannot be scheduled right now"; the raylet's "There are tasks with infeasible resource requests")
_RAY_WAIT = ("can fulfill resource request", "cannot be scheduled right now", "infeasible resource request")
_ENGINE_WAIT = "core engine proc(s) to"
ENGINE_CORE_PHASE = "vLLM engine start"
_SERVER_WORDS = ("Server is not up", "server", "Server", "/health", "Connection refused", "vllm", "vLLM", "HTTP")
_DOWNLOAD_WORDS = ("Downloading", "download", "Fetching", "huggingface.co", "modelscope")
_STORE_WORDS = ("TCPStore", "store", "MASTER_ADDR", "MASTER_PORT", "rendezvous", "c10d")
# the last line as a phase marker: (words, phase). ms-swift's own markers are read by the hang rules (GD320/GD321);
# these are the trainer-independent ones
_PHASE_LAST: tuple[tuple[tuple[str, ...], str], ...] = (
    (("Saving model checkpoint", "Saving checkpoint", "save_pretrained", "Saving model"), "checkpoint save"),
    (("fall asleep", "Sleep mode freed", "sleep mode", "Sleeping"), "vLLM sleep (freeing the engine's memory)"),
    (("wake up", "wake_up", "Waking up"), "vLLM wake-up (taking the engine's memory back)"),
    (("update_named_param", "sync weights", "Syncing weights", "weight sync", "load_weights", "init_communicator"),
     "weight sync to vLLM"),
    (("Initializing a V1 LLM engine", "Initializing a V0 LLM engine", "Initializing an LLM engine", "init engine",
      "Starting vLLM"),
     "vLLM engine start"),
    (("Loading checkpoint shards", "Loading weights", "Loading safetensors"), "model load"),
    (("Capturing CUDA graph", "CUDA graph"), "vLLM CUDA graph capture"),
    # ray/_private/worker.py init: the driver's Ray is up; its actors and placement groups are created next
    (("Started a local Ray instance", "Connected to Ray cluster", "Connecting to existing Ray cluster"),
     RAY_START_PHASE := "Ray start-up"),
    # verl's driver waiting for a worker group's rank-0 worker to register (verl/single_controller/ray/base.py
    # RayWorkerGroup: "Waiting for register center actor %s to be ready. Elapsed time: %s seconds out of %s seconds.",
    # logged every 30 s until ray_wait_register_center_timeout, then TimeoutError): the workers never came up
    (("Waiting for register center actor",), WORKERS_PHASE := "verl's worker start-up"),
    # PyTorch Lightning, each rank just before torch.distributed.init_process_group (1.x plugins/training_type/ddp.py:
    # "initializing ddp: GLOBAL_RANK: %d, MEMBER: %d/%d"; 2.x fabric/utilities/distributed.py: "Initializing
    # distributed: GLOBAL_RANK: ..."): with nothing after it, the ranks never formed their process group
    (("initializing ddp: GLOBAL_RANK", "Initializing distributed: GLOBAL_RANK"),
     GROUP_PHASE := "process group start-up (init_process_group)"),
    # vLLM's periodic stats line (vllm/engine/metrics.py LoggingStatLogger; v1/metrics/loggers.py) as the last line
    (("Avg prompt throughput:",), GENERATION_PHASE := "vLLM generation"),
)
_START_PHASES = ("vLLM engine start", "model load", "vLLM CUDA graph capture", RAY_START_PHASE, WORKERS_PHASE,
                 GROUP_PHASE)
_NCCL_DEBUG = (" NCCL INFO ", " NCCL WARN ", "NCCL INFO", "NCCL WARN", "gloo")
# what a server prints while nobody works: uvicorn's access log of a monitor's polling (`"GET /metrics HTTP/1.1" 200`,
# /health, /ping, /v1/models) and vLLM's idle stats line (vllm/engine/metrics.py LoggingStatLogger, 0.4-0.6; v1
# loggers.py: "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs")
_HEARTBEAT = lazyre.compile(r'"(?:GET|HEAD) /(?:metrics|health\w*|ping|v1/models|get_model_info)/? HTTP/[\d.]+" 2\d\d|'
                        r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s")
MIN_HEARTBEATS = 2
_BAR_PHASES: tuple[tuple[tuple[str, ...], str, bool], ...] = (  # (desc prefixes, phase, before training)
    (("Loading checkpoint shards", "Loading weights", "Loading safetensors"), "model load", True),
    (("Map", "Filter", "Tokeniz", "Generating", "Running tokenizer", "Preprocess"), "dataset preprocessing", True),
    (("Downloading", "Fetching"), "download", True),
    (("Capturing CUDA graph",), "vLLM CUDA graph capture", True),
    (("Processed prompts", "Adding requests"), "vLLM generation", False),
    (("Val", "Eval", "eval"), "evaluation", False),
)


@dataclass
class Ending:
    """How a log that stops without an error ends: the last thing the run did."""
    kind: str                 # bar | loop | faulthandler | phase | nccl | heartbeat | error
    phase: str                # what the run was doing, in words
    line: LogLine             # the evidence: the last progress line, the loop line, the dump header
    before_training: bool     # the stop comes before the first training step
    numbers: list[str] = field(default_factory=list)  # what was read, in words ("step 37 of 500")
    detail: str = ""


def plain(text: str) -> str:
    """The line without rank / Ray actor prefixes."""
    return _RANK.sub("", text).strip()


def timestamp(text: str) -> datetime | None:
    m = _TS.search(text)
    if m is None:
        return None
    try:
        d = m.group("d")
        if "/" in d:
            d = f"{d[6:]}-{d[:2]}-{d[3:5]}"
        day = d if len(d) > 5 else "2000-" + d  # leap year: 02-29 parses
        from datetime import datetime
        return datetime.fromisoformat(f"{day} {m.group('t')}")
    except ValueError:
        return None


def _span(first: LogLine, last: LogLine) -> str | None:
    # the reader takes a logger's prefix (and its time) off the text: the line as printed keeps it
    a, b = timestamp(first.text) or timestamp(first.raw), timestamp(last.text) or timestamp(last.raw)
    if a is None or b is None or b <= a:
        return None
    return duration((b - a).total_seconds())


def _loop(lines: list[LogLine]) -> Ending | None:
    """The same line (numbers masked) printed again and again up to the end: a wait or retry loop."""
    last = plain(lines[-1].text)
    if not last or _has_bar(lines[-1].text) or last.startswith("{"):
        return None
    key = _VOLATILE.sub("#", last)
    window = lines[-20:]
    same = [ln for ln in window if _VOLATILE.sub("#", plain(ln.text)) == key]
    # a flood of one warning repeats too: only a line that says it waits or retries makes a loop
    # twice is enough for a wording that only a waiting loop prints (trl's check_server); a generic retry needs 3
    ray_wait = any(w in last for w in _RAY_WAIT)
    if len(same) < (2 if ray_wait or any(w in last for w in _LOOP_ONLY) else 3) \
            or not (ray_wait or any(w in last for w in _WAIT_WORDS)):
        return None
    if ray_wait:
        phase = RAY_START_PHASE
    elif _ENGINE_WAIT in last:
        phase = ENGINE_CORE_PHASE
    elif any(w in last for w in _DOWNLOAD_WORDS):
        phase = "a download that keeps retrying"
    elif any(w in last for w in _STORE_WORDS):
        phase = "process-group rendezvous (the TCP store or master port)"
    elif any(w in last for w in _SERVER_WORDS):
        phase = "the trainer waiting for the rollout / vLLM server"
    else:
        phase = "a wait or retry loop"
    numbers = [f"the line repeats {len(same)} times in the last {len(window)} lines"]
    span = _span(same[0], same[-1])
    if span:
        numbers.append(f"for at least {span} by its timestamps")
    detail = "vLLM's API server polling for its engine core process, which never reported ready" \
        if phase == ENGINE_CORE_PHASE else \
        "Ray's scheduler reporting that no node can take the resources an actor or placement group asks for" \
        if ray_wait else ""
    return Ending("loop", phase, lines[-1], True, numbers, detail=detail)


def _bar(lines: list[LogLine], steps: int) -> Ending | None:
    """The last bar among the log's last lines: any bar in the last five; further up only a training bar (what
    follows it there is the run's logging, not a later phase)."""
    for back, ln in enumerate(reversed(lines)):
        m = None
        for m in (BAR.finditer(ln.text) if "%|" in ln.text else ()):
            pass  # a line of redraws: the last one counts
        if m is None:
            continue
        k, n = int(m.group("k")), int(m.group("n"))
        desc = m.group("desc").strip().rstrip(":").strip()
        if back >= 5 and not _TRAIN_DESC.match(desc):
            continue
        if n == 0 or k >= n:
            return None
        phase, before = "training", k == 0 and steps == 0
        for prefixes, name, pre in _BAR_PHASES:
            if desc.startswith(prefixes):
                phase, before = name, pre and steps == 0
                break
        numbers = [f"{k} of {n}" + (" steps" if phase == "training" else "")]
        if m.group("rate"):
            numbers.append(f"{m.group('rate')} before the stop")
        if m.group("elapsed"):
            numbers.append(f"{m.group('elapsed')} elapsed")
        return Ending("bar", phase, ln, before, numbers, detail=desc)
    return None


def _faulthandler(lines: list[LogLine]) -> Ending | None:
    header = next((ln for ln in lines if FAULT_THREAD.match(plain(ln.text))), None)
    if header is None or any(FATAL in ln.text for ln in lines):
        return None  # with its "Fatal Python error" header it is a crash (GD998)
    threads: list[list[tuple[str, str, int]]] = []
    for ln in lines:
        if ln.seq < header.seq:
            continue
        if FAULT_THREAD.match(plain(ln.text)):
            threads.append([])
            continue
        f = FAULT_FRAME.match(_RANK.sub("", ln.text))
        if f and threads:
            threads[-1].append((f.group("func"), f.group("path"), int(f.group("line"))))
    # lazy import: the frame classes are shared with the py-spy reading of the hang rules
    from ._progress import _CLASS_TEXT, classify_frames
    classes = [classify_frames(t) for t in threads]
    # the thread that tells: one not merely idle on a queue or a lock (helper threads are)
    pick = next((i for i, c in enumerate(classes) if c not in (None, "queue-wait")), 0)
    frames = threads[pick] if threads else []
    detail = _CLASS_TEXT.get(classes[pick] or "", "") if threads else ""
    numbers = [f"{len(threads)} thread(s) dumped"]
    if frames:
        numbers.append(f"innermost frame of the telling thread: {frames[0][0]} ({frames[0][1]}:{frames[0][2]})")
    return Ending("faulthandler", "a stack dump", header, False, numbers, detail=detail)


def _phase_last(lines: list[LogLine]) -> Ending | None:
    last = lines[-1]
    for words, phase in _PHASE_LAST:
        if any(w in last.text for w in words):
            return Ending("phase", phase, last, phase in _START_PHASES)
    return None


def _nccl(lines: list[LogLine]) -> Ending | None:
    tail = lines[-3:]
    if len(tail) < 3 or not all(any(w in ln.text for w in _NCCL_DEBUG) for ln in tail):
        return None
    warn = next((ln for ln in reversed(lines) if "NCCL WARN" in ln.text), None)
    return Ending("nccl", "NCCL communicator setup or a collective (NCCL debug lines, then nothing)",
                  warn or lines[-1], False)


# c10's C++ backtrace under a torch error (c10/util/Backtrace.cpp): "frame #9: c10d::ProcessGroupNCCL::
# broadcastUniqueNCCLID(...) + 0xaf (0x7fdf... in .../libtorch_cuda.so)"
_CPP_FRAME = lazyre.compile(r"^frame #\d+: (?P<sym>.+?) \+ 0x[0-9a-f]+ \(0x[0-9a-f]+ in ")
# (symbols, phase) innermost first: ProcessGroupNCCL.cpp broadcastUniqueNCCLID has rank 0 put the NCCL id in the
# store and every other rank wait for it in store->get; the watchdog thread checks each collective's timeout
NCCL_ID_PHASE = "NCCL communicator setup: this rank waits in the TCP store for rank 0's NCCL id"
STORE_PHASE = "the TCP store: this rank waits for a key another rank never set"
_CPP_PHASES = (
    (("broadcastUniqueNCCLID",), NCCL_ID_PHASE),
    (("WorkNCCL::checkTimeout",), "an NCCL collective that timed out (the watchdog)"),
    # the watchdog thread raises for what it finds wrong with a collective: a timeout above, else a CUDA or NCCL error
    (("ncclCommWatchdog", "watchdogHandler"), "the NCCL watchdog thread (a collective failed under it: a CUDA or NCCL "
                                              "error it found)"),
    (("TCPStore::get", "TCPStore::wait", "PrefixStore::get"), STORE_PHASE),
)


def _native(lines: list[LogLine]) -> Ending | None:
    """A log that ends in c10's C++ frames: the torch error above them is not in the excerpt, the frames say where."""
    tail = [plain(ln.text) for ln in lines[-3:]]
    if len(tail) < 2 or not all(_CPP_FRAME.match(t) for t in tail):
        return None
    syms = [m.group("sym") for ln in lines if (m := _CPP_FRAME.match(plain(ln.text)))]
    for words, phase in _CPP_PHASES:
        if any(w in sym for sym in syms for w in words):
            return Ending("native", phase, lines[-1], False, [f"{len(syms)} C++ frame(s) of torch read"],
                          detail=next(sym for sym in syms if any(w in sym for w in words))[:120])
    return None


def without_cut_last(lines: list[LogLine]) -> list[LogLine]:
    """``lines`` without a last line that the paste cut inside its prefix (``host:21`` after lines that begin
    ``host:211:228 [1] NCCL INFO``): a line that is only the start of the lines before it says nothing of its own."""
    if len(lines) < 2:
        return lines
    last = lines[-1].text.strip()
    if last and len(last) < 40 and any(ln.text.strip().startswith(last) and ln.text.strip() != last
                                       for ln in lines[-6:-1]):
        return lines[:-1]
    return lines


def ending_of(lines: list[LogLine], steps: int) -> Ending | None:
    """The shape of a log's end, or None when its last lines show none of the known shapes. ``steps``: the
    training steps the run logged (0: none seen)."""
    lines = without_cut_last([ln for ln in lines if ln.text.strip()])
    if not lines:
        return None
    for read in (_faulthandler, _nccl, _native, _loop):
        e = read(lines)
        if e is not None:
            e.before_training = steps == 0
            return e
    beats = 0
    while beats < len(lines) and _HEARTBEAT.search(lines[-1 - beats].text):
        beats += 1
    if beats >= MIN_HEARTBEATS and beats < len(lines):
        return _after_heartbeats(lines[:-beats], lines[-1], beats, steps)
    e = _bar(lines, steps) or _phase_last(lines)
    if e is not None and e.kind == "phase" and steps > 0:
        e.before_training = False
    return e


def _after_heartbeats(work: list[LogLine], last: LogLine, beats: int, steps: int) -> Ending:
    """A log whose end is only a server's idle polling: the stop is where the work's own last line is."""
    e = _bar(work, steps) or _phase_last(work)
    if e is None:
        e = Ending("heartbeat", "what followed the run's last own line", work[-1], steps == 0, [],
                   detail=plain(work[-1].text)[:160])
    elif e.kind == "phase" and steps > 0:
        e.before_training = False
    e.numbers.append(f"then only {beats} line(s) of a server's idle polling or stats")
    span = _span(work[-1], last)
    if span:
        e.numbers.append(f"for {span} by their timestamps")
    return e


__all__ = ["BAR", "ENGINE_CORE_PHASE", "GENERATION_PHASE", "NCCL_ID_PHASE", "RAY_START_PHASE", "STORE_PHASE", "Ending", "ending_of", "plain", "timestamp"]
