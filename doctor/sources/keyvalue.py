"""Metric rows written as ``key: value`` text rather than a dict or a table: a block of one pair per line (a summary
copied from a dashboard, transformers' ``***** train metrics *****`` block of ``key = value`` lines), pairs on one
line separated by ``|`` or ``,`` (a custom logger's ``step 10 | loss: 0.1 | reward: 0.2``), and MLX-LM's trainer
lines (mlx_lm/tuner/trainer.py: ``Iter {it}: Train loss {loss:.3f}, Learning Rate {lr:.3e}, ...`` and
``Iter {it}: Val loss {loss:.3f}, Val took {t:.3f}s``). Pure: lines in, (line, values) out; read from a log's tail
when it gave no metric row of its own, like sources/tables.py.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import lazyre
from ..signals import LogLine, Metrics
from . import metrics as msrc
from .prose_text import is_prose
from .tables import MIN_KEYS
from .verl_rows import verl_name, with_spread

_PAIR = lazyre.compile(r"^\s*[-*•]?\s*`?(?P<k>[A-Za-z_][\w/.\-]{0,60})`?\s*[:=]\s*(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)"
                   r"|nan|NaN|inf|-inf|Infinity)\s*$")
# a two-column markdown table of a run's summary ("| `completions/clipped_ratio` | **1** | 39 / 40 |"): the key in
# the first cell, its value (in bold or backticks) in the second, other cells after it ignored
_MD_ROW = lazyre.compile(r"^\s*\|\s*`?(?P<k>[A-Za-z_][\w/.\-]{0,60})`?\s*\|\s*(?:\*\*|`)?(?P<v>[-+]?(?:\d+\.?\d*"
                     r"(?:[eE][-+]?\d+)?|\.\d+)|nan|NaN|inf|-inf)(?:\*\*|`)?\s*\|")
# a pair ends at a separator ("|", ",", ";", " - "), at the line's end, or where the next "key:" / "key=" begins
_INLINE = lazyre.compile(r"(?P<k>[A-Za-z_][\w/.\-]{0,60})\s*[:=]\s*(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|nan|NaN|inf)"
                     r"(?=\s*(?:[|,;]|$)|\s+-\s|\s+[A-Za-z_][\w/.\-]{0,60}\s*[:=])")
# a trainer's own key then its number with no sign between ("loss 0.0000 reward 0.2500", "reward 0.00, kl 0.01"):
# only the keys every trainer logs, so that words of a sentence are not read as pairs
_BARE = lazyre.compile(r"\b(?P<k>loss|grad_norm|learning_rate|reward|reward_std|kl|epoch)\s+(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|"
                   r"\.\d+)|nan|NaN|inf)(?=\s*(?:[|,;]|$)|\s)")
_STEP_LEAD = lazyre.compile(r"^\s*\[?(?:[A-Z]+:\w*:)?(?:epoch\s+\d+\s+)?(?:step|Step|iter|Iter|iteration|Iteration)\s*[:=]?\s*"
                        r"(?P<s>\d+)\b")
# wandb's summary printed when a run ends (wandb/sdk/wandb_run.py: "wandb: Run summary:", then one "wandb: <key>
# <value>" line per key, the keys right-aligned): the run's last values (devlogs39/4206, devlogs71/7421)
_SUMMARY_HEAD = lazyre.compile(r"^(?:wandb:\s+)?Run summary:\s*$")
_WANDB = lazyre.compile(r"^(?:wandb:)?\s*(?P<k>[A-Za-z_][\w/.\-]{0,80})\s+(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|nan|NaN|"
                        r"inf)\s*$")
_MLX = lazyre.compile(r"^Iter (?P<s>\d+): (?P<kind>Train|Val) loss (?P<loss>[-+]?[\d.]+(?:e[-+]?\d+)?|nan|inf)"
                  r"(?:, Learning Rate (?P<lr>[-+]?[\d.]+(?:e[-+]?\d+)?))?")
# DeepSpeed-Chat step 3 (applications/DeepSpeed-Chat/training/step3_rlhf_finetuning/main.py) prints
# "epoch: E|step: S|ppo_ep: P|act_loss: A|cri_loss: C|unsuper_loss: U": its actor loss is the policy's loss
_ALIASES = {"train/loss": "loss", "train/reward": "reward", "train/reward_std": "reward_std", "train/kl": "kl",
            "train/grad_norm": "grad_norm", "global_step": "step", "Step": "step", "train_reward": "reward",
            "act_loss": "loss"}


def _key(k: str) -> str:
    k = _ALIASES.get(k, k)
    return k[len("train/"):] if k.startswith("train/") else k


def _trainer(values: dict[str, Any], table: bool = False) -> bool:
    if table:  # a summary table of a trainer's own keys: one trainer key and namespaced ones beside it
        return bool(msrc.TRAINER_KEYS.intersection(values)) and sum("/" in k for k in values) >= MIN_KEYS
    return len(msrc.TRAINER_KEYS.intersection(values)) >= MIN_KEYS and msrc.is_step(values)


def rows(lines: Iterable[LogLine]) -> list[tuple[LogLine, dict[str, Any]]]:
    """(first line, values) of every key/value metric row among these lines, in order."""
    out: list[tuple[LogLine, dict[str, Any]]] = []
    block: dict[str, Any] = {}
    first: LogLine | None = None
    # pairs on consecutive lines with no key in common: one row wrapped over several lines (a dashboard's summary)
    inline: dict[str, Any] = {}
    inline_first: LogLine | None = None

    table = False  # the block's pairs are rows of a markdown table

    wandb = False  # the block is wandb's run summary printed at the end of a run
    summary = False  # the lines follow wandb's "Run summary:" header

    def close() -> None:
        nonlocal block, first, table, wandb
        if wandb:
            block = with_spread(block)
        if first is not None and _trainer(block, table):
            out.append((first, block))
        block, first, table, wandb = {}, None, False, False

    def close_inline() -> None:
        nonlocal inline, inline_first
        if inline_first is not None and _trainer(inline):
            out.append((inline_first, inline))
        inline, inline_first = {}, None

    for line in lines:
        text = line.text.strip()
        m = _MLX.match(text)
        if m is not None:
            close()
            close_inline()
            key = "loss" if m.group("kind") == "Train" else "eval_loss"
            values = {"step": float(m.group("s")), key: msrc.to_number(m.group("loss"))}
            if m.group("lr"):
                values["learning_rate"] = msrc.to_number(m.group("lr"))
            if key == "loss":
                out.append((line, values))
            continue
        raw = line.raw.strip()
        if _SUMMARY_HEAD.match(raw):
            close()
            summary = True   # a paste whose every line began with "wandb:" loses it to the reader: the header says
            continue
        w = _WANDB.match(raw) if summary or raw.startswith("wandb:") else None
        if w is None:
            summary = False
        if w is not None:
            close_inline()
            k = verl_name(w.group("k"))
            if k in block and not wandb:
                close()
            wandb = True
            first = first or line
            block[k] = msrc.to_number(w.group("v"))
            continue
        m = _PAIR.match(text)
        # a table row as pasted: the line reader takes markdown's cell bars off its text, so the raw line is read
        raw = line.raw.strip()
        md = _MD_ROW.match(raw) if m is None and raw[:1] == "|" else None
        if m is not None or md is not None:
            close_inline()
            m = m or md
            k = _key(m.group("k"))
            if k in block:
                close()
            table = table or md is not None
            first = first or line
            block[k] = msrc.to_number(m.group("v"))
            continue
        close()
        values = {_key(p.group("k")): msrc.to_number(p.group("v")) for p in _INLINE.finditer(text)}
        if len(values) < MIN_KEYS:
            bare = list(_BARE.finditer(text))
            # the pairs make most of the line: a sentence that mentions a loss and a reward is not a row
            if sum(len(p.group(0)) for p in bare) >= 0.6 * len(text):
                values = {_key(p.group("k")): msrc.to_number(p.group("v")) for p in bare}
        s = _STEP_LEAD.match(text)
        if s is not None:
            values.setdefault("step", float(s.group("s")))
        if len(values) < 2:
            if not is_prose(text):  # a person's sentence pasted between the lines of one row does not end it
                close_inline()
            continue
        if inline_first is not None and inline.keys() & values.keys():
            close_inline()
        inline.update(values)
        inline_first = inline_first or line
    close()
    close_inline()
    return out


def tail_metrics(lines: Iterable[LogLine]) -> list[Metrics]:
    """The key/value rows among these lines as Metrics signals (source "table")."""
    out = []
    for line, values in rows(lines):
        finite = all(isinstance(x, float) and x - x == 0 for x in values.values())
        out.append(Metrics(values, line.where, line.seq, "table", True if finite else None))
    return out
