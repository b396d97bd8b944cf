"""The analysis of one finished job, in its own process: ``python -m doctor.fleet.child MAX_LOG_BYTES PATH...``.

Run by doctor/fleet/diagnose.py as the job's user, under a time and memory limit, so that a hook running as root
reads only what the job's user could read and a huge or hostile log cannot hold the hook. Prints the JSON report
(schema 1) on standard output; a one-line error on standard error and exit 3 when nothing could be read.

A log larger than MAX_LOG_BYTES is read in part: its first eighth (the launch line, versions and arguments come
first) and the rest of the budget from its end (the failure is at the end). Its line numbers past the cut then count
from the start of the part read, which the input's name says. Why a cut at all: lines that the rules' words match
are parsed in Python, and a log dense with them goes at ~5 MB/s on a loaded core; an epilog holds its job."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

EXIT_UNREADABLE = 3


def _parts_copy(path: str, budget: int, into: str) -> tuple[str, str]:
    """The head and the tail of ``path`` (``budget`` bytes in all) copied into a file in the folder ``into`` (a
    regular file keeps the fast scanner: standard input would be parsed line by line); its path and the name the
    report shows for it."""
    head = budget // 8
    out = os.path.join(into, "log.txt")
    with open(path, "rb") as src, open(out, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        dst.write(src.read(head))
        dst.write(b"\n")   # the cut between the parts: a line of its own
        src.seek(max(head, size - (budget - head)))
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    mib = 1 << 20
    return out, f"{path} (first {head / mib:g} MiB and last {(budget - head) / mib:g} MiB of {size / mib:.0f} MiB)"


def main(argv: list[str]) -> int:
    from ..analyze import analyze_inputs
    from ..render.jsonr import render
    from ..sources.inputs import Input, InputError, discover
    max_bytes, paths = int(argv[0]), argv[1:]
    big = next((p for p in paths if os.path.isfile(p) and os.path.getsize(p) > max_bytes), None)
    try:
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-fleet-") as tmp:
            inputs = discover([p for p in paths if p != big])
            if big is not None:
                copy, shown = _parts_copy(big, max_bytes, tmp)
                inputs.insert(0, Input(Path(copy), shown, "log"))
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
