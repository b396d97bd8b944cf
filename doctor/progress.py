"""Progress on a terminal for an analysis that takes a while: a rich spinner with the elapsed time on stderr.

Shown only when stderr is a terminal (never when piped), never for machine formats (the caller decides), and
only once the work has run for ``GRPO_DOCTOR_PROGRESS_AFTER`` seconds (default 1). It is driven by an interval
timer (SIGALRM) in the main thread rather than a thread: the big-log scanner forks only while the process runs
a single thread. rich is imported on the first tick, so start-up and quick runs never load it.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

INTERVAL = 0.1  # seconds between redraws
LABEL_MAX = 28  # characters of the label beside the bar


class Meter:
    """Bytes read of the inputs whose size is known: ``plan`` the total, ``begin`` each file, ``at`` its offset as
    the readers move (one attribute write per chunk or batch of lines, never per line). The spinner draws a bar
    with bytes done / total and an ETA from it; nothing reads it otherwise."""

    def __init__(self) -> None:
        self.total = 0
        self.base = 0      # bytes of the files already read
        self.size = 0      # size of the file being read
        self.pos = 0
        self.fd: int | None = None   # the file being read: its OS offset is where the reader got to

    def plan(self, total: int) -> None:
        self.total, self.base, self.size, self.pos, self.fd = max(0, total), 0, 0, 0, None

    def begin(self, size: int, fd: int | None = None) -> None:
        self.base += self.size
        self.size, self.pos, self.fd = max(0, size), 0, fd

    def at(self, pos: int) -> None:
        """Where a reader that does not move the file offset (pread) got to."""
        self.pos = pos

    @property
    def done(self) -> int:
        pos = self.pos
        if self.fd is not None:
            try:   # an lseek, not the stream's tell(): safe from a signal handler while the stream reads
                pos = max(pos, os.lseek(self.fd, 0, os.SEEK_CUR))
            except OSError:
                self.fd = None
        return min(self.total, self.base + min(pos, self.size))


METER = Meter()


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get("GRPO_DOCTOR_PROGRESS_AFTER", "1")))
    except ValueError:
        return 1.0


def wanted() -> bool:
    """A terminal on stderr, a timer to drive the redraws, and the main thread (signal handlers live there)."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
    return (tty and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))


class _Spinner:
    def __init__(self, label: str):
        self.label = label
        # beside a bar on an 80-column terminal: the verb and the end of the path ('analysing …/train.log')
        short = label.removeprefix("grpo-doctor: ")
        verb, _, rest = short.partition(" ")
        room = LABEL_MAX - len(verb) - 2
        self.short = short if len(short) <= LABEL_MAX else f"{verb} …{rest[-room:]}" if room > 4 else short[:LABEL_MAX]
        self.progress: Any = None
        self.task: Any = None
        self.sized = False
        self.busy = False

    def tick(self, _signum: int, _frame: Any) -> None:
        if self.busy:   # the timer fired inside a redraw (the first one imports rich): that redraw finishes first
            return
        self.busy = True
        try:
            sized = METER.total > 0   # the inputs' size is known: a bar, bytes done / total and an ETA
            if self.progress is not None and sized != self.sized:
                self.progress.stop()   # the size became known after the first redraw: the bar replaces the spinner
                self.progress = None
            if self.progress is None:
                from rich.console import Console
                from rich.markup import escape
                from rich.progress import (
                    BarColumn,
                    DownloadColumn,
                    Progress,
                    SpinnerColumn,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
                if sized:
                    cols = [SpinnerColumn(), TextColumn(escape(self.short)), BarColumn(bar_width=20), DownloadColumn(),
                            TextColumn("eta"), TimeRemainingColumn()]
                else:
                    cols = [SpinnerColumn(), TextColumn(escape(self.label)), TimeElapsedColumn()]
                self.progress = Progress(*cols, console=Console(stderr=True), transient=True,
                                         auto_refresh=False, redirect_stdout=False, redirect_stderr=False)
                self.task = self.progress.add_task(self.label, total=METER.total if sized else None)
                self.sized = sized
                self.progress.start()
            if sized:
                self.progress.update(self.task, completed=METER.done, total=METER.total)
            self.progress.refresh()
        except Exception:  # noqa: BLE001 - progress is decoration: it never breaks an analysis
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            self.busy = False

    def stop(self) -> None:
        if self.progress is not None:
            with suppress(Exception):  # decoration: never breaks the report that follows
                self.progress.stop()


@contextmanager
def spinner(label: str, enabled: bool = True) -> Iterator[None]:
    """Show ``label`` with a spinner while the block runs, once it has run for the delay; nothing otherwise."""
    if not (enabled and wanted()):
        yield
        return
    sp = _Spinner(label)
    old = signal.signal(signal.SIGALRM, sp.tick)
    signal.setitimer(signal.ITIMER_REAL, _delay() or 1e-3, INTERVAL)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sp.stop()


__all__ = ["spinner", "wanted"]
