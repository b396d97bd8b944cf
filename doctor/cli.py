"""Thin typer commands: parse, call, render, return an exit code.

Exit codes (analyze, preflight, check-ckpt, explain, rules): 0 nothing at or above --fail-on; 1 findings at or above it;
2 usage error or unreadable input, always with one line naming the file and what to do.
"""
from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from . import __version__
from .model import Report, Severity
from .registry import CatalogError, find_rule, load_catalog
from .sources.inputs import InputError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# rich_markup_mode=None: plain click help and usage errors, so start-up never imports rich (only the text
# renderer does); the commands, options and exit codes are the same
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Names the failure of an ms-swift GRPO run, shows the evidence lines and prints the fix "
                       "computed from the run's own numbers.")


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


class FailOn(str, Enum):
    warning = "warning"
    error = "error"


class ListFormat(str, Enum):
    text = "text"
    json = "json"


def _die(msg: str) -> "typer.Exit":
    from .render.safe import clean  # file names and exception text: no escape sequence reaches the terminal
    typer.echo(f"grpo-doctor: {clean(msg)}", err=True)
    return typer.Exit(EXIT_USAGE)


def _split(values: Optional[list[str]]) -> set[str] | None:
    if not values:
        return None
    out = {v.strip().lower() for item in values for v in item.split(",") if v.strip()}
    return out or None


def render_report(report: Report, fmt: Format, color: bool) -> str:
    if fmt is Format.json:
        from .render import jsonr
        return jsonr.render(report)
    if fmt is Format.markdown:
        from .render import markdown
        return markdown.render(report)
    if fmt is Format.sarif:
        from .render import sarif
        return sarif.render(report)
    from .render import text
    return text.render(report, color=color)


def _color_wanted(output: Optional[Path]) -> bool:
    return output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def exit_code(report: Report, fail_on: FailOn) -> int:
    threshold = Severity[fail_on.value]
    return EXIT_FINDINGS if any(f.severity >= threshold for f in report.findings) else EXIT_OK


def emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        if hasattr(sys.stdout, "reconfigure"):  # an ASCII-only locale: escape what it cannot show, never crash
            sys.stdout.reconfigure(errors="backslashreplace")
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as e:
        raise _die(f"{output}: cannot write the report ({e.strerror}); choose another --output path")


def report_and_exit(build, what: str, debug: bool, fmt: "Format", output: Optional[Path], fail_on: "FailOn",
                    user_errors: tuple[type[BaseException], ...] = ()) -> None:
    """Run ``build()`` (which returns a Report), turn every failure into one line and exit 2, else render the
    report and exit 0 or 1 by --fail-on. ``what`` names the input in the internal-error line."""
    try:
        report = build()
        # rendering is inside the error path too: a value no renderer expected costs one line and exit 2, never a
        # traceback (render.safe already writes NaN/inf and undecodable names validly)
        rendered = render_report(report, fmt, _color_wanted(output))
    except (InputError, *user_errors) as e:
        raise _die(str(e))
    except CatalogError as e:
        raise _die(f"rule catalog: {e}")
    except KeyboardInterrupt:
        raise typer.Exit(130)
    except typer.Exit:
        raise
    except Exception as e:  # noqa: BLE001 - the contract is one line and exit 2, never a traceback
        if debug:
            raise
        raise _die(f"internal error {what}: {type(e).__name__}: {e} (rerun with --debug and report it)")
    emit(rendered, output)
    raise typer.Exit(exit_code(report, fail_on))


@app.command()
def analyze(
    paths: list[str] = typer.Argument(..., help="Run directory, log file(s), or - for standard input."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding is at or above this."),
    select: Optional[list[str]] = typer.Option(None, "--select", help="Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Post-mortem of a GRPO run: what failed, the evidence, the fix."""
    from .analyze import analyze as run_analyze
    report_and_exit(lambda: run_analyze(paths, _split(select), _split(ignore)),
                    f"while analysing {' '.join(paths)}", debug, fmt, output, fail_on)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def preflight(
    ctx: typer.Context,
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding is at or above this."),
    gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="Memory of one training GPU in GiB (default: "
                                            "from --gpu-snapshot, else live NVML, else no fit verdict)."),
    gpu_snapshot: Optional[Path] = typer.Option(None, "--gpu-snapshot", help="A saved nvidia-smi output (table, -q "
                                                "or --query-gpu CSV) of the machine the run will use."),
    swift_version: Optional[str] = typer.Option(None, "--swift-version", help="Check against this ms-swift version "
                                                "(default: the installed one, else 4.6)."),
    select: Optional[list[str]] = typer.Option(None, "--select", help="Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Check a swift rlhf command (after --) or an args.json before any GPU time: argument errors, batch
    divisibility, GPU layout, load_args, lengths, disk, and a memory plan."""
    from .preflight import preflight_args_json, preflight_command
    from .sources.gpu import SnapshotError
    from .sources.swiftcmd import CommandError
    argv = list(ctx.args)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise _die("preflight: give the command after --, e.g. grpo-doctor preflight -- swift rlhf --rlhf_type grpo "
                   "..., or the path of an args.json")
    snap = str(gpu_snapshot) if gpu_snapshot else None
    opts = dict(gpu_mem_gib=gpu_mem, gpu_snapshot=snap, select=_split(select), ignore=_split(ignore),
                swift_version=swift_version)

    def build():
        try:
            if len(argv) == 1 and argv[0].endswith(".json") and not argv[0].startswith("-"):
                if not Path(argv[0]).is_file():
                    raise _die(f"{argv[0]}: no such file; pass the args.json of a run or a swift rlhf command after --")
                return preflight_args_json(argv[0], **opts)
            return preflight_command(argv, **opts)
        except OSError as e:
            raise _die(f"{e.filename or 'input'}: cannot read ({e.strerror}); check the path")
    report_and_exit(build, "in preflight", debug, fmt, output, fail_on, (CommandError, SnapshotError))


class Expect(str, Enum):
    full = "full"
    lora = "lora"


@app.command("check-ckpt")
def check_ckpt(
    paths: list[str] = typer.Argument(..., help="Checkpoint directories, files inside them, or run directories."),
    expect: Optional[Expect] = typer.Option(None, "--expect", help="What the checkpoint must hold: full weights or a LoRA adapter."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding is at or above this."),
    select: Optional[list[str]] = typer.Option(None, "--select", help="Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Checkpoint gate (also the pre-commit hook): adapter-only saves, corrupt files, bloat, disk space."""
    from .ckpt import check_paths
    report_and_exit(lambda: check_paths(paths, expect=expect.value if expect else None, select=_split(select),
                                        ignore=_split(ignore)),
                    f"while checking {' '.join(paths)}", debug, fmt, output, fail_on)


@app.command()
def explain(rule: str = typer.Argument(..., help="Rule id or slug, e.g. GD101 or train-batch-not-divisible.")) -> None:
    """The documentation of one rule: what it detects, why it happens, how to fix it."""
    try:
        meta = find_rule(rule)
    except CatalogError as e:
        raise _die(f"rule catalog: {e}")
    if meta is None:
        raise _die(f"no rule {rule!r}; list them with: grpo-doctor rules")
    lines = [f"{meta.id}  {meta.slug}", f"{meta.title}", "",
             f"category: {meta.category}    severity: {meta.severity.name}"
             + (f"    versions: {meta.versions}" if meta.versions else ""), "", meta.why, ""]
    if meta.fix:
        lines.append("Fix:")
        lines += [f"  - {f}" for f in meta.fix]
        lines.append("")
    if meta.examples:
        lines.append("Matches lines such as:")
        lines += [f"  {e}" for e in meta.examples[:5]]
        lines.append("")
    if meta.references:
        lines.append("References:")
        lines += [f"  - {r}" for r in meta.references]
    typer.echo("\n".join(lines).rstrip())


@app.command("rules")
def rules_cmd(fmt: ListFormat = typer.Option(ListFormat.text, "--format", "-f")) -> None:
    """The rule catalog."""
    try:
        catalog = load_catalog()
    except CatalogError as e:
        raise _die(f"rule catalog: {e}")
    if fmt is ListFormat.json:
        import json
        typer.echo(json.dumps([{
            "id": m.id, "slug": m.slug, "category": m.category, "severity": m.severity.name, "title": m.title,
            "why": m.why, "fix": list(m.fix), "references": list(m.references), "versions": m.versions,
            "kind": "check" if m.check else "pattern",
        } for m in catalog], indent=2, ensure_ascii=False))
        return
    for m in catalog:
        typer.echo(f"{m.id:8} {m.severity.name:8} {m.category:34} {m.slug}")


class OnHang(str, Enum):
    warn = "warn"
    stop = "stop"


@app.command(context_settings={"allow_interspersed_args": False})
def watch(
    command: list[str] = typer.Argument(..., help="The training command, after --: grpo-doctor watch -- swift rlhf ..."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where the console log, report and hang stacks go "
                                           "(default: the command's --output_dir, else ./output)."),
    report: Optional[Path] = typer.Option(None, "--report", help="JSON report path (default: RUN_DIR/grpo-doctor-report.json)."),
    startup_timeout: float = typer.Option(1800.0, "--startup-timeout", help="Seconds without any output before the "
                                          "first training step (launch, model and dataset load)."),
    hang_timeout: Optional[float] = typer.Option(None, "--hang-timeout", help="Seconds without progress between steps "
                                                 "(default: 5 x the slowest step seen, at least 300)."),
    phase_timeout: Optional[list[str]] = typer.Option(None, "--phase-timeout", help="PHASE=SECONDS for vllm-init, "
                                                      "first-step, eval, checkpoint-save, steady-floor (repeatable)."),
    on_hang: OnHang = typer.Option(OnHang.warn, "--on-hang", help="warn: report and keep waiting; stop: report, then "
                                   "SIGTERM the run's process group and SIGKILL after --grace."),
    grace: float = typer.Option(30.0, "--grace", help="Seconds between SIGTERM and SIGKILL when stopping."),
    force: bool = typer.Option(False, "--force", help="Launch even when preflight finds errors."),
    no_preflight: bool = typer.Option(False, "--no-preflight", help="Do not run preflight before launching."),
    gpu_interval: float = typer.Option(10.0, "--gpu-interval", help="Seconds between GPU samples (0: none)."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Run a training command unchanged and watch it live: same rules as analyze, plus hang, GPU, memory, disk and
    checkpoint watchdogs. Exit status: the command's own; 124 when watch stopped it (--on-hang stop); 2 when watch
    could not start it (bad options, preflight errors without --force, command not found)."""
    from .live.supervisor import EXIT_NOT_STARTED, WatchOptions, watch as run_watch
    from .live.watchdogs import Limits
    if not command:
        raise _die("watch needs a command after --, e.g. grpo-doctor watch -- swift rlhf --rlhf_type grpo ...")
    limits = Limits(startup=startup_timeout, steady=hang_timeout)
    for item in phase_timeout or ():
        name, _, value = item.partition("=")
        try:
            if name.strip() == "steady-floor":
                limits.steady_floor = float(value)
            else:
                limits.set(name.strip(), float(value))
        except ValueError as e:
            raise _die(f"--phase-timeout {item!r}: {e if 'phase' in str(e) else 'use PHASE=SECONDS'}")
    for name, v in (("--startup-timeout", startup_timeout), ("--grace", grace), ("--gpu-interval", gpu_interval)):
        if v < 0:
            raise _die(f"{name} must be >= 0")
    opts = WatchOptions(run_dir=str(run_dir) if run_dir else None, report=str(report) if report else None, limits=limits,
                        on_hang=on_hang.value, grace=grace, force=force, preflight=not no_preflight,
                        gpu_interval=gpu_interval)
    try:
        code = run_watch(list(command), opts)
    except Exception as e:  # noqa: BLE001
        if debug:
            raise
        typer.echo(f"grpo-doctor: internal error in watch: {type(e).__name__}: {e} (rerun with --debug and report it)",
                   err=True)
        code = EXIT_NOT_STARTED
    raise typer.Exit(code)


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"grpo-doctor {__version__}")
        raise typer.Exit(0)


def main() -> None:
    try:
        app(standalone_mode=True)
    except BrokenPipeError:  # `grpo-doctor analyze ... | head`
        try:
            sys.stdout.close()
        except Exception:  # noqa: BLE001
            pass
        os._exit(0)


if __name__ == "__main__":
    main()
