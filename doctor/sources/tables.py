"""Metric tables pasted as text: a markdown table (``| step | loss | reward_std |``), or the same columns separated by
tabs, commas or aligned with spaces (a wandb or TensorBoard table copied from the browser, a CSV export), one row per
logged step. Column names are the trainer's metric keys, wandb's ``train/`` prefix removed (transformers 5.19.0
integrations/integration_utils.py ``rewrite_logs``: ``train/reward_std`` is ``reward_std``, ``eval/loss`` is
``eval_loss``; ``Step``, ``global_step`` and ``train/global_step`` are the step).

Read from the tail of a log input (the last ``engine.state.TAIL`` lines the state keeps), only when that input gave
no metric row of its own: a pasted excerpt holds a table or printed dicts, not both. Nothing is evaluated: a cell is a
number (``nan`` and ``inf`` included) or the row is not a metrics row.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import lazyre
from ..signals import LogLine, Metrics
from . import metrics as msrc
from .prose_text import is_prose

_STEP_NAMES = {"step", "global_step", "_step", "steps"}
# a markdown separator row, or an ASCII box's rule with "+" joints (rich's ASCII tables, psql, prettytable)
_SEP_ROW = lazyre.compile(r"^\s*[|+]?\s*:?-{2,}:?\s*(?:[|+]\s*:?-{2,}:?\s*)*[|+]?\s*$")
_SPACES = lazyre.compile(r"\s{2,}|\t")
MIN_KEYS = 2   # a header needs two trainer keys (metrics.TRAINER_KEYS), as a printed dict does
# what a paste or a collector put in front of every row: a quote ("> "), Ray's worker prefix ("(WorkerDict pid=7) "),
# a container runtime's timestamp ("2025-05-10T01:02:03.123Z "); taken off the rows when the header had it too
_LEAD = lazyre.compile(r"^(?:\s*>[ ]?|\((?:\w+ )?(?:rank=\d+ )?pid=\d+(?:, ip=[\d.]+)?\)[ \t]|"
                   r"\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?[ \t]+)+")


# a table drawn with box characters (rich's Table, tabulate's "fancy_grid"): its bars are separators, its rules rows
_BOX_BARS = str.maketrans({"│": "|", "┃": "|", "║": "|", "┆": "|", "┊": "|"})
_BOX_RULE = lazyre.compile(r"^\s*[\ufffd━─═┄┈╌┼╇╪╋┿╂┡┩├┤┝┥┞┦╞╡╟╢┌┐└┘┏┓┗┛╔╗╚╝╭╮╰╯┬┴┳┻╤╧┯┷+|\s-]+$")


def _cells(text: str) -> list[str]:
    s = text.strip()
    if not s.isascii():
        s = s.translate(_BOX_BARS)
    if "|" in s:
        return [c.strip() for c in s.strip("|").split("|")]
    if "\t" in s:
        return [c.strip() for c in s.split("\t")]
    if "," in s and " " not in s.replace(", ", ","):
        return [c.strip() for c in s.split(",")]
    return [c for c in (_SPACES.split(s) if _SPACES.search(s) else s.split()) if c]


# transformers' notebook progress table (utils/notebook.py NotebookProgressCallback: "Step", "Training Loss",
# "Validation Loss", then the logged keys), as Jupyter and Colab show it in unsloth's and trl's notebooks
_NOTEBOOK_NAMES = {"Training Loss": "loss", "Validation Loss": "eval_loss"}


def _key(cell: str) -> str:
    k = cell.strip().strip("`*").strip()
    k = _NOTEBOOK_NAMES.get(k, k)
    if " / " in k:  # a header cell wrapped in an HTML table copies as "rewards / name"
        k = k.replace(" / ", "/")
    if k.startswith("train/"):   # wandb's names of the trainer's keys (transformers' rewrite_logs)
        k = k[len("train/"):]
    elif k.startswith("eval/"):
        k = "eval_" + k[len("eval/"):]
    return "step" if k.lower() in _STEP_NAMES else k


def _header(cells: list[str]) -> list[str] | None:
    keys = [_key(c) for c in cells]
    if len(msrc.TRAINER_KEYS.intersection(keys)) < MIN_KEYS:
        return None
    return keys


def _row(keys: list[str], cells: list[str]) -> dict[str, Any] | None:
    if len(cells) != len(keys):
        return None
    values: dict[str, Any] = {}
    for k, c in zip(keys, cells):
        x = msrc.to_number(c)
        if not isinstance(x, float):
            if c in ("", "-", "None", "null"):
                continue   # an empty cell: a metric not logged at that step
            return None
        values[k] = x
    return values if msrc.is_step(values) else None


def table_rows(lines: Iterable[LogLine]) -> list[tuple[LogLine, dict[str, Any]]]:
    """(line, values) of every row of the metric tables among these lines, in order."""
    out: list[tuple[LogLine, dict[str, Any]]] = []
    keys: list[str] | None = None
    lead = False  # the header was read with its lead taken off: so are its rows
    for line in lines:
        text = _LEAD.sub("", line.raw, count=1) if lead else line.raw
        if keys is not None:
            if _SEP_ROW.match(text) or (not text.isascii() and _BOX_RULE.match(text)) or is_prose(text):
                continue  # a rule row, or a person's sentence between pasted rows
            values = _row(keys, _cells(text))
            if values is not None:
                out.append((line, values))
                continue
            keys = None
        text = line.raw
        if _SEP_ROW.match(text):
            keys = None
            continue
        keys, lead = None, False
        if _LEAD.match(text):
            keys, lead = _header(_cells(_LEAD.sub("", text, count=1))), True
        if keys is None:
            keys, lead = _header(_cells(text)), False
    return out


def tail_metrics(lines: Iterable[LogLine]) -> list[Metrics]:
    """The rows of the metric tables among these lines as Metrics signals (source "table")."""
    out = []
    for line, values in table_rows(lines):
        finite = all(x - x == 0 for x in values.values())
        out.append(Metrics(values, line.where, line.seq, "table", True if finite else None))
    return out
