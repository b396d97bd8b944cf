"""The terminal belongs to the run while it runs.

watch starts the command in a process group of its own (so that stopping a run signals all its processes and
nothing else). Under a terminal that group would be in the background: a read from the terminal (``input()``,
pdb, a wandb login prompt, getpass) stops it with SIGTTIN and the run hangs. So when watch itself is the
terminal's foreground group, it hands the foreground to the run's group (tcsetpgrp) right after the launch and
takes it back when the run ends: the command reads and writes the terminal exactly as it would without watch,
and Ctrl-C / Ctrl-Z reach it directly. A pty was not chosen: it would turn the run's output into terminal output
(CRLF, echo) for the console log and change what ``isatty()`` says for piped runs.

While the run holds the terminal, watch ignores SIGTTOU (the signal a background process gets for tcsetpgrp, and
for writes when ``stty tostop`` is set), so that its own messages and the hand-back never stop it.
"""
from __future__ import annotations

import os
import signal


def _terminal_fd() -> tuple[int | None, bool]:
    """(fd of our controlling terminal, whether we opened it): stdin, stdout or stderr when one is the terminal,
    else /dev/tty (a child may open it itself, as getpass does)."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return fd, False
        except OSError:
            continue
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)), True
    except OSError:
        return None, False


class Foreground:
    """``give(pgid)`` after the launch, ``take_back()`` when the run has ended (idempotent; safe without a tty)."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.own = False
        self.old_ttou = None

    def give(self, pgid: int) -> bool:
        fd, own = _terminal_fd()
        if fd is None:
            return False
        try:
            if os.tcgetpgrp(fd) != os.getpgrp():
                raise OSError("not the foreground group")  # `watch ... &`: the terminal is not ours to give
            self.old_ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(fd, pgid)
        except (OSError, ValueError):
            if self.old_ttou is not None:
                signal.signal(signal.SIGTTOU, self.old_ttou)
                self.old_ttou = None
            if own:
                os.close(fd)
            return False
        self.fd, self.own = fd, own
        return True

    def take_back(self) -> None:
        if self.fd is None:
            return
        try:
            os.tcsetpgrp(self.fd, os.getpgrp())
        except OSError:
            pass  # the terminal is gone (hang-up): nothing to take back
        if self.own:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = None
        if self.old_ttou is not None:
            signal.signal(signal.SIGTTOU, self.old_ttou)
            self.old_ttou = None
