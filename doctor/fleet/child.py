"""The analysis of one finished job, in its own process: ``python -m doctor.fleet.child MAX_LOG_BYTES PATH...``.

Run by doctor/fleet/diagnose.py as the job's user, under a time and memory limit, so that a hook running as root
reads only what the job's user could read and a huge or hostile log cannot hold the hook. Prints the JSON report
(schema 1) on standard output; a one-line error on standard error and exit 3 when nothing could be read.

A log larger than MAX_LOG_BYTES is read from its last MAX_LOG_BYTES only (the failure is at the end of a log; its
line numbers then count from there, which the input's name says)."""
from __future__ import annotations

import os
import sys

EXIT_UNREADABLE = 3


def _tail_on_stdin(path: str, keep: int) -> str:
    """Standard input becomes the last ``keep`` bytes of ``path``; the name the report shows for it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - keep), os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdin = os.fdopen(0, "r", closefd=False)
    return f"{path} (last {keep // (1 << 20)} MiB of {size // (1 << 20)} MiB)"


def main(argv: list[str]) -> int:
    from ..analyze import analyze_inputs
    from ..render.jsonr import render
    from ..sources.inputs import Input, InputError, discover
    max_bytes, paths = int(argv[0]), argv[1:]
    big = next((p for p in paths if os.path.isfile(p) and os.path.getsize(p) > max_bytes), None)
    try:
        inputs = discover([p for p in paths if p != big])
        if big is not None:
            inputs.insert(0, Input(None, _tail_on_stdin(big, max_bytes), "log"))
        report = analyze_inputs(inputs)
    except InputError as e:
        print(str(e), file=sys.stderr)
        return EXIT_UNREADABLE
    except OSError as e:
        print(f"{e.filename or 'input'}: {e.strerror}", file=sys.stderr)
        return EXIT_UNREADABLE
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
