"""The plumbing of the report commands (analyze, preflight, check-ckpt): shared options, project defaults,
selectors, rendering, the exit status and its note, and the one-line errors (exit 2, never a traceback)."""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperCommand

from .model import Report, Severity
from .registry import CatalogError
from .sources.inputs import InputError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class Command(TyperCommand):
    """Usage lines as people write them (PATHS..., -- COMMAND...), not typer's {paths}..."""

    def collect_usage_pieces(self, ctx):
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in super().collect_usage_pieces(ctx)]


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"
    github = "github"  # GitHub Actions annotations (::error file=...,line=...::)
    html = "html"


class FailOn(str, Enum):
    warning = "warning"
    error = "error"
    never = "never"


class ListFormat(str, Enum):
    text = "text"
    json = "json"


def fmt_opt():
    return typer.Option(None, "--format", "-f", help="Output format (html: one self-contained page with the run's "
                        "curves) [default: text, or format in [tool.grpo-doctor]].")


def wants_series(fmt: Format, series: bool, quiet: bool, output: Optional[Path]) -> bool:
    """Whether to record the run's curves: for html, for json --series, and for the sparklines of a text report
    on a terminal (never for piped text: its output and its speed stay as they were)."""
    if fmt is Format.html or (series and fmt is Format.json):
        return True
    return fmt is Format.text and not quiet and output is None and sys.stdout.isatty()


def fail_on_opt():
    return typer.Option(None, "--fail-on", help="Exit 1 when a finding is at or above this; never: always exit 0 "
                        "[default: error].")


def config_opt():
    return typer.Option(None, "--config", help="Read the defaults from this file ([tool.grpo-doctor] of a "
                        "pyproject.toml, or the keys at the top level) instead of the pyproject.toml found in the "
                        "current directory or above it, or the user's ~/.config/grpo-doctor/config.toml (never one "
                        "found beside the analysed files).")


def isolated_opt():
    return typer.Option(False, "--isolated", help="Ignore every configuration file.")


def settings(config: Optional[Path], isolated: bool, **given):
    """Command line over the configuration file over the defaults: a namespace of fmt, fail_on, select, ignore,
    gpu_mem and config (the file used, None for none). Runs before report_and_exit: every failure here is a
    SettingsError, one line and exit 2."""
    from types import SimpleNamespace

    from .settings import SettingsError, load, merge
    try:
        path, found = load(str(config) if config else None, isolated)
    except SettingsError as e:
        raise die(str(e))
    o = merge({k: (v.value if isinstance(v, Enum) else v) for k, v in given.items()}, found,
              {"format": "text", "fail_on": "error"})
    return SimpleNamespace(fmt=Format(o["format"]), fail_on=FailOn(o["fail_on"]), select=o.get("select"),
                           ignore=o.get("ignore"), gpu_mem=o.get("gpu_mem"), config=path)


def die(msg: str) -> typer.Exit:
    from .render.safe import clean  # file names and exception text: no escape sequence reaches the terminal
    typer.echo(f"grpo-doctor: {clean(msg)}", err=True)
    return typer.Exit(EXIT_USAGE)


def split_selectors(values: Optional[list[str]], option: str = "--select") -> set[str] | None:
    """Selectors as typed; an unknown one is a usage error here, before any input is read."""
    from .selectors import SelectorError, expand, split
    out = split(values)
    try:
        for token in out or ():
            expand(token, option=option)
    except SelectorError as e:
        raise die(str(e))
    except CatalogError as e:
        raise die(f"rule catalog: {e}")
    return out


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


def color_opt():
    return typer.Option(Color.auto, "--color", help="Colour in text output: auto (on a terminal; FORCE_COLOR forces "
                        "it when piped, a non-empty NO_COLOR turns it off), always, never.")


def complete_rule(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of what --select, --ignore and explain take: rule ids (with their title), slugs, categories."""
    try:
        from .registry import load_catalog
        metas = load_catalog()
    except Exception:  # noqa: BLE001 - a broken catalog must not break the user's shell
        return []
    low = incomplete.lower()
    out: dict[str, str] = {}
    for m in metas:
        for name, what in ((m.id, m.title), (m.slug, m.id), (m.category, "category")):
            if name.lower().startswith(low):
                out.setdefault(name, what)
    return sorted(out.items())


def select_opt(option: str, text: str):
    return typer.Option(None, option, help=text, autocompletion=complete_rule)


def no_color_opt():
    # the spelling ruff, pytest and many others take: the same as --color never
    return typer.Option(False, "--no-color", help="Same as --color never.")


def plain(color: Color, no_color: bool) -> Color:
    return Color.never if no_color else color


def quiet_opt():
    return typer.Option(False, "--quiet", "-q", help="Text format: one line per finding (path:line: RULE severity "
                        "title), nothing else; the exit status tells the rest.")


def render_report(report: Report, fmt: Format, color: bool, width: Optional[int] = None, quiet: bool = False,
                  code: Optional[int] = None, spark: bool = False) -> str:
    if fmt is Format.html:
        from .render import html
        return html.render(report)
    if fmt is Format.json:
        from .render import jsonr
        return jsonr.render(report)
    if fmt is Format.markdown:
        from .render import markdown
        return markdown.render(report)
    if fmt is Format.sarif:
        from .render import sarif
        return sarif.render(report, exit_code=code)
    if fmt is Format.github:
        from .render import github
        return github.render(report)
    from .render import text
    return text.render(report, color=color, width=width, quiet=quiet, spark=spark)


def exit_code(report: Report, fail_on: FailOn) -> int:
    if fail_on is FailOn.never:
        return EXIT_OK
    threshold = Severity[fail_on.value]
    return EXIT_FINDINGS if any(f.severity >= threshold for f in report.findings) else EXIT_OK


def exit_note(report: Report, fail_on: FailOn, width: Optional[int] = None) -> str:
    """The last line of a text report that exits 1: what the status means (the quick start's question)."""
    threshold = Severity[fail_on.value]
    n = sum(1 for f in report.findings if f.severity >= threshold)
    note = f"exit 1: {n} finding(s) at or above --fail-on {fail_on.value} (0: none; 2: usage error or unreadable input)"
    if width:
        import textwrap
        note = textwrap.fill(note, width, subsequent_indent="        ")
    return note + "\n"


def emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        if hasattr(sys.stdout, "reconfigure"):  # an ASCII-only locale: escape what it cannot show, never crash
            sys.stdout.reconfigure(errors="backslashreplace")
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from .report_file import write_atomic
    try:
        write_atomic(output, text)
    except OSError as e:
        raise die(f"{output}: cannot write the report ({e.strerror}); choose another --output path")


def report_and_exit(build, what: str, debug: bool, fmt: Format, output: Optional[Path], fail_on: FailOn,
                    user_errors: tuple[type[BaseException], ...] = (), progress: bool = True,
                    color: Color = Color.auto, quiet: bool = False, open_html: bool = False,
                    config: Optional[Path] = None) -> None:
    """Run ``build()`` (which returns a Report), turn every failure into one line and exit 2, else render the
    report and exit 0 or 1 by --fail-on. ``what`` names the input in the internal-error line and the progress
    shown on a terminal when the work takes more than ~1 s (text and markdown formats only). An HTML report goes
    to a file: ``output``, or grpo-doctor-report.html when stdout is a terminal; its path and one line are said on
    stderr (``open_html``: and it opens in the browser). ``config``: the configuration file used, named in the
    report."""
    from .progress import spinner
    html_file = None
    if fmt is Format.html:
        from .report_file import DEFAULT_HTML
        if output is None and sys.stdout.isatty():
            output = Path(DEFAULT_HTML)
        html_file = output
    try:
        label = "grpo-doctor: " + what.removeprefix("while ").removeprefix("in ")
        with spinner(label, progress and not quiet and fmt in (Format.text, Format.markdown)):
            report = build()
        if config is not None:
            report.config = str(config)
        # rendering is inside the error path too: a value no renderer expected costs one line and exit 2, never a
        # traceback (render.safe already writes NaN/inf and undecodable names validly)
        from .console import color_wanted, wrap_width
        code = exit_code(report, fail_on)
        tty = output is None and sys.stdout.isatty()
        width = wrap_width(tty) if output is None else None
        text = render_report(report, fmt, color_wanted(color.value, tty=tty, to_file=output is not None), width,
                             quiet, code, spark=tty)
    except (InputError, *user_errors) as e:
        raise die(str(e))
    except CatalogError as e:
        raise die(f"rule catalog: {e}")
    except KeyboardInterrupt:
        raise typer.Exit(130)
    except typer.Exit:
        raise
    except Exception as e:  # noqa: BLE001 - the contract is one line and exit 2, never a traceback
        if debug:
            raise
        raise die(f"internal error {what}: {type(e).__name__}: {e} (rerun with --debug and report it)")
    if fmt is Format.text and code == EXIT_FINDINGS and not quiet:
        text += exit_note(report, fail_on, width)
    emit(text, output)
    if html_file is not None:
        from .report_file import announce
        announce(html_file, report, open_html)
    raise typer.Exit(code)
