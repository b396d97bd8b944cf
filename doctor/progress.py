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
        self.progress: Any = None

    def tick(self, _signum: int, _frame: Any) -> None:
        try:
            if self.progress is None:
                from rich.console import Console
                from rich.markup import escape
                from rich.progress import (
                    Progress,
                    SpinnerColumn,
                    TextColumn,
                    TimeElapsedColumn,
                )
                self.progress = Progress(SpinnerColumn(), TextColumn(escape(self.label)), TimeElapsedColumn(),
                                         console=Console(stderr=True), transient=True, auto_refresh=False,
                                         redirect_stdout=False, redirect_stderr=False)
                self.progress.add_task(self.label, total=None)
                self.progress.start()
            self.progress.refresh()
        except Exception:  # noqa: BLE001 - progress is decoration: it never breaks an analysis
            signal.setitimer(signal.ITIMER_REAL, 0)

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
