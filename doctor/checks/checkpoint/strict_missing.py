"""GD816: a strict load_state_dict whose missing keys are the base model's own weights: a checkpoint of the trainable
part only (a PEFT adapter) loaded into the whole model. The class line alone or the missing keys alone say less: the
finding needs the keys, and either a PEFT class or base weights among them (the embeddings, a layer's weights outside
any adapter)."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

QUOTED_KEY = lazyre.compile(r'"([^"]+)"')  # a tensor name in torch's key lists
# a base model's own weights: embeddings and a decoder layer's projections (not an adapter's lora_/prefix weights)
_BASE = lazyre.compile(r"(?:embed_tokens|embeddings\.|wte|embed_in|layers\.\d+\.|\.h\.\d+\.|encoder\.layer\.\d+\.)")
_ADAPTER = lazyre.compile(r"lora_|\.modules_to_save\.|prompt_encoder|prefix_encoder|adapter")


# a last key the paste cut before its closing quote
_CUT_KEY = lazyre.compile(r'"([\w.]+)$')


def base_weights(keys: list[str]) -> list[str]:
    """The base model's own weights among missing keys (not an adapter's)."""
    return [k for k in keys if _BASE.search(k) and not _ADAPTER.search(k)]


def adapter_loaded_strictly(keys: list[str], cls: str) -> bool:
    """The missing keys read as a checkpoint of the trainable part loaded into the whole model: base weights among
    them, most of them unless the class is PEFT's wrapper."""
    base = base_weights(keys)
    return bool(base) and (cls.startswith("Peft") or len(base) * 2 >= len(keys))


def strict_missing_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    keys_hit = next((h for h in hits if h.groups.get("keys")), None)
    if keys_hit is None:
        return None
    cls = next((h.groups["cls"] for h in hits if h.groups.get("cls")), "")
    keys = QUOTED_KEY.findall(keys_hit.groups["keys"])
    cut = _CUT_KEY.search(keys_hit.groups["keys"])
    if cut is not None:  # the paste ends inside the list: its last key is cut mid-name ("...embed_tokens.wei")
        keys.append(cut.group(1) + "...")
    base = base_weights(keys)
    peft = cls.startswith("Peft")
    if not adapter_loaded_strictly(keys, cls):
        return None  # missing adapter keys, or a mix: another failure (a renamed module, another model)
    shown = ", ".join(f"`{k}`" for k in base[:3]) + (f" and {len(base) - 3} more" if len(base) > 3 else "")
    who = f"`{cls}`" if cls else "the model"
    adapter = [k for k in keys if _ADAPTER.search(k)]
    if adapter:
        msg = (f"torch's strict load_state_dict for {who} found the checkpoint without the base model's weights "
               f"({shown}) and without the adapter's own ({', '.join(f'`{k}`' for k in adapter[:2])}): the "
               f"checkpoint's keys are not named as this model's are (saved by another wrapper, with another prefix, "
               f"or as an adapter file the resume does not read), so even a non-strict load would drop them; compare "
               f"the checkpoint's key names with model.state_dict()'s before resuming.")
    else:
        msg = (f"torch's strict load_state_dict for {who} found the checkpoint without the base model's own weights "
               f"({shown}{' of the ' + str(len(keys)) + ' listed' if len(keys) > len(base) else ''}): the checkpoint "
               f"holds the trainable part only, as a PEFT adapter is saved, and was loaded as if it held the whole "
               f"model.")
    if peft and not adapter:
        msg += (f" {cls} is PEFT's wrapper: its base_model.model weights come from the base model, never from the "
                f"adapter's checkpoint, so only a non-strict load (or the adapter's own loader) can read it.")
    return Diagnosis(message=msg)
