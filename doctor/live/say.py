"""Doctor messages during `watch`: stderr only, one prefix, never mixed into the child's stdout."""
from __future__ import annotations

import os

PREFIX = "[grpo-doctor] "


def say(text: str) -> None:
    data = "".join(PREFIX + line + "\n" for line in text.rstrip("\n").split("\n")).encode("utf-8", "replace")
    try:
        while data:
            n = os.write(2, data)
            data = data[n:]
    except OSError:
        pass
