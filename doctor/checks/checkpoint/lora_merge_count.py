"""GD819 (pattern rule's diagnose hook): unsloth's merged save wrote a different number of modules than the model has
LoRA layers; what the two counts say about why."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int

# a quantized base loaded for training: the merged save walks quantized modules it was not written for
_QUANTIZED = lazyre.compile(r"(?i)load_in_8bit\s*=\s*True|load_in_4bit\s*=\s*True|bnb-4bit|bnb_4bit|\b8-?bit\b")


def lora_merge_count_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    loras, saved = as_int(g.get("loras")), as_int(g.get("saved"))
    texts = [ln.text for tail in ctx.tails.values() for ln in tail] + list(ctx.run.command_texts)
    quantized = next((t.strip() for t in texts if _QUANTIZED.search(t)), None)
    msg = (f"unsloth merged the LoRA weights into the base and counted {loras} LoRA layers against {saved} modules "
           f"written; the save refuses when they differ. The check is unsloth's own bookkeeping: in public reports it "
           f"misfired for model kinds a release did not resolve (vision towers, new architectures; fixed in later "
           f"releases by the maintainers) and for quantized bases.")
    if loras and saved and saved == 2 * loras:
        msg += " Here twice as many were written as counted: each layer was visited twice."
    if quantized:
        msg += f" The run loads a quantized base (`{quantized[:120]}`)."
    fix = ("pip install --upgrade --force-reinstall --no-cache-dir unsloth unsloth_zoo, restart the process, and save "
           "again: the adapter trained is not affected.",
           "Or merge without unsloth's saver: load the base model in 16-bit (not 4-bit or 8-bit) with transformers, "
           "attach the adapter (peft PeftModel.from_pretrained(base, adapter_dir)), merge_and_unload(), then "
           "save_pretrained; or keep the adapter alone (model.save_pretrained(dir)).")
    return Diagnosis(message=msg, fix=fix)
