"""Thin typer commands: parse, call, render, return an exit code (``doctor.cli.main`` is the entry point).

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
from .cliutil import (
    Color,
    Command,
    FailOn,
    Format,
    ListFormat,
    color_opt,
    complete_rule,
    config_opt,
    die,
    fail_on_opt,
    fmt_opt,
    isolated_opt,
    no_color_opt,
    plain,
    quiet_opt,
    report_and_exit,
    select_opt,
    settings,
    split_selectors,
    wants_series,
)
from .fleet.cli import fleet_app
from .registry import CatalogError

# rich_markup_mode=None: plain click help and usage errors, so start-up never imports rich (only the text
# renderer does); the commands, options and exit codes are the same
app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Names the failure of an ms-swift GRPO run, shows the evidence lines and prints the fix "
                       "computed from the run's own numbers.")


@app.command(cls=Command)
def analyze(
    paths: list[str] = typer.Argument(..., metavar="PATHS...", help="Run directory, log file(s), or - for standard input."),
    fmt: Optional[Format] = fmt_opt(),
    fail_on: Optional[FailOn] = fail_on_opt(),
    select: Optional[list[str]] = select_opt("--select", "Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = select_opt("--ignore", "Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    config: Optional[Path] = config_opt(),
    isolated: bool = isolated_opt(),
    color: Color = color_opt(),
    no_color: bool = no_color_opt(),
    quiet: bool = quiet_opt(),
    series: bool = typer.Option(False, "--series", help="JSON format: add the run's downsampled metric and GPU "
                                "series (the curves of --format html) as \"series\"."),
    open_html: bool = typer.Option(False, "--open", help="With --format html: open the written report in the "
                                   "browser."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Post-mortem of a GRPO run: what failed, the evidence, the fix.

    Examples:

    \b
      grpo-doctor analyze output/v0-20250101-120000
      grpo-doctor analyze train.log --format markdown > report.md
      tail -n 300 train.log | grpo-doctor analyze -
      grpo-doctor analyze output/ --select GD1 --fail-on warning
      grpo-doctor analyze output/v0-20250101-120000 --format html -o report.html
    """
    from .analyze import analyze as run_analyze
    if "-" in paths and sys.stdin.isatty():  # a terminal waits for typing: say so, not a silent hang
        typer.echo("grpo-doctor: reading standard input (Ctrl-D to end)", err=True)
    o = settings(config, isolated, format=fmt, fail_on=fail_on, select=select, ignore=ignore)
    curves = wants_series(o.fmt, series, quiet, output)
    report_and_exit(lambda: run_analyze(paths, split_selectors(o.select), split_selectors(o.ignore, "--ignore"),
                                        series=curves),
                    f"while analysing {' '.join(paths)}", debug, o.fmt, output, o.fail_on,
                    progress=not ("-" in paths and sys.stdin.isatty()), color=plain(color, no_color),  # no spinner over a terminal's typing
                    quiet=quiet, open_html=open_html, config=o.config)


@app.command(cls=Command, context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             options_metavar="[OPTIONS] -- COMMAND... | ARGS.JSON")
def preflight(
    ctx: typer.Context,
    fmt: Optional[Format] = fmt_opt(),
    fail_on: Optional[FailOn] = fail_on_opt(),
    gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="Memory of one training GPU in GiB (default: "
                                            "from --gpu-snapshot, else live NVML, else no fit verdict)."),
    gpu_snapshot: Optional[Path] = typer.Option(None, "--gpu-snapshot", help="A saved nvidia-smi output (table, -q "
                                                "or --query-gpu CSV) of the machine the run will use."),
    swift_version: Optional[str] = typer.Option(None, "--swift-version", help="Check against this ms-swift version "
                                                "(default: the installed one, else 4.6)."),
    select: Optional[list[str]] = select_opt("--select", "Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = select_opt("--ignore", "Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    config: Optional[Path] = config_opt(),
    isolated: bool = isolated_opt(),
    color: Color = color_opt(),
    no_color: bool = no_color_opt(),
    quiet: bool = quiet_opt(),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Check a swift rlhf command (after --) or an args.json before any GPU time: argument errors, batch
    divisibility, GPU layout, load_args, lengths, disk, and a memory plan.

    Examples:

    \b
      grpo-doctor preflight -- swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct --num_generations 8
      grpo-doctor preflight --gpu-mem 80 -- swift rlhf --rlhf_type grpo ...
      grpo-doctor preflight output/v0-20250101-120000/args.json
    """
    from .preflight import preflight_args_json, preflight_command
    from .sources.gpu import SnapshotError
    from .sources.swiftcmd import CommandError
    argv = list(ctx.args)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise die("preflight: give the command after --, e.g. grpo-doctor preflight -- swift rlhf --rlhf_type grpo "
                   "..., or the path of an args.json")
    snap = str(gpu_snapshot) if gpu_snapshot else None
    o = settings(config, isolated, format=fmt, fail_on=fail_on, select=select, ignore=ignore, gpu_mem=gpu_mem)
    opts = dict(gpu_mem_gib=o.gpu_mem, gpu_snapshot=snap, select=split_selectors(o.select), ignore=split_selectors(o.ignore, "--ignore"),
                swift_version=swift_version)

    def build():
        try:
            if len(argv) == 1 and argv[0].endswith(".json") and not argv[0].startswith("-"):
                if not Path(argv[0]).is_file():
                    raise die(f"{argv[0]}: no such file; pass the args.json of a run or a swift rlhf command after --")
                return preflight_args_json(argv[0], **opts)
            return preflight_command(argv, **opts)
        except OSError as e:
            raise die(f"{e.filename or 'input'}: cannot read ({e.strerror}); check the path")
    report_and_exit(build, "in preflight", debug, o.fmt, output, o.fail_on, (CommandError, SnapshotError),
                    color=plain(color, no_color), quiet=quiet, config=o.config)


class Expect(str, Enum):
    full = "full"
    lora = "lora"


@app.command("check-ckpt", cls=Command)
def check_ckpt(
    paths: list[str] = typer.Argument(..., metavar="PATHS...", help="Checkpoint directories, files inside them, or run "
                                      "directories."),
    expect: Optional[Expect] = typer.Option(None, "--expect", help="What the checkpoint must hold: full weights or a LoRA adapter."),
    fmt: Optional[Format] = fmt_opt(),
    fail_on: Optional[FailOn] = fail_on_opt(),
    select: Optional[list[str]] = select_opt("--select", "Only these rule ids, slugs or categories."),
    ignore: Optional[list[str]] = select_opt("--ignore", "Skip these rule ids, slugs or categories."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    config: Optional[Path] = config_opt(),
    isolated: bool = isolated_opt(),
    color: Color = color_opt(),
    no_color: bool = no_color_opt(),
    quiet: bool = quiet_opt(),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Checkpoint gate (also the pre-commit hook): adapter-only saves, corrupt files, bloat, disk space.

    Examples:

    \b
      grpo-doctor check-ckpt output/v0-20250101-120000/checkpoint-500
      grpo-doctor check-ckpt output/ --expect full
      grpo-doctor check-ckpt checkpoint-500 --format json
    """
    from .ckpt import check_paths
    o = settings(config, isolated, format=fmt, fail_on=fail_on, select=select, ignore=ignore)
    report_and_exit(lambda: check_paths(paths, expect=expect.value if expect else None,
                                        select=split_selectors(o.select), ignore=split_selectors(o.ignore, "--ignore")),
                    f"while checking {' '.join(paths)}", debug, o.fmt, output, o.fail_on, color=plain(color, no_color),
                    quiet=quiet, config=o.config)


@app.command(cls=Command)
def explain(rule: str = typer.Argument(..., metavar="RULE", autocompletion=complete_rule, help="What --select takes: a rule id (GD101), an id "
                                       "prefix (GD1), a slug or a category (cuda-oom); or an error message "
                                       "(\"ValueError: ...\") to see where it is raised and which rule handles it.")) -> None:
    """The documentation of a rule (or of every rule a prefix or category names): what it detects, why it
    happens, how to fix it. Given an error message instead: where ms-swift, trl, vLLM, DeepSpeed, ... raise it,
    in which versions, and the rule that handles it.

    Examples:

    \b
      grpo-doctor explain GD101
      grpo-doctor explain train-batch-not-divisible
      grpo-doctor explain cuda-oom
      grpo-doctor explain "ValueError: generation_batch_size (12) must be divisible by num_generations (8)."
    """
    from .catalog_view import explain_rules, explain_text
    from .selectors import SelectorError
    try:
        metas = explain_rules(rule)
    except SelectorError as e:
        from .classify.explain import explain_text as explain_message
        text = explain_message(rule) if len(rule.strip()) >= 8 and " " in rule.strip() else None
        if text is None:
            raise die(str(e))
        typer.echo(text)
        return
    except CatalogError as e:
        raise die(f"rule catalog: {e}")
    typer.echo(f"\n\n{'-' * 72}\n\n".join(explain_text(m) for m in metas))


@app.command("rules", cls=Command)
def rules_cmd(
    fmt: ListFormat = typer.Option(ListFormat.text, "--format", "-f"),
    category: Optional[list[str]] = typer.Option(None, "--category", "-c", help="Only rules of this category "
                                                 "(repeatable)."),
    select: Optional[list[str]] = select_opt("--select", "Only these rule ids, prefixes, slugs or categories, as "
                                             "analyze --select."),
    known_issues: bool = typer.Option(False, "--known-issues", help="Print the size, date and sources of the "
                                      "known-issues index (public threads matched to findings) instead."),
) -> None:
    """The rule catalog: id, severity, category and slug of each rule, under a header.

    Examples:

    \b
      grpo-doctor rules
      grpo-doctor rules --category cuda-oom
      grpo-doctor rules --select GD1 --format json
      grpo-doctor rules --known-issues
    """
    if known_issues:
        from .known import index_summary
        typer.echo(index_summary())
        return
    from .catalog_view import filter_rules, rules_json, rules_text
    from .selectors import SelectorError, split
    try:
        metas = filter_rules(split(category), split(select))
    except SelectorError as e:
        raise die(str(e))
    except CatalogError as e:
        raise die(f"rule catalog: {e}")
    typer.echo(rules_json(metas) if fmt is ListFormat.json else rules_text(metas))


@app.command("schema", cls=Command)
def schema_cmd() -> None:
    """The JSON Schema (draft 2020-12) of the --format json report, schema_version 1.

    Examples:

    \b
      grpo-doctor schema > grpo-doctor-report.schema.json
    """
    from .render.jsonr import schema_text
    typer.echo(schema_text(), nl=False)


@app.command("mcp", cls=Command)
def mcp_cmd() -> None:
    """Serve analyze, explain, preflight and check-ckpt to agents over the Model Context Protocol (stdio):
    each tool returns the JSON report. Needs the MCP Python SDK: pip install 'grpo-doctor[mcp]'.

    Examples:

    \b
      grpo-doctor mcp 2> grpo-doctor-mcp.log
      claude mcp add grpo-doctor -- grpo-doctor mcp
    """
    from .mcp_server import build_server
    try:
        server = build_server()
    except ImportError as e:
        raise die(str(e))
    server.run()


class OnHang(str, Enum):
    warn = "warn"
    stop = "stop"


@app.command(cls=Command, context_settings={"allow_interspersed_args": False})
def watch(
    command: list[str] = typer.Argument(..., metavar="-- COMMAND...", help="The training command, after --: "
                                        "grpo-doctor watch -- swift rlhf ..."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Where the console log, report and hang stacks go "
                                           "(default: the command's --output_dir, else ./output)."),
    report: Optional[Path] = typer.Option(None, "--report", help="JSON report path (default: RUN_DIR/grpo-doctor-report.json)."),
    startup_timeout: float = typer.Option(1800.0, "--startup-timeout", help="Seconds without any output before the "
                                          "first training step (launch, model and dataset load)."),
    hang_timeout: Optional[float] = typer.Option(None, "--hang-timeout", help="Seconds without progress between steps "
                                                 "(default: 5 x the slowest step seen, at least 300); a silent checkpoint save: 3 x this, "
                                                 "at most 1800."),
    phase_timeout: Optional[list[str]] = typer.Option(None, "--phase-timeout", help="PHASE=SECONDS for vllm-init, "
                                                      "first-step, eval, checkpoint-save, teardown, steady-floor (repeatable)."),
    on_hang: OnHang = typer.Option(OnHang.warn, "--on-hang", help="warn: report and keep waiting; stop: report, then "
                                   "SIGTERM the run's process group and SIGKILL after --grace."),
    grace: float = typer.Option(30.0, "--grace", help="Seconds between SIGTERM and SIGKILL when stopping."),
    force: bool = typer.Option(False, "--force", help="Launch even when preflight finds errors."),
    no_preflight: bool = typer.Option(False, "--no-preflight", help="Do not run preflight before launching."),
    gpu_interval: float = typer.Option(10.0, "--gpu-interval", help="Seconds between GPU samples (0: none)."),
    drain: float = typer.Option(30.0, "--drain", help="After the command exits, seconds to wait for output from the "
                                "rest of its process group."),
    keep_launches: int = typer.Option(0, "--keep-launches", help="Keep only the newest N earlier launches' console "
                                      "logs and reports in the run folder (0: keep all)."),
    on_failure: str = typer.Option("stop", "--on-failure", help="stop: report and exit; restart: relaunch on a "
                                   "transient failure (restart verdict); resume: also relaunch with "
                                   "--resume_from_checkpoint when a checkpoint exists."),
    max_restarts: int = typer.Option(3, "--max-restarts", help="At most this many relaunches."),
    restart_backoff: float = typer.Option(30.0, "--restart-backoff", help="Seconds before the first relaunch, "
                                          "doubled each time."),
    notify: Optional[str] = typer.Option(None, "--notify", help="Webhook URL: POST {\"text\": ...} (Slack and most "
                                         "chat incoming webhooks) on the first error, a hang and the end of the run."),
    notify_cmd: Optional[str] = typer.Option(None, "--notify-cmd", help="Run this command with the report path as its "
                                             "last argument on the same events."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks of internal errors."),
) -> None:
    """Run a training command unchanged and watch it live: same rules as analyze, plus hang, GPU, memory, disk and
    checkpoint watchdogs. Exit status: the command's own; 124 when watch stopped it (--on-hang stop); 2 when watch
    could not start it (bad options, preflight errors without --force, command not found).

    Examples:

    \b
      grpo-doctor watch -- swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct ...
      grpo-doctor watch --on-hang stop --hang-timeout 900 -- bash train.sh
    """
    from .live.command import run
    raise typer.Exit(run(list(command), run_dir=run_dir, report=report, startup_timeout=startup_timeout,
                         hang_timeout=hang_timeout, phase_timeout=phase_timeout, on_hang=on_hang.value, grace=grace,
                         force=force, no_preflight=no_preflight, gpu_interval=gpu_interval, drain=drain,
                         keep_launches=keep_launches, on_failure=on_failure, max_restarts=max_restarts,
                         restart_backoff=restart_backoff, notify=notify, notify_cmd=notify_cmd, debug=debug))


app.add_typer(fleet_app, name="fleet")


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"grpo-doctor {__version__}")
        raise typer.Exit(0)


def main() -> None:
    try:
        app(standalone_mode=True, prog_name="grpo-doctor")
    except BrokenPipeError:  # `grpo-doctor analyze ... | head`
        try:
            sys.stdout.close()
        except Exception:  # noqa: BLE001
            pass
        os._exit(0)
