"""`grpo-doctor watch -- COMMAND...`: run the command unchanged, pass its output through, and watch it.

One thread, one select loop: the child's stdout and stderr are read raw (os.read) and written to our fd 1
and fd 2 at once, teed to the console log line by line, split into LogLines exactly as `analyze` reads a
file (doctor.sources.logtext.LineReader.convert) and fed to the same engine Session. Between reads the
loop tails logging.jsonl, notices checkpoint folders, samples GPUs / host memory / disk, runs the hang
watchdog and, every few seconds, evaluates the rules to surface new findings at once.
"""
from __future__ import annotations

import os
import queue
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import psutil

from .. import __version__
from ..checks import _units as units
from ..checks.hang._progress import _BAR
from ..engine import Session, order
from ..model import InputInfo, Report, Severity
from ..registry import load_catalog
from ..signals import DiskTick, GpuTick, HangReport, HostTick, Metrics, Where
from ..sources.logtext import LineReader, LineSplitter, clean, decode
from . import actions, integrations
from .rundir import RunDirWatcher, console_name, node_identity, output_dir_of, read_args_json
from .say import say
from .terminal import Foreground
from .watchdogs import PHASE_OF, PHASE_TEXT, HangWatchdog, Limits

EXIT_STOPPED = 124   # watch stopped the child (--on-hang stop), like timeout(1)
EXIT_NOT_STARTED = 2
READ = 1 << 20
BACKLOG_MAX = 256 << 20   # output waiting for the analyser beyond this makes the reader wait (never in real runs)
SWITCH_INTERVAL = 0.0005  # the pass-through thread gets the GIL back within 0.5 ms of asking (Python default: 5 ms)
# post-mortem rules that read "the log stops here" as a hang: meaningless while the process is alive
_POSTMORTEM_ONLY = {"GD320", "GD321"}


@dataclass
class WatchOptions:
    run_dir: str | None = None
    report: str | None = None
    limits: Limits = field(default_factory=Limits)
    on_hang: str = "warn"              # warn | stop
    grace: float = 30.0
    force: bool = False
    preflight: bool = True
    gpu_interval: float = 10.0         # 0: no GPU sampling
    poll: float = 1.0                  # watchdog resolution (seconds)
    eval_interval: float = 5.0         # rules evaluated this often to surface findings live
    report_interval: float = 30.0      # the JSON report is refreshed this often while running
    command_text: str | None = None    # the run configuration's command (default: the argv itself)
    env: Mapping[str, str] | None = None
    out_fd: int = 1
    err_fd: int = 2


def _write_all(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            import select
            select.select([], [fd], [], 1.0)
            continue
        except (BrokenPipeError, OSError):
            return False
        view = view[n:]
    return True


class _Stream:
    """One of the child's output streams: pass-through, tee (whole lines), split into LogLines."""

    def __init__(self, fd: int, out_fd: int):
        self.fd = fd
        self.out_fd = out_fd
        self.out_ok = True
        self.splitter = LineSplitter()
        self.held = bytearray()   # bytes of an unterminated line not yet teed
        self.bar: tuple[str, int] | None = None
        self.partial_len = 0


class Watch:
    def __init__(self, argv: list[str], opts: WatchOptions | None = None, clock: Callable[[], float] = time.monotonic):
        self.argv = list(argv)
        self.o = opts or WatchOptions()
        self.clock = clock
        self.env = dict(os.environ if self.o.env is None else self.o.env)
        self.node_rank, self.host = node_identity(self.env)
        self.session: Session | None = None
        self.proc: subprocess.Popen | None = None
        self.terminal = Foreground()
        self.stopped = False
        self.kill_at: float | None = None
        self.signals: list[int] = []
        self.printed: dict[str, Severity] = {}
        self.extra: list = []             # findings from the checkpoint rules
        self.hang_reports = 0
        self.status = "starting"
        self.first_error_time: float | None = None

    # ------------------------------------------------------------------ setup
    def _paths(self) -> None:
        run_dir = self.o.run_dir or output_dir_of(self.argv) or "output"
        os.makedirs(run_dir, exist_ok=True)
        self.run_dir = run_dir
        self.console_path = os.path.join(run_dir, console_name(self.node_rank, "console"))
        self.report_path = self.o.report or os.path.join(run_dir, console_name(self.node_rank, "report"))
        for p in (self.console_path, self.report_path):
            if os.path.exists(p):
                os.replace(p, p + ".1")

    def _preflight(self) -> int | None:
        if not self.o.preflight:
            return None
        rep = integrations.preflight(self.argv, self.env)
        if rep is None:
            return None
        errors = [f for f in rep.findings if f.severity >= Severity.error]
        if not errors:
            for f in rep.findings:
                if f.severity >= Severity.warning:
                    say(f"preflight {f.severity.name}: {f.rule_id} {f.title}: {f.message}")
            return None
        from ..render import text
        say(text.render(rep, color=False))
        if self.o.force:
            say(f"preflight found {len(errors)} error(s); launching anyway (--force)")
            return None
        say(f"preflight found {len(errors)} error(s): not launching. Fix them, or pass --force to launch anyway.")
        self._write_report(Report(__version__, [InputInfo("<command>", "args")], self._run_info("blocked-by-preflight", None),
                                  list(rep.findings)))
        return EXIT_NOT_STARTED

    def _launch(self) -> None:
        env = dict(self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")  # a piped Python child would otherwise hold its stdout in 8 KiB blocks
        kw = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
        self.proc = subprocess.Popen(self.argv, stdin=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     close_fds=True, **kw)
        self.pgid = self.proc.pid
        if threading.current_thread() is threading.main_thread():  # signal handlers: main thread only
            self.terminal.give(self.pgid)  # the run's group reads the terminal (input(), pdb): see live/terminal

    # ------------------------------------------------------------------ main
    def run(self) -> int:
        try:
            self._paths()
        except OSError as e:
            say(f"{self.o.run_dir or output_dir_of(self.argv) or 'output'}: cannot create the run folder ({e.strerror}); "
                "pass a writable --run-dir")
            return EXIT_NOT_STARTED
        code = self._preflight()
        if code is not None:
            return code
        self.session = Session(load_catalog())
        self.session.run.add_command(self.o.command_text if self.o.command_text is not None else shlex.join(self.argv),
                                     "command")
        self.hang_rule = next((r for r in self.session.rules if r.meta.id == "GD320"), None)
        from ..render.html import watch_curves  # the final report also as HTML (issue 21): curves recorded live
        self.curves = watch_curves(self.session)
        try:
            self.console = open(self.console_path, "wb", buffering=0)
        except OSError as e:
            say(f"{self.console_path}: cannot write the console log ({e.strerror}); pass a writable --run-dir")
            return EXIT_NOT_STARTED
        try:
            self._launch()
        except OSError as e:
            say(f"cannot start {self.argv[0]!r}: {e.strerror or e}; check the command and PATH")
            self.console.close()
            return EXIT_NOT_STARTED
        self.t0 = self.clock()
        self.wall0 = time.time()
        self.status = "running"
        self.dog = HangWatchdog(self.o.limits, self.clock)
        self.rundir = RunDirWatcher(self.run_dir, self.wall0)
        self.reader = LineReader(self.console_path, [0])
        self.session.begin_log(self.console_path)
        self.inputs = [InputInfo(self.console_path, "log")]
        self.file_lines = 0
        self.skip_jsonl_steps = 0
        shown = shlex.join(self.argv).replace("\n", " ")
        say(f"watching pid {self.proc.pid} ({shown[:200]}{'...' if len(shown) > 200 else ''}); console log {self.console_path}; "
            f"report {self.report_path}")
        # SIGHUP too, unless it is ignored (nohup): then the child inherits the ignore and keeps running
        sigs = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else [])
        old = {s: signal.signal(s, self._on_signal) for s in sigs}
        try:
            rc = self._loop()
        finally:
            self.terminal.take_back()
            for s, h in old.items():
                signal.signal(s, h)
            self.console.close()
        return rc

    def _on_signal(self, signum: int, frame) -> None:
        self.signals.append(signum)
        if self.proc is not None and self.proc.poll() is None:
            actions.signal_group(self.pgid, signum)

    def _loop(self) -> int:
        """Main thread: pass-through only (read, write, hand the chunk to the analyser); never waits on analysis
        unless the analyser is more than BACKLOG_MAX bytes behind."""
        proc = self.proc
        sel = selectors.DefaultSelector()
        streams = [_Stream(proc.stdout.fileno(), self.o.out_fd), _Stream(proc.stderr.fileno(), self.o.err_fd)]
        for st in streams:
            os.set_blocking(st.fd, False)
            sel.register(st.fd, selectors.EVENT_READ, st)
        self.queue: queue.Queue = queue.Queue()
        self.backlog = 0
        self.backlog_cv = threading.Condition()
        old_switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        analyser = threading.Thread(target=self._analyser, args=(streams,), name="grpo-doctor-analyser", daemon=True)
        analyser.start()
        open_streams = 2
        exited_at: float | None = None
        while True:
            events = sel.select(self.o.poll) if open_streams else (time.sleep(0.05) or [])
            for key, _ in events:
                st: _Stream = key.data
                try:
                    data = os.read(st.fd, READ)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(st.fd)
                    open_streams -= 1
                    continue
                if st.out_ok:
                    st.out_ok = _write_all(st.out_fd, data)
                with self.backlog_cv:
                    while self.backlog > BACKLOG_MAX:
                        self.backlog_cv.wait(0.5)
                    self.backlog += len(data)
                self.queue.put((st, data))
            rc = proc.poll()
            if rc is not None:
                now = time.monotonic()
                if exited_at is None:
                    exited_at = now
                # descendants may keep the pipes open: read what is there, then stop waiting after 2 s
                if open_streams == 0 or now - exited_at > 2.0:
                    break
            kill_at = self.kill_at
            if kill_at is not None and self.clock() >= kill_at:
                self.kill_at = None
                say(f"the run did not exit within --grace {self.o.grace:g} s after SIGTERM: sending SIGKILL to its "
                    "process group")
                actions.signal_group(self.pgid, signal.SIGKILL)
        sel.close()
        self.queue.put(None)
        analyser.join()
        sys.setswitchinterval(old_switch)
        rc = proc.wait()
        if self.stopped:
            # the group may still hold stragglers that ignored SIGTERM
            actions.signal_group(self.pgid, signal.SIGKILL)
        self._scan()
        for c in self.rundir.settle_all():
            self._check_ckpt(c)
        code = EXIT_STOPPED if self.stopped else (128 - rc if rc < 0 else rc)
        self.status = "stopped-by-watch" if self.stopped else ("exited" if rc == 0 else "failed")
        self.exit_code = code
        rep = self._report(final=True)
        self._write_report(rep)
        from ..render.html import write_watch_html
        write_watch_html(self.report_path, rep, self.curves, self.session)
        self._final_say(rep, rc, code)
        return code

    def _analyser(self, streams: list[_Stream]) -> None:
        """Analyser thread: owns the Session. Tees whole lines to the console log, feeds the engine, and every poll
        runs the run-folder scan, samples, the hang watchdog, the live evaluation and the report refresh."""
        broken = False
        next_tick = self.clock()
        next_eval = self.clock() + self.o.eval_interval
        next_report = self.clock() + min(self.o.report_interval, 5.0)
        next_gpu = self.clock()
        next_scan = self.clock()
        while True:
            try:
                item = self.queue.get(timeout=max(0.0, next_tick - self.clock()))
            except queue.Empty:
                item = ()
            if item is None:
                break
            if item:
                with self.backlog_cv:
                    self.backlog -= len(item[1])
                    self.backlog_cv.notify()
            if broken:
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
                if now >= next_eval:
                    t = time.perf_counter()
                    self._evaluate(final=False)
                    # evaluating all rules costs more as the run grows: keep it under ~5% of a core
                    next_eval = now + max(self.o.eval_interval, 20 * (time.perf_counter() - t))
                if now >= next_report:
                    next_report = now + self.o.report_interval
                    self._write_report(self._report(final=False))
            except Exception as e:  # noqa: BLE001 - the run must go on even if the doctor breaks
                broken = True
                self.analysis_error = f"{type(e).__name__}: {e}"
                say(f"internal error in the live analysis ({self.analysis_error}); the run continues, output still "
                    "passes through; rerun `grpo-doctor analyze` on the run folder afterwards")
        if not broken:
            for st in streams:
                self._close_stream(st)
            try:
                self._hang_tick(self.clock())  # progress in the last burst of output (never fires: the run ended)
            except Exception:  # noqa: BLE001
                pass

    # ------------------------------------------------------------------ output
    def _chunk(self, st: _Stream, data: bytes) -> None:
        lines = st.splitter.feed(data)
        if lines:
            nl = data.rfind(b"\n")
            block = bytes(st.held) + data[:nl + 1] if st.held else data[:nl + 1]
            _write_all(self.console.fileno(), block)
            st.held = bytearray(data[nl + 1:])
            base = self.file_lines
            self.file_lines += len(lines)
            for i, (_ln, raw) in enumerate(lines):
                for line in self.reader.line(base + i + 1, raw):
                    self.session.feed_line(line)
            self.dog.output()
            st.bar = None
        else:
            st.held += data
            if len(st.held) > (1 << 20):  # a giant unterminated line: do not hold it all in memory
                _write_all(self.console.fileno(), bytes(st.held))
                st.held.clear()
        if b"\r" in data:
            self._partial_progress(st)
        elif not lines:
            self.dog.output()

    def _partial_progress(self, st: _Stream) -> None:
        """tqdm redraws (\\r, no newline until the bar closes): a new Train/rollout bar count is progress."""
        part = st.splitter.partial()
        cut = part.rfind(b"\r")
        if cut <= 0:
            return
        prev = part.rfind(b"\r", 0, cut)
        seg = clean(decode(part[prev + 1:cut]))
        m = _BAR.match(seg)
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

    def _close_stream(self, st: _Stream) -> None:
        if st.held:
            _write_all(self.console.fileno(), bytes(st.held) + (b"\n" if not st.held.endswith(b"\n") else b""))
            st.held.clear()
        for _ln, raw in st.splitter.close():
            self.file_lines += 1
            for line in self.reader.line(self.file_lines, raw):
                self.session.feed_line(line)

    # ------------------------------------------------------------------ run directory
    def _scan(self) -> None:
        new_jsonl, new_args, new_ckpts = self.rundir.scan()
        if new_args:
            obj = read_args_json(new_args)
            if obj:
                self.session.run.add_args_json(obj)
                self.inputs.append(InputInfo(new_args, "args"))
        if new_jsonl:
            # logging.jsonl and the printed dicts carry the same rows: from now on take the file (as analyze does),
            # skipping the rows already seen on the console
            self.session.console_metrics = False
            self.skip_jsonl_steps = self.session.metrics_steps
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
        need = self.rundir.last_checkpoint_size()
        if need:
            try:
                free = shutil.disk_usage(self.run_dir).free
            except OSError:
                return
            self.session.emit(DiskTick(self.clock() - self.t0, self.run_dir, free,
                                                                    int(need * 1.05), "size of the last checkpoint"))

    def _check_ckpt(self, c) -> None:
        found = integrations.check_checkpoint([c.path], run=self.session.run)
        if not found:
            return
        self.extra.extend(found)
        for f in found:
            if f.severity >= Severity.warning:
                say(f"{os.path.basename(c.path)}: {f.severity.name} {f.rule_id} {f.title}: {f.message}")

    # ------------------------------------------------------------------ samples
    def _sample(self, now: float) -> None:
        gpus = integrations.gpu_samples()
        self.last_gpus = gpus
        alive = self.proc.poll() is None
        if gpus:
            self.session.emit(GpuTick(now - self.t0, tuple(gpus), alive))
        try:
            vm = psutil.virtual_memory()
            sw = psutil.swap_memory()
            self.session.emit(HostTick(now - self.t0, vm.available, vm.total, sw.free))
        except (psutil.Error, OSError):
            pass

    # ------------------------------------------------------------------ hang watchdog
    def _hang_tick(self, now: float) -> None:
        h = self.hang_rule
        if h is not None:
            phase, seq = h._last_phase()
            wp = PHASE_OF.get(phase, "steady" if h.p.max_step else "startup")
            if wp == "checkpoint-save" and seq < getattr(self, "_ckpt_seq", 0) and h.p.max_step:
                wp = "steady"  # the checkpoint folder appeared after the save began: back to steps
            if h.p.max_step:
                self.dog.step(h.p.max_step)
            if wp != self.dog.phase:
                self.dog.set_phase(wp)
            n = len(h.p.vllm_lines)
            if n != getattr(self, "_vllm_n", 0):
                self._vllm_n = n
                if self.dog.steps or self.dog.phase in ("first-step", "steady"):
                    self.dog.progress("rollout line")
        steps = max(self.session.metrics_steps, self.dog.steps)
        if steps > self.dog.steps:
            self.dog.step(steps)
        if self.dog.resumed != getattr(self, "_resumed_seen", 0):
            self._resumed_seen = self.dog.resumed
            say(f"progress resumed ({self.dog.last_what}); the hang report above stays in the report")
        ev = self.dog.check(now)
        if ev is None or self.proc.poll() is not None:
            return
        self._on_hang(ev, now)

    def _on_hang(self, ev, now: float) -> None:
        self.hang_reports += 1
        say(f"no progress for {units.secs(ev.silent_s)} s in {PHASE_TEXT[ev.phase]} (limit "
            f"{units.secs(ev.limit_s)} s, {ev.basis}); "
            "capturing stacks, process states and a GPU snapshot")
        procs = actions.process_tree(self.proc.pid)
        stacks, missing = actions.dump_stacks(procs)
        gpus = integrations.gpu_samples()
        where, where_text = actions.where_stopped(stacks)
        outlier = actions.outlier(stacks)
        if not stacks and self.hang_rule is not None:
            phase, _ = self.hang_rule._last_phase()
            from ..checks.hang._progress import PHASE_TEXT as LOG_PHASES
            if phase:
                where_text = f"in {LOG_PHASES.get(phase, phase)} (from the log; no stacks)"
        base = console_name(self.node_rank, "hang")
        path = os.path.join(self.run_dir, f"{base}-{self.hang_reports}.txt")
        body = [f"grpo-doctor hang report {self.hang_reports}: no progress for {units.secs(ev.silent_s)} s in "
                f"{ev.phase} (limit {units.secs(ev.limit_s)} s: {ev.basis}); last progress: {ev.last_progress}", "",
                "== process states ==", actions.proc_text(procs), "", "== GPUs ==", actions.gpu_text(gpus), ""]
        for s in stacks:
            body += [f"== py-spy dump: pid {s.pid} {s.label} ==", s.text.rstrip(), ""]
        if missing:
            body += ["== not captured ==", *missing, ""]
        try:
            with open(path, "wb") as f:  # process names and stacks may hold undecodable bytes (surrogates)
                f.write(("\n".join(body) + "\n").encode("utf-8", "backslashreplace"))
            stacks_file = path
        except OSError:
            stacks_file = None
        if stacks and stacks_file:
            # the same text `analyze` will read from the run folder later: GD320/GD321 classify the frames too
            rd = LineReader(stacks_file, self.reader.counter)
            self.session.begin_log(stacks_file)
            for i, raw in enumerate(("\n".join(body)).encode().split(b"\n")):
                for line in rd.line(i + 1, raw):
                    self.session.feed_line(line)
            self.inputs.append(InputInfo(stacks_file, "log"))
        tail = self.session.tails.get(self.console_path)
        last_line = tail[-1] if tail else None
        stopping = self.o.on_hang == "stop"
        rep = HangReport(
            t=now - self.t0, phase=ev.phase, phase_text=PHASE_TEXT[ev.phase], silent_s=ev.silent_s, limit_s=ev.limit_s,
            limit_basis=ev.basis, steps=ev.steps, last_progress=ev.last_progress,
            last_line=last_line.raw if last_line else "", where=where,
            where_text=where_text, outlier=outlier,
            stacks=tuple(f"{s.label}: {s.top or 'no frames'}" for s in stacks if not s.launcher), stacks_file=stacks_file,
            missing=tuple(missing), gpu_text=actions.gpu_text(gpus), proc_text=actions.proc_text(procs), stopped=stopping,
            last_path=last_line.where.path if last_line else "<watch>", last_lineno=last_line.where.line if last_line else 0)
        self.session.emit(rep)
        self.hung = True
        report = self._report(final=False, hung=True)
        self._write_report(report)
        from ..render import text
        say(text.render(report, color=False))
        for f in report.findings:
            self.printed[f.rule_id] = max(f.severity, self.printed.get(f.rule_id, f.severity))
        if stopping:
            say(f"stopping the run (--on-hang stop): SIGTERM to process group {self.pgid}, SIGKILL after "
                f"{self.o.grace:g} s")
            self.stopped = True
            actions.stop_group(self.pgid)
            self.kill_at = now + self.o.grace

    # ------------------------------------------------------------------ findings and report
    def _findings(self, final: bool, hung: bool = False) -> list:
        found = self.session.finish()
        if not final and not hung and not getattr(self, "hung", False):
            found = [f for f in found if f.rule_id not in _POSTMORTEM_ONLY]
        return order(found + list(self.extra)) if self.extra else found

    def _evaluate(self, final: bool) -> None:
        for f in self._findings(final):
            if f.severity < Severity.warning:
                continue
            prev = self.printed.get(f.rule_id)
            if prev is not None and prev >= f.severity:
                continue
            self.printed[f.rule_id] = f.severity
            if f.severity >= Severity.error and self.first_error_time is None:
                self.first_error_time = time.time()
            ev = f" [{f.evidence[0].text[:160]}]" if f.evidence else ""
            say(f"{f.severity.name} {f.rule_id} {f.title}: {f.message}{ev}")
            if f.fix:
                say(f"  fix: {f.fix[0]}")

    def _run_info(self, status: str, code: int | None) -> dict:
        info = self.session.run.summary() if self.session is not None else {
            "framework": "ms-swift", "framework_version": None, "args": {}, "world_size": None}
        info.update({
            "node_rank": self.node_rank, "host": self.host,
            "watch": {"status": status, "exit_code": code, "pid": self.proc.pid if self.proc else None,
                      "argv": self.argv, "started": getattr(self, "wall0", None), "updated": time.time(),
                      "first_error_time": self.first_error_time, "console_log": getattr(self, "console_path", None),
                      "stopped_by_watch": self.stopped},
        })
        return info

    def _report(self, final: bool, hung: bool = False) -> Report:
        findings = self._findings(final, hung)
        if self.first_error_time is None and any(f.severity >= Severity.error for f in findings):
            self.first_error_time = time.time()
        return Report(__version__, list(self.inputs), self._run_info(self.status, getattr(self, "exit_code", None)),
                      findings)

    def _write_report(self, rep: Report) -> None:
        """Atomic (tmp + rename); any value (NaN, bytes of a non-UTF-8 argument) is written validly by render.safe;
        on any failure the tmp file is removed and the run's exit status is untouched."""
        from ..render.safe import json_dumps
        tmp = f"{self.report_path}.tmp{os.getpid()}"
        try:
            data = (json_dumps(rep.to_json(), indent=2) + "\n").encode("utf-8", "backslashreplace")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, self.report_path)
        except Exception as e:  # noqa: BLE001 - a report that cannot be written must not cost the child's status
            say(f"{self.report_path}: cannot write the report ({getattr(e, 'strerror', None) or e})")
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def _final_say(self, rep: Report, rc: int, code: int) -> None:
        how = (f"stopped by grpo-doctor (exit {code})" if self.stopped else
               f"exited with status {rc}" if rc >= 0 else f"was killed by signal {-rc} (exit {code})")
        bad = [f for f in rep.findings if f.severity >= Severity.warning]
        if rc != 0 or self.stopped or any(f.severity >= Severity.error for f in bad):
            from ..render import text
            say(f"the run {how}; diagnosis:")
            say(text.render(rep, color=False))
        else:
            say(f"the run {how}; " + (f"{len(bad)} warning(s): " + ", ".join(f"{f.rule_id} {f.title}" for f in bad)
                                       if bad else "no findings at warning or above"))
        say(f"report: {self.report_path}")


def watch(argv: list[str], opts: WatchOptions | None = None, clock: Callable[[], float] = time.monotonic) -> int:
    return Watch(argv, opts, clock).run()
