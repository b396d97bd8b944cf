"""Doctor messages during `watch`: stderr only, one prefix, never mixed into the child's stdout. Each line goes
through render.safe.clean: finding messages and paths come from the run's output and must not reach the terminal
as escape sequences."""
from __future__ import annotations

import os

from ..render.safe import clean

PREFIX = "[grpo-doctor] "


def say(text: str) -> None:
    data = "".join(PREFIX + clean(line) + "\n" for line in text.rstrip("\n").split("\n")).encode("utf-8", "replace")
    try:
        while data:
            n = os.write(2, data)
            data = data[n:]
    except OSError:
        pass
