"""GD810's reading of the path it quotes: a path that still holds a shell variable (`${NAME}`, `$NAME`) was never
expanded by a shell (a variable set in another shell or not at all, single quotes, a YAML or JSON config, which
expand nothing), so no folder of that name exists; a `name=` in front of it is an assignment pasted into the
argument. Other paths keep the rule's own message."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_VARIABLE = lazyre.compile(r"\$\{?(?P<name>[A-Za-z_]\w*)\}?")
_ASSIGNED = lazyre.compile(r"^(?P<key>[A-Za-z_]\w*)=")


def adapter_dir_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    path = next((h.groups.get("dir") for h in hits if h.groups.get("dir")), None) or ""
    if not path:
        # the message quoted without its location (a title, a sentence): the folder is not known
        return Diagnosis(
            message="PEFT was asked to load an adapter from a folder that has no adapter_config.json (the message is "
                    "quoted without its path): the folder is not a PEFT adapter (full weights or a bare state dict "
                    "were saved there, or the path is wrong).",
            fix=("`ls` the folder given as the adapter: adapter_model.* without adapter_config.json means the script "
                 "saved a bare state dict (save the PeftModel with `model.save_pretrained(output_dir)`); a multi-GB "
                 "pytorch_model.bin or model*.safetensors means full weights (load them with "
                 "AutoModelForCausalLM.from_pretrained instead of PEFT); nothing at all means a wrong path.",))
    var = _VARIABLE.search(path)
    if var is None:
        return Diagnosis()
    assigned = _ASSIGNED.match(path)
    msg = (f"PEFT was asked to load an adapter from `{path}`: that path still holds the shell variable "
           f"`{var.group(0)}`, which no shell expanded, so PEFT looked in a folder named by that literal text."
           + (f" The `{assigned.group('key')}=` in front of it is an assignment pasted into the argument." if assigned
              else ""))
    fix = (f"Give the adapter's real folder: set `{var.group('name')}` in the shell that runs the command (export it, "
           f"in the same script) and pass it unquoted or in double quotes, or write the path itself; a YAML or JSON "
           f"config expands no variables.",
           "Check that the folder holds adapter_config.json (`ls` it) before the run.")
    return Diagnosis(message=msg, fix=fix)
