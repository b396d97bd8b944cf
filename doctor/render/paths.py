"""Where evidence is, said without the user's machine: paths relative to the run directory (markdown, SARIF,
GitHub annotations). The run directory is the deepest folder all of a report's inputs share; pseudo-inputs
(``<stdin>``, ``<preflight>``, ``<memory plan>``, ``<command>``) are no files and keep their names."""
from __future__ import annotations

import os
from urllib.parse import quote

from ..model import Report


def is_pseudo(path: str) -> bool:
    """``<stdin>``, ``<preflight>``...: a name for something that is no file."""
    return not path or (path.startswith("<") and path.endswith(">"))


def run_base(report: Report) -> str | None:
    """The run directory the report's inputs share (their deepest common folder; a ``checkpoint-N`` input counts as
    a folder of it), None when no input is a file (standard input, a preflight command)."""
    dirs = []
    for i in report.inputs:
        if is_pseudo(i.path):
            continue
        p = os.path.normpath(i.path)
        dirs.append(os.path.dirname(p))
    if not dirs or len({os.path.isabs(d) for d in dirs}) != 1:
        return None
    try:
        return os.path.commonpath(dirs)
    except ValueError:
        return None


def rel_path(path: str, base: str | None) -> str:
    """``path`` relative to ``base`` when inside it; an absolute path outside it keeps its last part only."""
    if is_pseudo(path):
        return path
    norm = os.path.normpath(path)
    if base is not None:
        if base in ("", "."):
            return norm if not os.path.isabs(norm) else os.path.basename(norm)
        if norm == base:
            return "."
        if norm.startswith(base.rstrip(os.sep) + os.sep):
            return os.path.relpath(norm, base)
    return os.path.basename(norm) if os.path.isabs(norm) else norm


def rel_uri(path: str, base: str | None) -> str:
    """A relative URI reference (RFC 3986) for ``path`` under ``base``: '/'-separated, every byte outside the
    unreserved set percent-encoded (spaces, '#', '%', ':', non-ASCII as UTF-8, undecodable name bytes as they were),
    never starting with '/' or '..'."""
    rel = rel_path(path, base).replace(os.sep, "/")
    parts = [p for p in rel.split("/") if p not in ("", ".", "..")] or ["."]
    return "/".join(quote(p.encode("utf-8", "surrogateescape"), safe="") for p in parts)
