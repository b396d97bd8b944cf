"""The analyser side of `watch` (its own thread): feeds the engine Session with the output the reader hands over,
follows the run folder (logging.jsonl, args.json, checkpoints) and samples GPUs and host memory. Nothing here
touches the pass-through or the console log (doctor/live/tee.py).
"""
from __future__ import annotations

import os
import queue
import time
from collections import deque

from ..checks.hang._progress import PROGRESS_BAR
from ..model import InputInfo, Severity
from ..signals import DiskTick, GpuTick, HostTick, Metrics, Where
from ..sources.logtext import LineSplitter, clean, decode
from . import integrations
from .rundir import read_args_json
from .say import say

ERRORS_MAX = 100
# a run prints as it goes, often a line a write: the analyser, woken by the first chunk, waits this long and takes the
# chunks that came meanwhile with it, one wake-up for them instead of one per chunk (each cost both threads a hand-over
# of the GIL, ~0.3 ms of CPU a line under watch for a run printing line by line); their order and bytes are the same
BATCH_S = 0.02


class Analysis:
    """Mixin of Watch (doctor/live/supervisor.py): the analyser thread."""

    analysis_error: str | None = None
    analysis_errors = 0
    analysis_off = False
    skipped_bytes = 0
    skip_notes = 0
    end_skipped = 0

    def _analyser(self, streams: list) -> None:
        """Analyser thread: owns the Session. Feeds the engine the chunks the reader hands over (it tees them itself),
        and every poll runs the run-folder scan, samples, the hang watchdog, the live evaluation and the report
        refresh. An error here is said once and never reaches the pass-through or the console log."""
        next_tick = self.clock()
        next_eval = self.clock() + self.o.eval_interval
        next_report = self.clock() + min(self.o.report_interval, 5.0)
        next_gpu = self.clock()
        next_scan = self.clock()
        feed = self.feed
        batch: deque = deque()
        while True:
            if batch:
                item = batch.popleft()
            else:
                try:
                    item = feed.q.get(timeout=max(0.0, next_tick - self.clock()))
                except queue.Empty:
                    item = ()
                if item:   # more output may follow: take what comes within BATCH_S with it (see BATCH_S)
                    if feed.q.empty():   # caught up (behind, under a flood, it takes what waits at once)
                        time.sleep(BATCH_S)
                    _drain(feed.q, batch)
            if item is None:
                break
            if item and item[0] == "skip":
                self._skipped(*item[1:])
                continue
            if item:
                feed.done(item[0], len(item[1]))
                if feed.drop:
                    n, nl, rest = feed.take(*item)
                    if n:
                        self._skipped(item[0], n, nl, quiet=True)
                        self.end_skipped += n
                        item = (item[0], rest) if rest else ()
            if self.analysis_off:
                continue
            try:
                if item:
                    self._chunk(*item)
                now = self.clock()
                if now < next_tick:
                    continue
                next_tick = now + self.o.poll
                if now >= next_scan:
                    next_scan = now + max(self.o.poll, 2.0)
                    self._scan()
                if self.o.gpu_interval and now >= next_gpu:
                    next_gpu = now + self.o.gpu_interval
                    self._sample(now)
                self._hang_tick(now)
                # one evaluation of the rules serves both when the live check and the report refresh fall due in the
                # same tick (they do at the first one, 5 s in): nothing was fed between them
                found = None
                if now >= next_eval:
                    t = time.perf_counter()
                    found = self._findings(final=False)
                    self._evaluate(final=False, found=found)
                    # evaluating all rules costs more as the run grows: keep it under ~5% of a core
                    next_eval = now + max(self.o.eval_interval, 20 * (time.perf_counter() - t))
                if now >= next_report:
                    next_report = now + self.o.report_interval
                    self._write_report(self._report(final=False, found=found))
            except Exception as e:  # noqa: BLE001 - the run must go on even if the doctor breaks
                self._analysis_failed(e)
        if self.end_skipped:
            say(f"the run's output ended while the live analysis was behind: skipped {self.end_skipped} bytes and "
                f"analysed the last {feed.TAIL >> 20} MiB of each stream, so that the end of the run is not held up"
                + self._console_note())
        for st in streams:
            self._guard(self._close_stream, st)
        self._guard(self._hang_tick, self.clock())  # progress in the last burst of output (never fires: the run ended)

    def _console_note(self) -> str:
        """How complete the console log is, for a message that says what the live analysis missed: "has everything"
        only while no write to it has failed (a full disk)."""
        c = getattr(self, "console", None)
        if c is None or c.failed_at is None:
            return "; the console log has all of it (`grpo-doctor analyze` on the run folder reads it)"
        return f"; the console log is incomplete from byte {c.failed_at} on ({c.error})"

    def _guard(self, fn, *args) -> None:
        if self.analysis_off:
            return
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            self._analysis_failed(e)

    def _analysis_failed(self, e: BaseException) -> None:
        """Said once; the analysis goes on with the next input (a bad row costs that row), and stops after
        ERRORS_MAX errors. The console log and the pass-through never depend on it."""
        self.analysis_errors += 1
        if self.analysis_error is None:
            self.analysis_error = f"{type(e).__name__}: {str(e)[:200]}"
            say(f"internal error in the live analysis ({self.analysis_error}); the run continues, its output still "
                f"passes through{self._console_note()}")
        if self.analysis_errors >= ERRORS_MAX:
            self.analysis_off = True
            say(f"the live analysis stopped after {self.analysis_errors} internal errors; the output still passes "
                f"through{self._console_note()}")

    def _skipped(self, st, nbytes: int, newlines: int, quiet: bool = False) -> None:
        """The reader skipped ``nbytes`` of this stream because the analysis was behind: say so, keep line numbers."""
        self.skipped_bytes += nbytes
        first = self.file_lines + 1
        self.file_lines += newlines
        st.splitter = LineSplitter()
        st.resync = True
        if nbytes <= 0 or quiet:
            return
        self.skip_notes += 1
        if self.skip_notes == 1:  # said once: under a flood it happens again and again; the end says the total
            say(f"the live analysis fell behind the output (more than {self.feed.limit >> 20} MiB or {self.feed.lag:g} s): "
                f"skipping parts of it from console log line about {first} on to keep up (the total is said at the "
                f"end); the pass-through is complete{self._console_note()}")

    # ------------------------------------------------------------------ output
    def _chunk(self, st, data: bytes) -> None:
        if st.resync:  # the line cut by a skip: drop its rest
            nl = data.find(b"\n")
            if nl < 0:
                return
            st.resync = False
            data = data[nl + 1:]
        lines = st.splitter.feed(data)
        if lines:
            base = self.file_lines
            self.file_lines += len(lines)
            for i, (_ln, raw) in enumerate(lines):
                for line in self.reader.line(base + i + 1, raw):
                    self.session.feed_line(line)
            self.dog.output()
            st.bar = None
        if b"\r" in data:
            self._partial_progress(st)
        elif not lines:
            self.dog.output()

    def _partial_progress(self, st) -> None:
        """tqdm redraws (\\r, no newline until the bar closes): a new Train/rollout bar count is progress."""
        part = st.splitter.partial()
        cut = part.rfind(b"\r")
        if cut <= 0:
            return
        prev = part.rfind(b"\r", 0, cut)
        seg = clean(decode(part[prev + 1:cut]))
        # the pattern needs "%|" (as the hang rule's own test before it): a segment without it, such as the spaces tqdm
        # clears a bar with, is not matched at all (52 spaces cost the pattern's backtracking ~30 ms each)
        m = PROGRESS_BAR.match(seg) if "%|" in seg else None
        if not m:
            self.dog.output()
            return
        desc = m.group("desc").strip().rstrip(":").strip()
        k = int(m.group("k"))
        if st.bar == (desc, k):
            return
        st.bar = (desc, k)
        if desc == "Train":
            self.dog.step(k) if k > 0 else self.dog.output()
        elif desc.startswith(("Processed prompts", "Adding requests")):
            self.dog.progress(f"rollout ({desc} {k})")
        else:
            self.dog.output()

    def _close_stream(self, st) -> None:
        if st.resync:
            return
        for _ln, raw in st.splitter.close():
            self.file_lines += 1
            for line in self.reader.line(self.file_lines, raw):
                self.session.feed_line(line)

    # ------------------------------------------------------------------ run directory
    def _scan(self) -> None:
        new_jsonl, new_args, new_ckpts = self.rundir.scan()
        for path, why in self.rundir.skipped.items():
            if path not in self.skipped_said:
                self.skipped_said.add(path)
                say(f"{path}: skipped ({why})")
                self.inputs.append(InputInfo(path, "skipped", why))
        if new_args:
            obj = read_args_json(new_args, self.run_dir, self.rundir.skipped)
            if obj:
                self.session.run.add_args_json(obj)
                self.session.changed()
                self.inputs.append(InputInfo(new_args, "args"))
        if new_jsonl:
            # logging.jsonl and the printed dicts carry the same rows: from now on take the file (as analyze does),
            # skipping the rows already seen on the console
            self.session.state.console_metrics = False
            self.session.changed()
            self.skip_jsonl_steps = self.session.state.metrics_steps
            self.inputs.append(InputInfo(new_jsonl, "metrics"))
        if self.rundir.jsonl is not None:
            for lineno, values in self.rundir.jsonl.read():
                from ..sources import metrics as metrics_src
                if metrics_src.is_step(values) and self.skip_jsonl_steps > 0:
                    self.skip_jsonl_steps -= 1
                    continue
                self.reader.counter[0] += 1
                self.session.emit(Metrics(values, Where(self.rundir.jsonl.path, lineno), self.reader.counter[0],
                                                  "jsonl"))
                if metrics_src.is_step(values):
                    self.dog.progress("logging.jsonl row")
        for c in new_ckpts:
            self.dog.progress(f"checkpoint {os.path.basename(c.path)}")
            self._ckpt_seq = self.reader.counter[0]
        for c in self.rundir.settle():
            self._check_ckpt(c)
        if self.rundir.grew is not None:
            self.dog.progress(f"checkpoint {os.path.basename(self.rundir.grew.path)} growing")
        need = self.rundir.last_checkpoint_size()
        if need:
            from ..sources.safeio import free_bytes  # shutil.disk_usage's reading, without shutil's imports
            try:
                free = free_bytes(self.run_dir)
            except OSError:
                return
            self.session.emit(DiskTick(self.clock() - self.t0, self.run_dir, free,
                                                                    int(need * 1.05), "size of the last checkpoint"))

    def _check_ckpt(self, c, ended_by: tuple[str, float] | None = None) -> None:
        """The checkpoint rules on one settled checkpoint folder; ``ended_by``: (signal name, seconds) when the
        command was killed by a signal watch did not send before the folder was complete (at the end of the run)."""
        self.checkpoints_seen.append((c.path, c.step))
        found = integrations.check_checkpoint([c.path], run=self.session.run,
                                              facts={"ended_by_signal": ended_by} if ended_by else None)
        if not found:
            return
        self.extra.extend(found)
        for f in found:
            if f.severity >= Severity.warning:
                say(f"{os.path.basename(c.path)}: {f.severity.name} {f.rule_id} {f.title}: {f.message}")

    # ------------------------------------------------------------------ samples
    def _sample(self, now: float) -> None:
        import psutil  # here: without GPU samples (--gpu-interval 0) watch never needs it
        gpus = integrations.gpu_samples()
        self.last_gpus = gpus
        alive = self.proc.poll() is None
        try:   # the run's own processes first: a GPU process that is none of them belongs to another job
            self.pids.update(c.pid for c in psutil.Process(self.proc.pid).children(recursive=True))
        except (psutil.Error, OSError):
            pass
        if gpus:
            self.session.emit(GpuTick(now - self.t0, tuple(gpus), alive, frozenset(self.pids)))
        try:
            vm = psutil.virtual_memory()
            sw = psutil.swap_memory()
            self.session.emit(HostTick(now - self.t0, vm.available, vm.total, sw.free))
        except (psutil.Error, OSError):
            pass


def _drain(q: queue.SimpleQueue, into: deque) -> None:
    """Everything queued now, in order."""
    while True:
        try:
            into.append(q.get_nowait())
        except queue.Empty:
            return
