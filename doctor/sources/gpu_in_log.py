"""nvidia-smi tables pasted inside a log or an issue's text ("after setting CUDA_VISIBLE_DEVICES=0,1,2 nvidia-smi
outputs the following: +----..."): each table is read as a GPU snapshot of its own, its rows' lines those of the log.
A file that is a table alone is a GPU input (sources/kinds.py); this reads the tables among other lines of a paste."""
from __future__ import annotations

from dataclasses import replace

from .. import lazyre
from .gpu_model import GpuSample
from .gpu_table import parse_table

# a table's line, after what a paste puts before it (a markdown quote, a code block's indent)
_QUOTE = lazyre.compile(r"^[ \t]*(?:>[ \t]?)*")
# the date line nvidia-smi prints above its table
_DATE = lazyre.compile(r"^\s*\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4}\s*$")
MAX_TABLES = 8   # a paste of nvidia-smi every few seconds: the first ones are enough to read the GPUs' state


def _table_line(line: str) -> str | None:
    s = _QUOTE.sub("", line, count=1).rstrip()
    return s if s.startswith(("|", "+")) else None


def tables_in(lines: list[str]) -> list[list[GpuSample]]:
    """The GPU rows of every nvidia-smi table in ``lines`` (a paste's lines, in order), each row's ``line`` the
    1-based line of the paste it was read from. A block of "|"/"+" lines counts when it holds nvidia-smi's header or
    its memory column ("MiB /")."""
    out: list[list[GpuSample]] = []
    i = 0
    while i < len(lines) and len(out) < MAX_TABLES:
        if _table_line(lines[i]) is None:
            i += 1
            continue
        start = i
        block: list[str] = []
        while i < len(lines) and (t := _table_line(lines[i])) is not None:
            block.append(t)
            i += 1
        text = "\n".join(block)
        if "NVIDIA-SMI" not in text and "MiB /" not in text:
            continue
        dated = start > 0 and _DATE.match(lines[start - 1]) is not None
        head = [lines[start - 1].strip()] if dated else []
        try:
            samples = parse_table("\n".join(head + block))
        except (ValueError, IndexError):
            continue
        offset = start - len(head)
        rows = [replace(s, line=s.line + offset) if s.line is not None else s for s in samples]
        if rows:
            out.append(rows)
    return out


__all__ = ["MAX_TABLES", "tables_in"]
