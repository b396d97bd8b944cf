"""GD438: --model points at a folder without a usable config.json, usually a LoRA adapter checkpoint."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def unrecognized_model_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    d = (hits[0].groups.get("dir") or run.get("model") or "<dir>").rstrip("/")
    told = ctx.framework()
    if told[0] != "ms-swift" and (told[3] != "assumed" or not run.cli):
        return _neutral(d, told[0] if told[3] != "assumed" else None)
    tuner = run.tuner() or "?"
    full = "full" in str(run.cli.get("tuner_type") or run.cli.get("train_type") or tuner)
    msg = (f"--model {d} has no usable config.json. When it is a LoRA checkpoint (adapter_config.json + "
           f"adapter_model.safetensors, no model weights), it must be passed as an adapter, not as the model.")
    fix = [f"--model <base model> --adapters {d}" +
           (" --tuner_type full: ms-swift merges the adapter into the base first and then trains every weight "
            "(verified on 4.6.0)." if full else " (the base is `base_model_name_or_path` in its adapter_config.json)."),
           f"Or merge first: swift export --adapters {d} --merge_lora true, then --model {d}-merged --load_args false "
           f"(the merged dir carries the LoRA run's args.json)."]
    fix.append("If it is not an adapter, the path is wrong or the download is incomplete: the folder needs "
               "config.json with a model_type key.")
    return Diagnosis(message=msg, fix=tuple(fix))


def _neutral(d: str, framework: str | None) -> Diagnosis:
    """The same reading outside ms-swift: in transformers' and PEFT's terms (and the framework's adapter option when
    it is known), not ms-swift's flags."""
    named = " (the path names adapter_config.json: it is an adapter's)" if "adapter_config" in d else ""
    msg = (f"transformers could not load the model from `{d}`{named}: the folder has no config.json with a model_type. "
           f"A LoRA checkpoint (adapter_config.json + adapter_model.*, no model weights) is not a model: it is "
           f"loaded on top of its base model.")
    where = {"llamafactory": " (LLaMA-Factory: model_name_or_path the base, adapter_name_or_path the adapter)",
             "trl": "", "unsloth": ""}.get(framework or "", "")
    fix = (f"Load the base model (`base_model_name_or_path` in the adapter's adapter_config.json) and attach the "
           f"adapter: `PeftModel.from_pretrained(base_model, \"{d}\")`, or give the folder where the framework takes "
           f"an adapter{where}; or merge it first (`merge_and_unload()` and `save_pretrained`).",
           "If it is not an adapter, the path is wrong or the download is incomplete: the folder needs config.json "
           "with a model_type key.")
    return Diagnosis(message=msg, fix=fix, title="The model path points at a folder without model weights (a LoRA "
                                                 "checkpoint?)",
                     verify="the log loads the base model's weights, attaches the adapter and runs the first step")
