"""GD814: a checkpoint's tensors whose shapes differ from the model's: which tensors, and what the differing dimension
says (a resized vocabulary, another model size), from the shapes the lines print."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_VOCAB_PARTS = ("embed_tokens", "lm_head", "wte", "word_embeddings", "embed_in", "embed_out", "output.weight")


def _dims(text: str | None) -> list[int]:
    return [int(x) for x in (text or "").strip("[]").replace(" ", "").split(",") if x]


def shape_mismatch_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    names = list(dict.fromkeys(h.groups["param"].rstrip(":") for h in hits if h.groups.get("param")))
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    pair = next(((h.groups["param"], _dims(h.groups["saved"]), _dims(h.groups["model"])) for h in hits
                 if h.groups.get("saved") and h.groups.get("model")), None)
    msg = f"load_state_dict found tensors whose shapes differ between the checkpoint and the model: {shown}."
    fix: list[str] = []
    pairs = [(_dims(h.groups["saved"]), _dims(h.groups["model"])) for h in hits
             if h.groups.get("saved") and h.groups.get("model")]
    if len(pairs) >= 2 and all(sv in ([1], [0]) and md not in ([1], [0]) for sv, md in pairs):
        shape = "[0]" if all(sv == [0] for sv, _ in pairs) else "[1]"
        msg += (f" Every checkpoint-side shape the log shows is {shape} ({len(pairs)} tensors, whatever their shape in "
                f"the model): DeepSpeed ZeRO-3 keeps such a placeholder in each partitioned parameter (torch.ones(1) in "
                f"early releases, an empty tensor later), so this checkpoint was saved from the partitioned model "
                f"without gathering its weights.")
        fix = ["Save (or convert) the full weights: DeepSpeed's zero_to_fp32.py on the checkpoint folder's global_step* "
               "shards, or train with stage3_gather_16bit_weights_on_model_save true (transformers/accelerate gather "
               "them for save_model); or load the checkpoint through the DeepSpeed engine (load_checkpoint) instead of "
               "load_state_dict."]
        return Diagnosis(message=msg, fix=tuple(fix),
                         title="The checkpoint holds ZeRO-3 placeholders instead of weights (size mismatch)")
    if pair is not None:
        name, saved, model = pair
        msg += f" `{name}` is {saved} in the checkpoint and {model} in the model (read from the log)."
        if len(saved) == len(model) and any(p in name for p in _VOCAB_PARTS) and saved[1:] == model[1:]:
            fix.append(f"Only the vocabulary dimension differs ({saved[0]} rows saved, {model[0]} in the model): the "
                       "checkpoint's tokenizer had tokens added (or removed); load it with the tokenizer saved beside it "
                       f"and resize the model's embeddings to {saved[0]} rows before loading "
                       "(model.resize_token_embeddings).")
        elif len(saved) == len(model):
            fix.append("The dimensions differ beyond the vocabulary: the checkpoint comes from another model size or "
                       "configuration (hidden size, layers, an adapter's rank); load it into the model it was saved "
                       "from (the same --model / base model).")
    else:
        fix.append("The line is cut before the shapes: paste the whole 'size mismatch' block to tell a resized vocabulary "
                   "(only embed_tokens / lm_head differ) from another model size; a model-side shape [0] is DeepSpeed "
                   "ZeRO-3's placeholder (load inside GatheredParameters, or use ZeRO-2).")
    fix.append("Load the checkpoint into the model it was saved from (the same base model and tokenizer), or convert it "
               "first.")
    # cut before the shapes: a model-side [0] (ZeRO-3's placeholder, GD427) cannot be told from another model
    return Diagnosis(message=msg, fix=tuple(fix), confidence=None if pair is not None else "likely")
