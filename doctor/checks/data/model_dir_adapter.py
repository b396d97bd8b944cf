"""GD438: --model points at a folder without a usable config.json, usually a LoRA adapter checkpoint."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def unrecognized_model_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    d = (hits[0].groups.get("dir") or run.get("model") or "<dir>").rstrip("/")
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
