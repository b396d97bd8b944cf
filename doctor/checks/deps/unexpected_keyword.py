"""GD457: a call passes a keyword the installed library does not accept (mismatched versions)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._frames import importer, short_path

# keywords transformers.Trainer takes that a trl trainer has never taken in any release: passing one is a mistake of
# the call, not a version clash. trl 0.14-0.29 trainer/grpo_trainer.py GRPOTrainer.__init__(model, reward_funcs, args,
# train_dataset, eval_dataset, processing_class, reward_processing_classes, callbacks, optimizers, peft_config, and
# later tools / rollout_func): it builds its own collator and scores evaluation with its reward functions
_NEVER_TAKEN: dict[str, dict[str, str]] = {
    "GRPOTrainer": {
        "tokenizer": "pass the tokenizer as `processing_class=tokenizer` (GRPOTrainer has always named it so)",
        "compute_metrics": "drop it: GRPOTrainer scores eval_dataset with its reward functions; extra metrics go in a "
                           "TrainerCallback",
        "data_collator": "drop it: GRPOTrainer batches prompts itself (its own collator)",
        "model_init": "drop it: pass the model (or its name) as `model=`",
        "preprocess_logits_for_metrics": "drop it: GRPOTrainer computes no logits-based metrics",
    },
}


def unexpected_kwarg_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    callee, kw = g.get("callee") or "?", g.get("kw") or "?"
    never = _NEVER_TAKEN.get(callee.rsplit(".", 1)[-1], {}).get(kw)
    if never is not None:
        return Diagnosis(
            message=f"{callee} has never taken `{kw}` (its signature in trl 0.14-0.29 does not list it): the call "
                    f"is wrong in every release, not written for another version.",
            fix=(f"{never[0].upper()}{never[1:]}.",), category="argument-error-other",
            title=f"{callee} was given a keyword it has never taken")
    frame = importer(hits[0].exc)
    by = f" (called from {short_path(frame.path)}:{frame.lineno})" if frame else ""
    if ctx.framework()[0] == "ms-swift":
        versions = ("pip show ms-swift trl transformers vllm peft, and install the versions that belong together "
                    "(the ms-swift README dependency table for your release).")
    else:  # the table is ms-swift's: another stack's caller pins its own versions
        versions = ("Print the versions in play (`pip list | grep -iE \"trl|transformers|peft|accelerate|vllm|"
                    "deepspeed\"`) and install the ones the calling code was written for (its requirements file or "
                    "README pins them).")
    return Diagnosis(
        message=f"{callee} does not accept `{kw}`{by}: the caller was written for another version of the "
                f"library that defines {callee}.",
        fix=(versions,
             f"If the call is in your own code, drop `{kw}` or install the library version it was written for."))
