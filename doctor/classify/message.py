"""One message out of a pasted exception or log line: prefixes off, whitespace normalised.

Handles what pasted logs carry: ``[rank3]:`` and vLLM worker prefixes, timestamps, logger prefixes
(``[ERROR:swift]``, ``ERROR 05-12 10:00:00 [file.py:12]``, ``[2025-01-01 10:00:00,123] [WARNING]
[stage3.py:12:step]``, ``W0512 10:00:00.123 42 run.py:12]``, ``WARNING:root:``,
``file.py:12: UserWarning:``), a full traceback before the exception line, and a message hard-wrapped
over several lines or padded with runs of spaces.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from .. import lazyre
from ..sources.logtext import clean

_EXC = lazyre.compile(r"^((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Timeout)"
                  r"|AssertionError|StopIteration))(?::\s*(.*))?$", re.DOTALL)
_PREFIXES = [
    # [rank3]: (torchrun's per-rank prefix)
    (lazyre.compile(r"^\[rank\d+\]:\s?"), None),
    # (VllmWorker rank=1 pid=123) / (EngineCore_0 pid=42) / (RayWorkerWrapper pid=7, ip=10.0.0.1)
    (lazyre.compile(r"^\((?=[^)]*(?:pid=|rank=))[A-Za-z]\w*(?: rank=\d+)?(?: pid=\d+)?(?:, ip=[\d.]+)?\)\s+"), None),
    # [INFO:swift] / [ERROR:swift] / [WARNING:swift.llm]
    (lazyre.compile(r"^\[(ERROR|WARNING|WARN|CRITICAL|INFO|DEBUG):[\w.]+\]\s*"), 1),
    # ERROR 05-12 10:00:00 [file.py:12] (vLLM, also after a worker prefix)
    (lazyre.compile(r"^(ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./-]+:\d+\]\s*"), 1),
    # [2025-01-01 10:00:00,123] [WARNING] [stage3.py:12:step] (DeepSpeed)
    (lazyre.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\]\s*(?:\[(\w+)\]\s*)?(?:\[[\w./-]+:\d+(?::\w+)?\]\s*)?"), 1),
    # 2025-01-01 10:00:00,123 - name - WARNING - msg / 2025-01-01 10:00:00 WARNING msg
    (lazyre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?(?:\s*-\s*[\w.]+)?\s*-?\s*(?:(ERROR|WARNING|INFO|DEBUG|CRITICAL)\s*-?\s*)?"), 1),
    # W0512 10:00:00.123000 42 torch/distributed/run.py:12] (glog)
    (lazyre.compile(r"^([EWIF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\]\s*"), 1),
    # WARNING:root: / ERROR:swift.llm:
    (lazyre.compile(r"^(ERROR|WARNING|CRITICAL|INFO|DEBUG):[\w.]*:\s*"), 1),
    # [WARNING|trainer.py:123] 2025-01-01 10:00:00,123 >> (transformers example scripts)
    (lazyre.compile(r"^\[(ERROR|WARNING|INFO|DEBUG|CRITICAL)\|[\w./-]+:\d+\][^>]*>>\s*"), 1),
    # /path/file.py:12: UserWarning: msg
    (lazyre.compile(r"^\S+\.py:\d+:\s+(?=[A-Z]\w*(?:Warning|Error):)"), None),
]
_LEVEL = {"E": "error", "W": "warning", "I": "info", "F": "critical", "D": "debug", "C": "critical", "WARN": "warning"}
_WS = lazyre.compile(r"\s+")
_FENCE = lazyre.compile(r"^```[\w+-]*$")  # a markdown fence of a paste


class Message(NamedTuple):
    text: str                 # the message, whitespace runs collapsed to one space
    exc_type: str | None      # "ValueError", "torch.OutOfMemoryError", or None for a log line
    level: str | None         # "error"/"warning"/... read from a logger prefix, else None


def strip_line(line: str) -> tuple[str, str | None]:
    """One physical line without its rank, worker, timestamp and logger prefixes; and the level they named."""
    line = clean(line).strip()
    level = None
    if _FENCE.match(line):
        return "", None
    for _ in range(8):
        line = line.strip()
        for rx, grp in _PREFIXES:
            m = rx.match(line)
            if m and m.end():
                if grp and m.group(grp):
                    g = m.group(grp).upper()
                    level = _LEVEL.get(g, _LEVEL.get(g[:1], g.lower())) if len(g) <= 4 else g.lower()
                line = line[m.end():]
                break
        else:
            break
    return line, level


def _is_frame(line: str) -> bool:
    s = line.lstrip()
    return s.startswith(('File "', "Traceback (most recent call last)"))


def parse(text: str, exc_type: str | None = None) -> Message:
    """The message that ``text`` holds: the last exception line (with the lines that continue it) of a pasted
    traceback, or the whole text as one log message."""
    lines = [strip_line(raw) for raw in text.splitlines() if raw.strip()]
    lines = [(t, lv) for t, lv in lines if t]
    if not lines:
        return Message("", exc_type, None)
    start, etype = 0, exc_type
    if exc_type is None:
        for i in range(len(lines) - 1, -1, -1):
            m = _EXC.match(lines[i][0])
            if m and (m.group(2) is not None or i == len(lines) - 1):
                start, etype = i, m.group(1)
                break
    if start == 0 and etype is None and any(_is_frame(t) for t, _ in lines):
        start = max(i for i, (t, _) in enumerate(lines) if _is_frame(t)) + 1
        start = min(start, len(lines) - 1)
    body = [t for t, _ in lines[start:] if not _is_frame(t)]
    msg = _WS.sub(" ", " ".join(body)).strip()
    if etype is not None and exc_type is None:
        m = _EXC.match(msg)
        if m:
            msg = (m.group(2) or "").strip()
    elif exc_type is not None:
        m = _EXC.match(msg)
        if m and m.group(1).rsplit(".", 1)[-1] == exc_type.rsplit(".", 1)[-1]:
            msg = (m.group(2) or "").strip()
    level = next((lv for _, lv in lines[start:] if lv), None)
    return Message(msg, etype, level)
