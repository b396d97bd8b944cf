"""GD617: a validation summary (verl's `Initial validation metrics: {...}`, or the val keys of its step rows) whose every
score is 0. The scores are the keys that hold a task score (verl: val/test_score/<source>, val-core/<source>/<var>/
mean@N with var reward, acc or score); spreads and counts are not scores."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...sources.metrics import to_number

_DICT_ITEM = lazyre.compile(r"""['"](?P<k>val[^'"]*)['"]\s*:\s*(?P<v>[-+\d.eE]+|nan)""")
_ROW_ITEM = lazyre.compile(r"(?:^|\s-\s)(?P<k>val[^:\s]*):(?P<v>[-+\d.eE]+|nan)")
_SCORE_KEY = lazyre.compile(r"^val/test_score/|^val-core/.+/(?:reward|acc|score)/mean@\d+$")


def _pprinted(hit: Hit, ctx: RunState) -> str:
    """The dict of a summary pprint split into quoted pieces: this line's rest and the next lines up to the one that
    closes the parenthesis, each without its quotes."""
    first = hit.groups["pp"].rstrip()
    parts = [first[:-1] if first[-1:] in ("'", '"') else first]  # the rest of the first piece, without its quote
    tail = ctx.lines_after(hit.evidence.path, hit.seq, 40)
    for t in tail:
        parts.append(t.text)
        if t.text.rstrip().endswith(")"):
            break
    out = [parts[0]]
    for piece in parts[1:]:
        piece = piece.strip().removeprefix("(").removesuffix(")").strip()
        out.append(piece[1:-1] if len(piece) >= 2 and piece[0] == piece[-1] and piece[0] in "'\"" else piece)
    return "".join(out)


def scores(hit: Hit, ctx: RunState) -> dict[str, float]:
    """The task scores of one summary line, by key."""
    if hit.groups.get("pp") is not None:
        text, rx = _pprinted(hit, ctx), _DICT_ITEM
    elif hit.groups.get("scores"):
        text, rx = hit.groups["scores"], _DICT_ITEM
    else:
        text, rx = hit.groups.get("row") or "", _ROW_ITEM
    out: dict[str, float] = {}
    for m in rx.finditer(text):
        v = to_number(m.group("v"))
        if _SCORE_KEY.search(m.group("k")) and isinstance(v, (int, float)):
            out[m.group("k")] = float(v)
    return out


def validation_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    last = hits[-1]
    found = scores(last, ctx)
    if not found or any(v != 0 for v in found.values()):
        return None
    keys = list(found)
    shown = ", ".join(f"{k} {found[k]:g}" for k in keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    initial = any("Initial validation" in h.evidence.text or "step:0 - " in h.evidence.text for h in hits)
    when = "before training (the initial validation)" if initial else "at that step"
    msg = (f"Every validation score the log shows is 0 {when}: {shown} (read from the log). These are means over the "
           f"validation set: with verl's scorers, which give 0 or more, no completion got any credit. The same scorer "
           f"gives the training rewards: if they are 0 too, every group is flat and the policy gets no gradient.")
    sample = _printed_sample(ctx, last.seq)
    if sample:
        msg += f" verl printed one sample before it: {sample}; its [response] line is the completion to check."
    return Diagnosis(message=msg)


# verl's reward manager prints one scored sample per data source (workers/reward_manager/naive.py: "[prompt]",
# "[response]", "[ground_truth]", "[score]")
_SAMPLE = lazyre.compile(r"^\[(ground_truth|score)\]\s*(.{1,80})$")


def _printed_sample(ctx: RunState, before: int) -> str:
    got: dict[str, str] = {}
    for tail in ctx.tails.values():
        for line in tail:
            m = _SAMPLE.match(line.text.strip()) if line.seq < before else None
            if m:
                got[m.group(1)] = m.group(2).strip()
    return ", ".join(f"{k.replace('_', ' ')} `{v}`" for k, v in got.items()) if len(got) == 2 else ""
