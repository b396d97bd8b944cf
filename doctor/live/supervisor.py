"""`grpo-doctor watch -- COMMAND...`: run the command unchanged, pass its output through, and watch it.

Two threads. The reader (main thread, one select loop) reads the child's stdout and stderr raw (os.read), writes
them to our fd 1 and fd 2 at once, tees whole lines to the console log (doctor/live/tee.py) and hands the chunk to
the analyser without ever waiting for it: when the analysis is too far behind it skips ahead and says so. The
analyser (doctor/live/analysis.py) splits chunks into LogLines exactly as `analyze` reads a file and feeds the same
engine Session; between chunks it tails logging.jsonl, notices checkpoint folders, samples GPUs / host memory /
disk, runs the hang watchdog (doctor/live/hangs.py) and evaluates the rules (doctor/live/reporting.py).
"""
from __future__ import annotations

import os
import selectors
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .. import __version__
from ..engine import Session
from ..model import InputInfo, Report, Severity
from ..registry import load_catalog
from ..sources.logtext import LineReader
from . import actions, collector, exits, integrations
from .analysis import Analysis
from .hangs import Hangs
from .reporting import Reporting
from .rundir import RunDirWatcher, archive_previous, console_name, default_run_dir, node_identity, output_dir_of
from .say import say
from .tee import ConsoleLog, Feed, Stream, hold_std_fds, write_all
from .terminal import Foreground
from .watchdogs import HangWatchdog, Limits

EXIT_STOPPED = 124   # watch stopped the child (--on-hang stop), like timeout(1)
EXIT_NOT_STARTED = 2
READ = 1 << 20
# output waiting for the analyser beyond this is skipped by the analysis (never the tee). 16 MiB is minutes of a dense
# run's output (~100 KB/s) and keeps watch near 100 MiB RSS under a flood; 256 MiB put it at 341-446 MiB
# (bench/bench_watch_flood.py)
BACKLOG_MAX = 16 << 20
SWITCH_INTERVAL = 0.0005  # the pass-through thread gets the GIL back within 0.5 ms of asking (Python default: 5 ms)
EXIT_POLL = 0.2  # seconds between two checks of the command's exit while it prints (waitpid at every chunk cost ~0.1 ms each)


@dataclass
class WatchOptions:
    """The options of `grpo-doctor watch`."""
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
    drain: float = 30.0                # after the leader exits: wait this long for the group's output to close
    keep_launches: int = 0             # earlier launches' logs and reports kept (0: all)
    backlog_max: int = BACKLOG_MAX
    lag_max: float = 30.0              # the analysis skips ahead when it is this many seconds behind the output
    on_failure: str = "stop"           # stop | restart | resume (doctor/live/restart.py)
    max_restarts: int = 3
    restart_backoff: float = 30.0      # seconds before the first relaunch, doubled each time
    notify_url: str | None = None      # POST {"text": ...} on the first error, a hang, the end (doctor/live/notify.py)
    notify_cmd: str | None = None      # or run this command with the report path
    notify_backoff: float = 1.0


class Watch(Analysis, Hangs, Reporting):
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
        self.checkpoints_seen: list[tuple[str, int | None]] = []   # (path, step) of the checkpoints checked
        self.hang_reports = 0
        self.status = "starting"
        self.first_error_time: float | None = None
        self.survivors: list[dict] = []
        self.pids: set[int] = set()
        self.interrupted = threading.Event()   # SIGINT/SIGTERM/SIGHUP after the run ended: stop waiting on alerts
        if self.o.notify_url or self.o.notify_cmd:
            from .notify import Notifier
            self.notifier = Notifier(self.o.notify_url, self.o.notify_cmd, self.o.notify_backoff)

    # ------------------------------------------------------------------ setup
    def _paths(self) -> None:
        run_dir = self.o.run_dir or default_run_dir(self.argv)
        if not self.o.run_dir and not output_dir_of(self.argv):
            say(f"no --run-dir and no --output_dir in the command: console log and report go to {os.path.abspath(run_dir)}")
        os.makedirs(run_dir, exist_ok=True)
        self.run_dir = run_dir
        self.console_path = os.path.join(run_dir, console_name(self.node_rank, "console"))
        self.report_path = self.o.report or os.path.join(run_dir, console_name(self.node_rank, "report"))
        # every launch keeps its own files: the previous ones move to the next free NAME.N (never overwritten)
        from ..render.html import html_path
        self.archived = archive_previous([self.console_path, self.report_path, html_path(self.report_path)],
                                         self.o.keep_launches)

    def _preflight(self) -> int | None:
        if not self.o.preflight:
            return None
        rep = integrations.preflight(self.argv, self.env)
        if rep is None:
            return None
        blocking = [f for f in rep.findings if f.severity >= Severity.error and not integrations.is_estimate(f)]
        for f in rep.findings:
            if f.severity >= Severity.warning and f not in blocking:
                say(f"preflight {f.severity.name}{' (estimate)' if integrations.is_estimate(f) else ''}: "
                    f"{f.rule_id} {f.title}: {f.message}")
        if not blocking:
            return None
        from ..render import text
        say(text.render(rep, color=False))
        if self.o.force:
            say(f"preflight found {len(blocking)} error(s); launching anyway (--force)")
            return None
        say(f"preflight found {len(blocking)} error(s): not launching. Fix them, or pass --force to launch anyway.")
        fixed = (rep.run.get("preflight") or {}).get("relaunch") if isinstance(rep.run, dict) else None
        if isinstance(fixed, dict) and fixed.get("accepted"):   # doctor/preflight_relaunch.py: every fix, judged again
            say(f"relaunch with every fix (preflight accepts it): grpo-doctor watch -- {fixed['command']}")
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
        self.pids.add(self.proc.pid)
        if threading.current_thread() is threading.main_thread():  # signal handlers: main thread only
            self.terminal.give(self.pgid)  # the run's group reads the terminal (input(), pdb): see live/terminal

    # ------------------------------------------------------------------ main
    def run(self) -> int:
        hold_std_fds()  # before any file is opened: a closed fd 1/2 must not become the console log
        try:
            self._paths()
        except OSError as e:
            say(f"{self.o.run_dir or default_run_dir(self.argv)}: cannot create the run folder ({e.strerror}); "
                "pass a writable --run-dir")
            return EXIT_NOT_STARTED
        code = self._preflight()
        if code is not None:
            return code
        try:
            self.console = ConsoleLog(self.console_path)
        except OSError as e:
            say(f"{self.console_path}: cannot write the console log ({e.strerror}); pass a writable --run-dir")
            return EXIT_NOT_STARTED
        try:
            self._launch()
        except OSError as e:
            say(f"cannot start {self.argv[0]!r}: {e.strerror or e}; check the command and PATH")
            self.console.close()
            return EXIT_NOT_STARTED
        # SIGHUP too, unless it is ignored (nohup): then the child inherits the ignore and keeps running
        sigs = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else [])
        old = {s: signal.signal(s, self._on_signal) for s in sigs}
        try:
            # the rules are built while the run starts (a fifth of a second of CPU it need not wait for); its output
            # waits in the pipes meanwhile, so none is lost
            try:
                self._begin_session()
            except BaseException:
                # a run watch cannot analyse is not left running unwatched: stopped, as if never started
                actions.signal_group(self.pgid, signal.SIGKILL)
                self.proc.wait()
                raise
            # what the start made lives as long as watch: out of the collector's way (doctor/live/collector.py)
            collector.resume()
            self._begin_watching()
            shown = shlex.join(self.argv).replace("\n", " ")
            say(f"watching pid {self.proc.pid} ({shown[:200]}{'...' if len(shown) > 200 else ''}); console log "
                f"{self.console_path}; report {self.report_path}")
            rc = self._loop()
        finally:
            self.terminal.take_back()
            for s, h in old.items():
                signal.signal(s, h)
            self.console.close()
        return rc

    def _begin_session(self) -> None:
        """The engine Session and what records beside it (the analyser's state, built once the child runs; the fuzz
        of tests/fuzz/ builds a Watch with these two methods and no child)."""
        # a rule that waits for a signal (an exception, GPU samples, a checkpoint) is built when it comes: most runs
        # need few of their modules (doctor/lazyrules.py)
        self.session = Session(load_catalog(), lazy=True)
        self.session.run.add_command(self.o.command_text if self.o.command_text is not None else shlex.join(self.argv),
                                     "command")
        self.session.run.launch_printed = True  # the log watch records holds the program's start: it launched it
        self.hang_rule = next((r for r in self.session.rules if r.meta.id == "GD320"), None)
        from ..render.html import watch_curves  # the final report also as HTML (issue 21): curves recorded live
        self.curves = watch_curves(self.session)
        from ..gpu_summary import GpuSummary  # the live GPU samples in the JSON report too, not only in the HTML
        self.gpus = GpuSummary()
        self.session.observers.append(self.gpus)

    def _begin_watching(self) -> None:
        """The analyser's state once the child runs: watchdog, run-folder watcher, line reader."""
        self.t0 = self.clock()
        self.wall0 = time.time()
        self.status = "running"
        self.dog = HangWatchdog(self.o.limits, self.clock)
        self.rundir = RunDirWatcher(self.run_dir, self.wall0)
        self.reader = LineReader(self.console_path, [0])
        self.session.begin_log(self.console_path)
        self.inputs = [InputInfo(self.console_path, "log")]
        self.skipped_said: set[str] = set()  # run-folder files not followed (links out), each said once
        self.file_lines = 0
        self.skip_jsonl_steps = 0

    def _on_signal(self, signum: int, frame) -> None:
        self.signals.append(signum)
        if self.proc is not None and self.proc.poll() is None:
            actions.signal_group(self.pgid, signum)
        else:  # the run has ended: what is left (alerts going out) must not make watch ignore the user
            self.interrupted.set()

    def _loop(self) -> int:
        """Main thread: pass-through and tee only (read, write, tee, hand the chunk to the analyser); never waits on
        analysis."""
        proc = self.proc
        sel = selectors.DefaultSelector()
        streams = [Stream(proc.stdout.fileno(), self.o.out_fd), Stream(proc.stderr.fileno(), self.o.err_fd)]
        for st in streams:
            os.set_blocking(st.fd, False)
            sel.register(st.fd, selectors.EVENT_READ, st)
        self.feed = Feed(self.o.backlog_max, self.o.lag_max)
        old_switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        analyser = threading.Thread(target=self._analyser, args=(streams,), name="grpo-doctor-analyser", daemon=True)
        analyser.start()
        open_streams = 2
        exited_at: float | None = None
        console = self.console
        polled = 0.0
        while True:
            events = sel.select(self.o.poll) if open_streams else (time.sleep(0.05) or [])
            for key, _ in events:
                st: Stream = key.data
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
                self._through(st, data)
            # a busy run wakes this loop at every line it prints: ask for its exit at most every EXIT_POLL seconds
            now = time.monotonic()
            if events and now - polled < EXIT_POLL and exited_at is None:
                continue
            polled = now
            rc = proc.poll()
            if rc is not None:
                if exited_at is None:
                    exited_at = now
                # processes of the group may still print: read until the pipes close, at most --drain seconds
                if open_streams == 0:
                    break
                if now - exited_at > self.o.drain:
                    say(f"the command exited {self.o.drain:g} s ago but processes of its group still hold its output "
                        "open: not waiting longer")
                    break
            kill_at = self.kill_at
            if kill_at is not None and self.clock() >= kill_at:
                self.kill_at = None
                say(f"the run did not exit within --grace {self.o.grace:g} s after SIGTERM: sending SIGKILL to its "
                    "process group")
                actions.signal_group(self.pgid, signal.SIGKILL)
        sel.close()
        for st in streams:
            console.close_stream(st)
        self.feed.close()
        analyser.join()
        sys.setswitchinterval(old_switch)
        rc = proc.wait()
        self.survivors = exits.stop_survivors(self.pgid, 1.0 if self.stopped else min(self.o.grace, 10.0))
        return self._finish(rc)

    def _through(self, st: Stream, data: bytes) -> None:
        """A chunk read from the child: to our fd as it is, to the console log, to the analyser (never waiting)."""
        if st.out_ok:
            st.out_ok = write_all(st.out_fd, data)
        self.console.tee(st, data)
        self.feed.put(st, data)

    def _finish(self, rc: int) -> int:
        self._guard(self._scan)
        # the folders not complete until now were being written when the command ended: by a signal from outside
        # (a scheduler's SIGTERM, the OOM killer's SIGKILL), that signal is why they are cut
        ended_by = None
        if rc < 0 and not self.stopped:
            try:
                ended_by = (signal.Signals(-rc).name, self.clock() - self.t0)
            except ValueError:
                pass
        for c in self.rundir.settle_all():
            self._guard(self._check_ckpt, c, ended_by)
        code = EXIT_STOPPED if self.stopped else (128 - rc if rc < 0 else rc)
        self.status = "stopped-by-watch" if self.stopped else ("exited" if rc == 0 else "failed")
        self.exit_code = code
        self.rc = rc
        rep = self._final_report(rc)
        self.final_findings = list(rep.findings)
        from .rundir import file_stamp
        before = file_stamp(self.report_path)
        self._write_report(rep)  # says its own failure; the last line must not name a report it did not write
        self.report_written = file_stamp(self.report_path) not in (None, before)
        from ..render.html import write_watch_html
        write_watch_html(self.report_path, rep, self.curves, self.session)
        self._final_say(rep, rc, code)
        if getattr(self, "notifier", None) is not None:
            from .restart import verdict
            v, why = verdict(self.final_findings) if rc != 0 or self.stopped else ("none", "the run succeeded")
            primary = next((f for f in self.final_findings if f.severity >= Severity.error), None)
            self._alert("end", f"the run {'was stopped by watch' if self.stopped else 'ended'} with exit status {code}"
                        + (f"; {primary.rule_id} {primary.title}: {primary.message[:300]}" if primary else "")
                        + f"; verdict: {v}")
            self.notifier.wait(stop=self.interrupted)
        return code


def watch(argv: list[str], opts: WatchOptions | None = None, clock: Callable[[], float] = time.monotonic) -> int:
    o = opts or WatchOptions()
    if o.on_failure == "stop":
        return Watch(argv, o, clock).run()
    from .restart import supervise

    def once(cmd: list[str], attempt: int) -> tuple[int, list, bool, bool]:
        w = Watch(cmd, o, clock)
        w.attempt = attempt
        code = w.run()
        return code, getattr(w, "final_findings", []), w.proc is not None, w.stopped
    return supervise(argv, once, o.on_failure, o.max_restarts, o.restart_backoff, o.run_dir)
