"""Settings a library refuses before it runs: a generation config transformers will not save (GD418), a temperature
that is not positive (GD419), DeepSpeed fields accelerate's config repeats beside a DeepSpeed config file (GD428). Each
fixer reads the settings the message names and says what to set instead."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# transformers generation/configuration_utils.py validate(): "`do_sample` is set to `False`. However, `temperature` is
# set to `0.9` -- this flag is only used in sample-based generation modes." (4.3x-4.5x); 5.x lists "- `temperature`:"
_SET = lazyre.compile(r"`(\w+)` is set to `([^`]*)` -- this flag is only used in sample-based")
_LISTED = lazyre.compile(r"^\s*- `(\w+)`:")
_FOLLOWING = 12  # the list may follow the exception line (transformers prints it after "Thrown during validation:")


def _flags(hit: Hit, ctx: RunState) -> dict[str, str]:
    texts = [hit.exc.message if hit.exc else hit.evidence.text]
    if hit.exc is not None:
        texts += [t.text for t in ctx.lines_after(hit.evidence.path, hit.exc.seq, _FOLLOWING)]
    flags: dict[str, str] = {}
    for text in texts:
        for name, value in _SET.findall(text):
            flags.setdefault(name, value)
        m = _LISTED.match(text)
        if m:
            flags.setdefault(m.group(1), "")
    return flags


def invalid_generation_config_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    flags = _flags(hits[0], ctx)
    named = ", ".join(f"{k} {v}" if v else k for k, v in flags.items())
    msg = ("transformers refused to save the generation config: it validates the config strictly on save, and "
           + (f"{named} (read from the message) {'is' if len(flags) == 1 else 'are'} set while do_sample is False, "
              "where only sampling uses them." if flags else
              "a setting of it contradicts the generation mode (sampling settings with do_sample False, the message's "
              "list is not in the log).")
           + " What failed is the save: trainers and export tools write generation_config.json with every checkpoint "
             "or export, so the work before it is done.")
    unset = ", ".join(f"{k}=None" for k in flags) or "temperature=None, top_p=None, top_k=None"
    fix = (f"For greedy decoding unset them before saving (model.generation_config: {unset}); if sampling is meant, "
           f"set do_sample=True instead.",
           "Fix the base model's generation_config.json the same way (the values usually come from it: chat models ship "
           "temperature and top_p but no do_sample), so every later save and export works.")
    return Diagnosis(message=msg, fix=fix)


def temperature_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    value = hits[0].groups.get("value") or hits[0].groups.get("value2") or "0"
    msg = (f"Generation was asked to sample with temperature {value}: transformers' TemperatureLogitsWarper divides the "
           "logits by the temperature and refuses anything but a strictly positive float. A temperature of 0 is how "
           "other tools spell greedy decoding; transformers spells it do_sample=False.")
    fix = ("For greedy decoding set do_sample=False and leave temperature unset; to sample, give a temperature > 0 "
           "(e.g. 0.7; GRPO and GKD trainers need sampling for varied completions: their config's temperature, or "
           "generation_kwargs).",)
    return Diagnosis(message=msg, fix=fix)


_FIELD = lazyre.compile(r"'(\w+)'")


def accelerate_ds_fields_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    h = hits[0]
    text = " ".join([h.groups.get("fields") or ""] + (
        [t.text for t in ctx.lines_after(h.evidence.path, h.exc.seq, 2)] if h.exc else []))
    fields = list(dict.fromkeys(_FIELD.findall(text.split("]")[0])))
    listed = ", ".join(fields)
    msg = ("accelerate was given a DeepSpeed config file (deepspeed_config_file) and its own config also sets "
           + (f"{listed} (read from the message)" if fields else "DeepSpeed fields")
           + ": with a config file those belong to the DeepSpeed JSON alone, and accelerate refuses to start rather "
             "than ignore them.")
    fix = (f"Remove {listed or 'the listed fields'} from the accelerate config in effect (the --config_file given to "
           "accelerate launch, else ~/.cache/huggingface/accelerate/default_config.yaml) and from the launch flags, and "
           "set them in the DeepSpeed JSON (\"auto\" lets the trainer's arguments fill batch, accumulation and "
           "clipping).",
           "Or regenerate the accelerate config with `accelerate config`, answering yes to a DeepSpeed config file: it "
           "then asks only for the fields that stay with accelerate.")
    return Diagnosis(message=msg, fix=fix)
