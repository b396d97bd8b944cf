"""What the post-mortem hang rules (GD320, GD321) read from a run: the phase markers of ms-swift's console
log, the last training step, vLLM engine lines, socket and NCCL timeouts, exceptions, py-spy stacks and
their frame classes (also used by ``grpo-doctor watch``)."""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ... import lazyre
from ...engine import columns
from ...engine.columns import Block
from ...rules import OUT_OF_RANGE
from ...signals import ExceptionInfo, LogLine, Metrics
from ...sources.logtext import VLLM_PROCESSES
from ...sources.train_bars import TrainBar
from .._rows import RAISED, step_row, step_rows

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
VLLM_ORIGINS = ("vllm", *VLLM_PROCESSES)  # its logger's prefix ("vllm") and its processes' (sources/logtext.py)
_SWIFT_EVIDENCE = ("[INFO:swift]", "[WARNING:swift]", "run sh:", "args: RLHFArguments(", "***** Running training *****")
# the words _Progress.feed acts on in a line besides the literals that route it there (sources/quiet.py)
LINE_WORDS = tuple(lit for lit, _ in _MARKERS) + _VLLM_WORDS + _SWIFT_EVIDENCE + ('): "', "(idle)", "(active",
                                                                                 "death signal", "got signal:")
# torch elastic's agent stopping its workers on a signal it received (torch/distributed/elastic/agent/server/api.py
# run: logger.warning("Received %s death signal, shutting down workers", e.sigval): "Signals.SIGINT" or "15")
# and the exception its worker processes' handler raises (multiprocessing/api.py _terminate_process_handler: raise
# SignalException(f"Process {os.getpid()} got signal: {sigval}"), "1" or "Signals.SIGHUP" by Python version)
_DEATH_SIGNAL = lazyre.compile(r"Received (?:Signals\.)?(?P<sig>SIG[A-Z]+|\d+) death signal|"
                           r"SignalException: Process \d+ got signal: (?:Signals\.)?(?P<sig2>SIG[A-Z]+|\d+)")


# who sends each signal, in the words a report uses
SIGNAL_SENDERS = {"SIGTERM": "a kill, a job scheduler's time limit or preemption, a container being stopped",
                  "SIGINT": "a Ctrl-C, or a tool that interrupts like one", "SIGHUP": "its terminal or SSH session closed"}


def death_signal(text: str) -> str | None:
    """The signal torch elastic's agent says it received, by name ("SIGTERM" for "15"); None: no such line."""
    m = _DEATH_SIGNAL.search(text) if "death signal" in text or "got signal:" in text else None
    if m is None:
        return None
    sig = m.group("sig") or m.group("sig2")
    if not sig.isdigit():
        return sig
    try:
        return signal.Signals(int(sig)).name
    except ValueError:
        return f"signal {sig}"
PROGRESS_BAR = lazyre.compile(r"^\s*(?P<desc>[^|]*?)\s*:?\s*(?P<pct>\d{1,3})%\|[^|]*\|\s*(?P<k>\d+)/(?P<n>\d+)\s*\[")
_SOCKET = lazyre.compile(r"(?:The client socket has timed out after (?P<t>\d+)(?P<u>ms|s) while trying to connect to "
                     r"\((?P<host>[^,]+), (?P<port>\d+)\)|TCP client failed to connect(?:/validate)? to host "
                     r"(?P<host2>[\w.\-]+):(?P<port2>\d+))")
_SOURCE = attrgetter("source")
_NCCL = ("Watchdog caught collective operation timeout", "NCCL communicator was aborted")
# py-spy dump
# py-spy prints the thread name only when it can read it: `Thread 123 (idle): "MainThread"` or `Thread 123 (idle)`
# (py-spy src/dump.rs; the status is "idle", "active" or "active+gil")
PYSPY_THREAD = lazyre.compile(r'^\s*Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>idle|active|active\+gil|gil)\)'
                          r'(?::\s*"(?P<name>[^"]*)")?\s*$')
PYSPY_FRAME = lazyre.compile(r"^\s+(?P<func>\S[^()]*?) \((?P<file>[^()]*?\.py):(?P<line>\d+)\)\s*$")
_PYSPY_PROCESS = lazyre.compile(r"^Process \d+: ")

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
    "checkpoint-save": ("a checkpoint save (ms-swift 4.6 prints `Saving model checkpoint to` once the save's files "
                        "are written, transformers before writing them, and nothing marks the next step's start, "
                        "so the run is stuck either in that save or in the next step's generation and reward "
                        "functions)"),
    "eval": "evaluation",
    "dataset-map": "dataset preprocessing (datasets map)",
}

# py-spy frame classes, most specific first: (name, substrings of "file func")
FRAME_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weight-sync", ("update_named_param", "_move_model_to_vllm", "update_flattened_params", "sync_weights",
                     "vllm_client.py", "load_weights")),
    ("collective", ("distributed_c10d.py", "deepspeed/comm", "all_reduce", "all_gather", "broadcast", "barrier",
                    "reduce_scatter", "ProcessGroup", "gather_object")),
    ("vllm-generate", ("vllm/", "generate (", "_run_engine", "execute_model")),
    ("reward", ("reward", "orm.py", "/rewards/", "plugin/orm")),
    ("checkpoint", ("save_pretrained", "_save_checkpoint", "save_model", "safetensors", "torch/serialization.py")),
    ("dataloader", ("torch/utils/data", "_next_data", "dataloader.py")),
    ("queue-wait", ("queue.py", "queues.py", "threading.py", "concurrent/futures", "selectors.py", "socket.py")),
    # CPython's import machinery (frozen importlib._bootstrap frames): a stack that only imports, e.g. a process
    # stopped while it still loads its libraries (slow on a network file system)
    ("import", ("importlib._bootstrap", "importlib/__init__.py import_module")),
)
_CLASS_TEXT = {
    "weight-sync": "syncing weights to vLLM",
    "collective": "waiting in a distributed collective (NCCL all_reduce / broadcast / barrier)",
    "vllm-generate": "inside vLLM generation",
    "reward": "inside a reward function",
    "checkpoint": "saving a checkpoint",
    "dataloader": "waiting for the dataloader",
    "queue-wait": "idle, waiting on a queue or a lock",
    "import": "still importing its Python libraries",
}


@dataclass
class _Thread:
    """One thread of a py-spy dump: its name, state and frames."""
    name: str            # "" when py-spy could not read it
    state: str
    header: LogLine
    frames: list[tuple[str, str, int]] = field(default_factory=list)  # func, file, line (innermost first)
    tid: str = ""

    @property
    def label(self) -> str:
        return repr(self.name) if self.name else self.tid


def classify_frames(frames: list[tuple[str, str, int]]) -> str | None:
    """The frame class of a stack (py-spy lists the innermost frame first)."""
    for name, keys in FRAME_CLASSES:
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
        # the row of the last step: its dict is read only by a finding (a console run's row builds it then: LazyMetrics)
        self.last_row: Metrics | None = None
        self.death: tuple[LogLine, str] | None = None   # torch elastic's agent: the signal it received, its line

    def _mark(self, phase: str, line: LogLine) -> None:
        self.phase_seq[phase] = line.seq
        self.phase_line[phase] = line
        self.last_path = line.where.path

    @property
    def last_metrics(self) -> dict[str, Any]:
        """The values of the last step's row ({} before one)."""
        return {} if self.last_row is None else self.last_row.values

    def feed(self, signal: Any) -> None:
        if isinstance(signal, ExceptionInfo):
            if len(self.exceptions) < 200:
                self.exceptions.append(signal)
            return
        if isinstance(signal, Metrics):
            self._metrics(signal, step_row(signal))
            return
        if type(signal) is TrainBar:   # held among rows (sources/train_bars.py), handed alone
            signal = signal.line()
        self._line(signal)

    def feed_metrics(self, signals: list[Metrics]) -> None:
        """feed() of each of these Metrics (a row out of range costs that row only, as in Session._route)."""
        block = Block.of(signals)
        if block is not None and self._metrics_block(signals, block):
            return
        for m, row in zip(signals, step_rows(signals)):
            if row is not None and row is not RAISED:
                try:
                    self._metrics(m, row)
                except OUT_OF_RANGE:
                    pass

    def _metrics_block(self, signals: list[Metrics], block: Block) -> bool:
        """_metrics of each train-step row of a block, from its step column: the cadence is the running maximum of
        the steps, and what the last row to reach it says. False (nothing read) unless every step row gives its
        step and max_steps as digits (columns.Block.gsteps)."""
        got = block.gsteps()
        if got is None or abs(self.max_step) >= 1 << 62:   # a step read off a row beyond int64: rows
            return False
        ks, ns = got
        if ks.size:
            np = columns.np
            before = np.maximum.accumulate(np.concatenate(([self.max_step], ks)))[:-1]   # the maximum before each row
            reach = (ks >= before).nonzero()[0]
            at = block.steps().nonzero()[0]
            if reach.size:
                self.max_step = int(ks[reach[-1]])
                self.last_row = signals[at[reach[-1]]]
                given = ns[reach].nonzero()[0]   # total_steps = n or total_steps: the last reaching row with an n
                if given.size:
                    self.total_steps = int(ns[reach[given[-1]]])
            # logging.jsonl's order says nothing (its blocks hold no console row: the test over all of them in C)
            seqs = [signals[i].seq for i in at if signals[i].source == "console"] \
                if "console" in map(_SOURCE, signals) else None
            if seqs:
                self.metrics_seq = max(self.metrics_seq, max(seqs))
        return True

    def feed_between(self, signals: list[Metrics], block: Block, lines: list[tuple[int, LogLine]],
                     kept: set[int] | None) -> bool:
        """feed() of the lines and of the rows of a block in file order, each ``(i, line)`` before row i (the bars among
        console rows): the step rows read off the block's step column, as _metrics_block does. ``kept``: the ids of
        the rows counted (None: all); the others are summaries, never step rows. False (nothing read) unless every
        step row gives its step and max_steps as digits."""
        got = block.gsteps()
        if got is None:
            return False
        at = block.steps().nonzero()[0].tolist()
        ks, ns = got[0].tolist(), got[1].tolist()
        j, last = 0, len(at)
        phase_seq, phase_line = self.phase_seq, self.phase_line
        for i, line in lines:
            while j < last and at[j] < i:
                self._step(signals[at[j]], ks[j], ns[j])
                j += 1
            if type(line) is TrainBar:   # _train_bar, inline (one such bar between two rows of a dense log)
                k = line.k
                if k >= self.max_step:
                    self.max_step = k
                    self.total_steps = line.total()
                    self.step_line = line  # type: ignore[assignment]
                self.step_seq = seq = line.seq
                phase = "training" if k else "first-step"
                phase_seq[phase] = seq
                phase_line[phase] = line  # type: ignore[assignment]
                self.last_path = line.path
            else:
                self._line(line)
        while j < last:
            self._step(signals[at[j]], ks[j], ns[j])
            j += 1
        self._settle()
        return True

    def _train_bar(self, b: TrainBar) -> None:
        """_line of a pure Train bar (sources/train_bars.py: nothing else in it is read), keeping the bar itself where
        _bar keeps its line: ``_settle`` builds the lines of those still kept."""
        k = b.k
        if k >= self.max_step:
            self.max_step = k
            self.total_steps = b.total()
            self.step_line = b  # type: ignore[assignment]
        self.step_seq = b.seq
        phase = "training" if k else "first-step"
        self.phase_seq[phase] = b.seq
        self.phase_line[phase] = b  # type: ignore[assignment]
        self.last_path = b.path

    def train_bar(self, b: TrainBar) -> None:
        """_line of a pure Train bar fed alone: _train_bar, and the lines it keeps built at once."""
        self._train_bar(b)
        self._settle()

    def _settle(self) -> None:
        """The lines of the Train bars kept by _train_bar, built."""
        if type(self.step_line) is TrainBar:
            self.step_line = self.step_line.line()
        for phase in ("first-step", "training"):
            b = self.phase_line.get(phase)
            if type(b) is TrainBar:
                self.phase_line[phase] = b.line()

    def _step(self, m: Metrics, k: int, n: int) -> None:
        """_metrics of a train-step row whose step and max_steps are known."""
        if k >= self.max_step:
            self.max_step = k
            self.total_steps = n or self.total_steps
            self.last_row = m
        if m.source == "console":
            seq = m.seq
            if seq > self.metrics_seq:
                self.metrics_seq = seq

    def _metrics(self, m: Metrics, row: Any) -> None:
        if row is not None:
            k, n = row.gstep, row.max_steps
            if k is None:
                step = m.values.get("step")
                k = int(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else self.max_step + 1
            if k >= self.max_step:
                self.max_step = k
                self.total_steps = n or self.total_steps
                self.last_row = m
            if m.source == "console":  # logging.jsonl is read after the logs: its order says nothing
                self.metrics_seq = max(self.metrics_seq, m.seq)

    def _line(self, line: LogLine) -> None:
        text = line.text
        # py-spy dump: thread headers and their frames
        if "Thread " in text:
            t = PYSPY_THREAD.match(text)
            if t:
                self._thread = _Thread(t.group("name") or "", t.group("state"), line, tid=t.group("tid"))
                if len(self.threads) < 500:
                    self.threads.append(self._thread)
                return
        if self._thread is not None and ".py:" in text:
            f = PYSPY_FRAME.match(text)
            if f:
                if len(self._thread.frames) < 80:
                    self._thread.frames.append((f.group("func"), f.group("file"), int(f.group("line"))))
                return
            self._thread = None
        if "death signal" in text:
            sig = death_signal(text)
            if sig:
                self.death = (line, sig)
        if self.swift_evidence is None and any(e in text for e in _SWIFT_EVIDENCE):
            self.swift_evidence = line
        if "%|" in text:
            b = PROGRESS_BAR.match(text)
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
            if (line.origin in VLLM_ORIGINS or any(w in text for w in _VLLM_WORDS)) and \
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
            if desc == "" and self.swift_evidence is None and not {"first-step", "model-load"} & set(self.phase_seq):
                # a bare tqdm bar outside a trainer log is anyone's progress; after the weights loaded it is the
                # trainer's own: transformers' ProgressCallback.on_train_begin draws tqdm(total=max_steps) with no
                # description (transformers 5.19 trainer_callback.py), the bar of every trl run
                return
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
