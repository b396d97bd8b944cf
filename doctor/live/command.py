"""`grpo-doctor watch`'s command line without typer: its options, the checks of their values and the launch.

watch pays every import of its process out of the run it supervises (the fault scoreboard's runs of 10-20 s of CPU
measured it, bench/watch_start_cpu.py): typer and click alone are ~15% of what `watch -- true` executes. The typer
command (doctor/cli_app.py ``watch``) and the short path of ``doctor.cli.main`` both end in ``run`` below. The short
path takes only a command line it reads the way click does (every option before ``--`` one of the table's, in the
``--name value`` or ``--name=value`` form, with a value its type accepts, then ``--`` and a command); anything else
(help, a misspelt option, a bad value, a command without ``--``) goes to typer, which says what is wrong.
tests/test_watch_command.py keeps the table equal to the typer command's options and defaults.
"""
from __future__ import annotations

import sys
from typing import Any

# option -> (parameter, kind, default); kinds: path, float, int, str, choice:a|b, list (repeatable), flag
OPTIONS: dict[str, tuple[str, str, Any]] = {
    "--run-dir": ("run_dir", "path", None),
    "--report": ("report", "path", None),
    "--startup-timeout": ("startup_timeout", "float", 1800.0),
    "--hang-timeout": ("hang_timeout", "float", None),
    "--phase-timeout": ("phase_timeout", "list", None),
    "--on-hang": ("on_hang", "choice:warn|stop", "warn"),
    "--grace": ("grace", "float", 30.0),
    "--force": ("force", "flag", False),
    "--no-preflight": ("no_preflight", "flag", False),
    "--gpu-interval": ("gpu_interval", "float", 10.0),
    "--drain": ("drain", "float", 30.0),
    "--keep-launches": ("keep_launches", "int", 0),
    "--on-failure": ("on_failure", "str", "stop"),
    "--max-restarts": ("max_restarts", "int", 3),
    "--restart-backoff": ("restart_backoff", "float", 30.0),
    "--notify": ("notify", "str", None),
    "--notify-cmd": ("notify_cmd", "str", None),
    "--debug": ("debug", "flag", False),
}
EXIT_USAGE = 2


def parse(args: list[str]) -> dict[str, Any] | None:
    """The parameters of ``run`` from the words after ``watch``, or None when the short path does not take them."""
    if "--" not in args:
        return None
    end = args.index("--")
    command = args[end + 1:]
    if not command:
        return None
    out: dict[str, Any] = {name: default for name, _, default in OPTIONS.values()}
    out["command"] = command
    i = 0
    while i < end:
        word = args[i]
        flag, eq, value = word.partition("=")
        spec = OPTIONS.get(flag)
        if spec is None:
            return None
        name, kind, _ = spec
        if kind == "flag":
            if eq:
                return None
            out[name] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= end:   # its value would be `--` or missing: click's own reading differs, let typer say it
                return None
            value = args[i + 1]
            i += 2
        else:
            i += 1
        got = _value(kind, value)
        if got is None:
            return None
        if kind == "list":
            out[name] = [*(out[name] or []), value]
        else:
            out[name] = got
    return out


def _value(kind: str, value: str) -> Any:
    """The value as click converts it (float(), int(), a choice as typed), or None when it would not."""
    if kind == "float":
        try:
            return float(value)
        except ValueError:
            return None
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            return None
    if kind.startswith("choice:"):
        return value if value in kind[7:].split("|") else None
    if kind == "path":
        return value or None   # an empty path: typer's own conversion decides
    return value


def _usage(msg: str) -> int:
    from ..render.safe import clean  # file names and exception text: no escape sequence reaches the terminal
    print(f"grpo-doctor: {clean(msg)}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def run(command: list[str], *, run_dir: Any = None, report: Any = None, startup_timeout: float = 1800.0,
        hang_timeout: float | None = None, phase_timeout: list[str] | None = None, on_hang: str = "warn",
        grace: float = 30.0, force: bool = False, no_preflight: bool = False, gpu_interval: float = 10.0,
        drain: float = 30.0, keep_launches: int = 0, on_failure: str = "stop", max_restarts: int = 3,
        restart_backoff: float = 30.0, notify: str | None = None, notify_cmd: str | None = None,
        debug: bool = False) -> int:
    """Check the options, watch the command; the exit status (2 with one line on stderr for a usage error)."""
    from .supervisor import EXIT_NOT_STARTED, WatchOptions
    from .supervisor import watch as run_watch
    from .watchdogs import Limits
    if not command:
        return _usage("watch needs a command after --, e.g. grpo-doctor watch -- swift rlhf --rlhf_type grpo ...")
    limits = Limits(startup=startup_timeout, steady=hang_timeout)
    for item in phase_timeout or ():
        name, _, value = item.partition("=")
        try:
            if name.strip() == "steady-floor":
                limits.steady_floor = float(value)
            else:
                limits.set(name.strip(), float(value))
        except ValueError as e:
            return _usage(f"--phase-timeout {item!r}: {e if 'phase' in str(e) else 'use PHASE=SECONDS'}")
    for flag, v in (("--startup-timeout", startup_timeout), ("--grace", grace), ("--gpu-interval", gpu_interval),
                    ("--drain", drain), ("--keep-launches", keep_launches), ("--max-restarts", max_restarts),
                    ("--restart-backoff", restart_backoff)):
        if v < 0:
            return _usage(f"{flag} must be >= 0")
    opts = WatchOptions(run_dir=str(run_dir) if run_dir else None, report=str(report) if report else None,
                        limits=limits, on_hang=on_hang, grace=grace, force=force, preflight=not no_preflight,
                        gpu_interval=gpu_interval, drain=drain, keep_launches=keep_launches, on_failure=on_failure,
                        max_restarts=max_restarts, restart_backoff=restart_backoff, notify_url=notify,
                        notify_cmd=notify_cmd)
    if on_failure not in ("stop", "restart", "resume"):
        return _usage(f"--on-failure {on_failure!r}: use stop, restart or resume")
    try:
        return run_watch(list(command), opts)
    except Exception as e:  # noqa: BLE001
        if debug:
            raise
        print(f"grpo-doctor: internal error in watch: {type(e).__name__}: {e} (rerun with --debug and report it)",
              file=sys.stderr, flush=True)
        return EXIT_NOT_STARTED


__all__ = ["OPTIONS", "parse", "run"]
