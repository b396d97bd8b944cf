"""``grpo-doctor mcp``: the analysis served over the Model Context Protocol (stdio), for agents.

Tools (each returns the JSON report of schema 1, the text ``--format json`` prints, or a one-line error):

- ``analyze(paths, select, ignore)``: post-mortem of run directories or log files;
- ``explain(rule)``: the catalog entries of a rule id, prefix, slug or category (JSON, as ``rules --format json``),
  or for an error message, where it is raised and which rule handles it (text);
- ``preflight(command, gpu_mem, swift_version)``: a ``swift rlhf`` command line (or the path of an args.json);
- ``check_ckpt(paths, expect)``: the checkpoint gate.

The official MCP Python SDK (``pip install 'grpo-doctor[mcp]'``) is imported only when the server starts: mcp 2.x
(``mcp.server.mcpserver.MCPServer``) or 1.x (``mcp.server.fastmcp.FastMCP``). Nothing is written to standard
output but the protocol: the analysis never prints, and its few notes go to stderr.
"""
from __future__ import annotations

import functools
import shlex
from typing import Any

INSTALL = "grpo-doctor mcp needs the MCP Python SDK: pip install 'grpo-doctor[mcp]' (or pip install mcp)"

INSTRUCTIONS = (
    "grpo-doctor diagnoses failed ms-swift / TRL GRPO training runs from their logs, logging.jsonl, args.json, "
    "nvidia-smi snapshots and checkpoint folders. Every finding has a rule_id, category, severity, evidence lines, "
    "a fix computed from the run, an action (restart | resume | relaunch | stop), what to verify in the next run, "
    "and, when computable, the command to run. findings[0] is the one to act on first.")


class ToolError(ValueError):
    """A one-line message for the agent (the CLI's exit-2 errors)."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from .registry import CatalogError
    from .selectors import SelectorError
    from .settings import SettingsError
    from .sources.gpu_model import SnapshotError
    from .sources.inputs import InputError
    from .sources.swiftcmd import CommandError
    return (InputError, CommandError, SnapshotError, SelectorError, SettingsError, CatalogError, OSError)


def _report_json(build: Any) -> str:
    from .render import jsonr
    try:
        return jsonr.render(build())
    except _user_errors() as e:
        raise ToolError(str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def _selectors(values: list[str] | None) -> set[str] | None:
    return {v.strip() for x in values or () for v in x.split(",") if v.strip()} or None


def tool_analyze(paths: list[str], select: list[str] | None = None, ignore: list[str] | None = None) -> str:
    """Diagnose a GRPO run: run directories (logs, logging.jsonl, args.json, checkpoint-N/, nvidia-smi files) or log
    files. Returns the JSON report (schema 1)."""
    from .analyze import analyze
    if not paths:
        raise ToolError("analyze: give at least one run directory or log file")
    if "-" in paths:
        raise ToolError("analyze: standard input is the protocol here; pass files or run directories")
    return _report_json(lambda: analyze(list(paths), _selectors(select), _selectors(ignore)))


def tool_explain(rule: str) -> str:
    """Explain a rule (id GD101, prefix GD1, slug or category): its catalog entries as JSON, with action, verify and
    prevent. Given an error message instead ("ValueError: ..."): where it is raised and which rule handles it."""
    from .catalog_view import explain_rules, rules_json
    from .selectors import SelectorError
    try:
        return rules_json(explain_rules(rule))
    except SelectorError as e:
        from .classify.explain import explain_text
        text = explain_text(rule) if len(rule.strip()) >= 8 and " " in rule.strip() else None
        if text is None:
            raise ToolError(str(e)) from None
        return text


def tool_preflight(command: str | list[str], gpu_mem: float | None = None, swift_version: str | None = None,
                   select: list[str] | None = None, ignore: list[str] | None = None) -> str:
    """Check a `swift rlhf ...` command line (a string or its argv) or the path of an args.json before any GPU
    time: argument errors, batch divisibility, GPU layout, lengths, disk, memory plan. Returns the JSON report."""
    from .preflight import preflight_args_json, preflight_command
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise ToolError("preflight: give a swift rlhf command line or the path of an args.json")
    opts: dict[str, Any] = dict(gpu_mem_gib=gpu_mem, select=_selectors(select), ignore=_selectors(ignore),
                                swift_version=swift_version)
    if len(argv) == 1 and argv[0].endswith(".json"):
        return _report_json(lambda: preflight_args_json(argv[0], **opts))
    return _report_json(lambda: preflight_command(argv, **opts))


def tool_check_ckpt(paths: list[str], expect: str | None = None) -> str:
    """Check checkpoints from their files alone (sizes, safetensors headers, index, adapter config): truncated,
    adapter-only where full weights were meant, bloat, disk. expect: "full" or "lora". Returns the JSON report."""
    from .ckpt import check_paths
    if expect not in (None, "full", "lora"):
        raise ToolError(f"check_ckpt: expect is 'full' or 'lora', not {expect!r}")
    if not paths:
        raise ToolError("check_ckpt: give at least one checkpoint or run directory")
    return _report_json(lambda: check_paths(list(paths), expect=expect))


TOOLS = {"analyze": tool_analyze, "explain": tool_explain, "preflight": tool_preflight, "check_ckpt": tool_check_ckpt}


def build_server() -> Any:
    """The MCP server with the four tools. Raises ImportError (with INSTALL) when the SDK is missing."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x
        except ImportError:
            raise ImportError(INSTALL) from None
    try:
        from mcp.server.mcpserver.exceptions import ToolError as SdkToolError
    except ImportError:
        from mcp.server.fastmcp.exceptions import ToolError as SdkToolError
    from . import __version__
    try:
        server = Server("grpo-doctor", instructions=INSTRUCTIONS, version=__version__)
    except TypeError:  # 1.x has no version argument
        server = Server("grpo-doctor", instructions=INSTRUCTIONS)
    for name, fn in TOOLS.items():
        server.tool(name=name, description=fn.__doc__)(_sdk_errors(fn, SdkToolError))
    return server


def _sdk_errors(fn: Any, sdk_error: type[Exception]) -> Any:
    """``fn`` with its one-line errors raised as the SDK's ToolError: the agent gets the message as an error result
    (any other exception is a crash, which the SDK reports without its text)."""
    @functools.wraps(fn)
    def run(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except ToolError as e:
            raise sdk_error(str(e)) from None
    return run


__all__ = ["INSTALL", "TOOLS", "ToolError", "build_server"]
