"""GD432: dataset rows that encode to more tokens than --max_length (skipped, or the run gave up)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit
from ...values import as_int


def _round_up(n: int) -> int:
    for step in (256, 512, 1024, 2048, 4096):
        if n <= step * 8:
            return ((n + step - 1) // step) * step
    return ((n + 4095) // 4096) * 4096


def max_length_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    gave_up = any(h.groups.get("retrieve") for h in hits)
    sized = [h for h in hits if h.groups.get("len")]
    g = (sized[0] if sized else hits[0]).groups
    length = as_int(g.get("len"))
    ml = as_int(g.get("ml")) or as_int(run.get("max_length"))
    mcl = as_int(run.get("max_completion_length"))
    ts = run.get("truncation_strategy")
    fix = []
    bare = not sized and any(h.groups.get("bare") for h in hits)
    if length and ml:
        msg = f"A row encodes to {length} tokens, more than --max_length {ml}."
        new = _round_up(length)
    elif bare:
        msg = ("ms-swift's template raised MaxLengthError: a row encodes to more tokens than --max_length"
               + (f" {ml}" if ml else "") + " (its length is not in the excerpt).")
        new = None
        tiles = _internvl_tiles(run)
        if tiles is not None:
            msg += " " + tiles[0]
            fix.append(tiles[1])
    else:
        msg = ("ms-swift gave up after repeatedly failing to encode dataset rows: usually the prompts are longer "
               "than --max_length" + (f" {ml}" if ml else "") + " (or the rows are malformed; the warnings "
               "`There are errors in the template.encode` just above carry the first real error).")
        new = _round_up(ml * 2) if ml else None
    if new:
        fix.append(f"--max_length {new} (ms-swift measures the prompt against it in GRPO).")
    elif bare:
        fix.append("--max_length above the longest row's encoded length (images' tokens count too).")
    fix.append("--truncation_strategy left (cut the start of long prompts) or delete (skip them)"
               + (f"; it is now {ts}." if ts else "."))
    if mcl and new:
        fix.append(f"With vLLM, keep --vllm_max_model_len >= max_length + max_completion_length = {new} + {mcl} = "
                   f"{new + mcl}.")
    if not gave_up and (ctx.ended or ctx.metrics_steps > 0):
        return Diagnosis(
            message=msg + f" {len(sized) or len(hits)} such row(s) were skipped; training went on without them.",
            fix=tuple(fix),
            severity=Severity.warning)
    return Diagnosis(message=msg, fix=tuple(fix))


# InternVL's dynamic tiling (ms-swift swift/template/templates/internvl.py: max_num from the env MAX_NUM, default 12;
# 448x448 tiles of 256 tokens, plus a thumbnail when an image takes more than one tile)
_INTERNVL_TILE_TOKENS = 256
_INTERNVL_MAX_NUM = 12


def _internvl_tiles(run) -> tuple[str, str] | None:
    """(sentence, fix) on InternVL's image tokens when the model is an InternVL: max_pixels does not bound them."""
    model = str(run.get("model") or "")
    if "internvl" not in model.lower():
        return None
    per_image = (_INTERNVL_MAX_NUM + 1) * _INTERNVL_TILE_TOKENS
    sentence = (f"The model is an InternVL ({model}): ms-swift tiles each image into up to MAX_NUM (default "
                f"{_INTERNVL_MAX_NUM}) 448x448 crops plus a thumbnail, {_INTERNVL_TILE_TOKENS} tokens each, so one "
                f"image can take {per_image:,} tokens"
                + ("; the --max_pixels set does not bound InternVL's tiles." if run.get("max_pixels") else "."))
    fix = (f"MAX_NUM=4 in the environment (at most 5 tiles, {5 * _INTERNVL_TILE_TOKENS:,} tokens an image), "
           f"or a --max_length that holds every image's tiles.")
    return sentence, fix
