"""GD704: torch's strict load_state_dict listed tensor names the checkpoint and the model do not share. The names say
which of three things happened: the same weights under another prefix (a wrapper's `module.`, torch.compile's
`_orig_mod.`, PEFT's `base_model.model.`), an adapter's own weights missing (not this adapter's file), or another
model. The base model's weights missing from a PEFT model's load are GD816's; this rule stays quiet there."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from .strict_missing import QUOTED_KEY, adapter_loaded_strictly

_UNEXPECTED = "Unexpected key(s) in state_dict:"
_ADAPTER = lazyre.compile(r"lora_|\.modules_to_save\.|prompt_encoder|prefix_encoder")
# the prefixes a wrapper puts before a model's own names when its state_dict is saved
_WRAPPERS = (("module.", "a DataParallel, DDP or DeepSpeed wrapper"), ("_orig_mod.", "torch.compile"),
             ("base_model.model.", "PEFT's wrapper"), ("model.", "an outer model"))


def _lists(hits: list[Hit]) -> tuple[list[str], list[str]]:
    """(missing, unexpected) names of the hits, each once; both lists pasted on one line are split where the second
    starts (its names after those of the unexpected lines)."""
    missing: list[str] = []
    unexpected: list[str] = []
    tails = []
    for h in hits:
        miss, _, tail = (h.groups.get("missing") or "").partition(_UNEXPECTED)
        missing += [k for k in QUOTED_KEY.findall(miss) if k not in missing]
        unexpected += [k for k in QUOTED_KEY.findall(h.groups.get("unexpected") or "") if k not in unexpected]
        tails.append(tail)
    for tail in tails:
        unexpected += [k for k in QUOTED_KEY.findall(tail) if k not in unexpected]
    return missing, unexpected


def _prefix(missing: list[str], unexpected: list[str]) -> tuple[str, str, str] | None:
    """(prefix, wrapper, side the prefix is on) when one list is the other under a wrapper's prefix."""
    for prefix, who in _WRAPPERS:
        for have, lack, side in ((unexpected, missing, "checkpoint"), (missing, unexpected, "model")):
            stripped = {k[len(prefix):] for k in have if k.startswith(prefix)}
            if stripped and len(stripped & set(lack)) * 2 >= len(lack):
                return prefix, who, side
    return None


def _shown(keys: list[str]) -> str:
    return ", ".join(f"`{k}`" for k in keys[:2]) + (f" and {len(keys) - 2} more listed" if len(keys) > 2 else "")


def keys_mismatch_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    missing, unexpected = _lists(hits)
    if not missing and not unexpected:
        return None
    cls = next((h.groups["cls"] for h in hits if h.groups.get("cls")), "")
    if missing and adapter_loaded_strictly(missing, cls):
        return None  # GD816: the base model's own weights, an adapter checkpoint loaded as the whole model
    who = f"`{cls}`" if cls else "the model"
    prefix = _prefix(missing, unexpected) if missing and unexpected else None
    if prefix is not None:
        pre, wrapper, side = prefix
        msg = (f"The checkpoint holds the same weights under other names: the {side}'s names carry the prefix "
               f"`{pre}` of {wrapper} (missing {_shown(missing)}; unexpected {_shown(unexpected)}).")
        if side == "checkpoint":
            fix = (f"Take the `{pre}` prefix off the checkpoint's keys before loading "
                   f"(`{{k.removeprefix('{pre}'): v for k, v in state_dict.items()}}`), or save the unwrapped model "
                   f"(`model.module`, accelerator.unwrap_model(model)) next time.",)
        else:
            fix = (f"Put the `{pre}` prefix on the checkpoint's keys (`{{'{pre}' + k: v for k, v in state_dict.items()}}`), "
                   f"or load into the unwrapped model the checkpoint was saved from.",)
        return Diagnosis(message=msg, fix=fix)
    adapter = [k for k in missing if _ADAPTER.search(k)]
    if adapter and len(adapter) * 2 >= len(missing):
        msg = (f"The load into {who} misses the adapter's own weights ({_shown(adapter)}): the file is not a "
               f"checkpoint of this adapter (a merged or base model file, an adapter of other target modules or "
               f"rank, or one saved under another adapter name than `default`).")
        fix = ("Load the adapter folder the run saved (adapter_config.json with adapter_model.safetensors) with "
               "PeftModel.from_pretrained(base, DIR), with the same target modules and adapter name it was trained "
               "with; a merged model loads as a plain model, without PEFT.",)
        return Diagnosis(message=msg, fix=fix)
    parts = [f"missing from the checkpoint: {_shown(missing)}"] if missing else []
    parts += [f"not in {who}: {_shown(unexpected)}"] if unexpected else []
    msg = (f"torch's strict load_state_dict found names that differ between the checkpoint and {who} ("
           + "; ".join(parts) + "): the checkpoint was saved from another model or another version of its code.")
    return Diagnosis(message=msg)
