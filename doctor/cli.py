"""The `grpo-doctor` entry point. The commands are typer's (doctor/cli_app.py), imported only when needed: a plain
`grpo-doctor watch [OPTIONS] -- COMMAND...` is read without typer (doctor/live/command.py), because watch pays
every import of its process out of the run it supervises. Names of doctor/cli_app.py (``app``...) are read through
this module as before.

Exit codes (analyze, preflight, check-ckpt, explain, rules): 0 nothing at or above --fail-on; 1 findings at or above it;
2 usage error or unreadable input, always with one line naming the file and what to do.
"""
from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["watch"]:
        from .live import collector
        collector.hold()   # no garbage collection while watch starts: resumed once its rules are built
        from .live.command import parse, run
        params = parse(args[1:])
        if params is not None:
            code = run(**params)
            collector.done()
            sys.exit(code)
        collector.resume()
    from .cli_app import main as typer_main
    typer_main()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):   # the import system's probes (__path__ for `from doctor.cli import main`)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import cli_app
    try:
        return getattr(cli_app, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


if __name__ == "__main__":
    main()
