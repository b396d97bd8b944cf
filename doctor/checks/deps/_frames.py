"""Where in a traceback an import or a call came from: the importing frame, library vs user code, short paths."""
from __future__ import annotations

from ...signals import ExceptionInfo, Frame


def importer(exc: ExceptionInfo | None) -> Frame | None:
    if exc is None or not exc.frames:
        return None
    return exc.frames[-1]


def is_lib(path: str) -> bool:
    return any(m in path for m in ("site-packages", "dist-packages", "/lib/python3", "\\Lib\\"))


def short_path(path: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path
