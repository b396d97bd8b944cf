"""How text output meets the terminal: colour (--color auto|always|never, FORCE_COLOR, NO_COLOR) and width.

No rich here: the CLI decides, the text renderer draws.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

MODES = ("auto", "always", "never")


def color_wanted(mode: str, *, tty: bool, env: Mapping[str, str] | None = None, to_file: bool = False) -> bool:
    """``always``/``never`` decide; ``auto``: no colour into a file or with a non-empty NO_COLOR (no-color.org:
    an empty one does not count), colour with a non-empty FORCE_COLOR even when piped, else on a terminal."""
    if mode == "always":
        return True
    if mode == "never" or to_file:
        return False
    env = os.environ if env is None else env
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    return tty


def wrap_width(tty: bool, env: Mapping[str, str] | None = None) -> int | None:
    """The width to wrap text at: the terminal's (or COLUMNS when set), None (no wrapping) when piped, so that
    a saved or grepped report keeps one line per item."""
    env = os.environ if env is None else env
    if not tty and not env.get("COLUMNS", "").isdigit():
        return None
    return max(40, shutil.get_terminal_size((100, 40)).columns)


__all__ = ["MODES", "color_wanted", "wrap_width"]
