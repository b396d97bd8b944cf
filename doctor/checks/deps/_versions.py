"""Which package ranges and module paths belong to which ms-swift release.

Ranges and recommended versions come from swift-notes §1.7 and the ms-swift README dependency table quoted
there (HEAD: trl >=0.15,<1.0 recommended 0.29.1; vllm >=0.5.1, recommended 0.11.0 / 0.23.0; deepspeed >=0.14,
recommended 0.18.9; transformers >=4.33, recommended 4.57.6 / 5.12.1; peft >=0.11,<0.21; README v3.8: trl <0.21,
recommended 0.20.0).
"""
from __future__ import annotations

from ...rules import Diagnosis
from ...swift.run import version_label

# ms-swift 4.0 moved its modules (swift-notes §7)
V3_MODULES = ("swift.llm", "swift.plugin", "swift.trainers.rlhf_trainer", "swift.trainers.rlhf_arguments",
              "swift.tuners.")
V4_MODULES = ("swift.rewards", "swift.arguments", "swift.pipelines", "swift.rlhf_trainers", "swift.model",
              "swift.template", "swift.dataset", "swift.infer_engine", "swift.rl_core")
_MOVES = ("swift.llm.argument -> swift.arguments, swift.llm.train -> swift.pipelines.train, "
          "swift.trainers.rlhf_trainer -> swift.rlhf_trainers, swift.plugin (ORM, orms) -> swift.rewards")
README_RANGES = {
    "trl": "trl >=0.15,<1.0 (recommended 0.29.1; ms-swift 3.8 README: <0.21, recommended 0.20.0)",
    "transformers": "transformers >=4.33 (recommended 4.57.6 or 5.12.1)",
    "peft": "peft >=0.11,<0.21",
    "deepspeed": "deepspeed >=0.14 (recommended 0.18.9)",
    "vllm": "vllm >=0.5.1 (recommended 0.11.0 or 0.23.0)",
}


def swift_module_move(mod: str, run) -> Diagnosis | None:
    v3 = mod.startswith(V3_MODULES) or mod in ("swift.llm", "swift.plugin")
    if v3 and run.major is None:
        # no release of ms-swift is shown: the 4.0 move is one reading, a `swift` that is not ms-swift the other
        return Diagnosis(
            message=f"`{mod}` is an ms-swift 3.x module, and the log does not show which ms-swift is installed: on "
                    f"ms-swift 4.x it is gone (4.0 reorganised the package: {_MOVES}), so code written for 3.x fails "
                    f"this way; on 3.x the `swift` that Python imports is not a whole ms-swift (a local folder named "
                    f"swift, another package of that name, or a broken install).",
            fix=("`pip show ms-swift` and `python -c 'import swift; print(swift.__file__)'`: they say which of the two "
                 "it is.",
                 f"On 4.x: update the imports ({_MOVES}) or install the ms-swift the code was written for (pip install "
                 f"'ms-swift<4'). Otherwise reinstall ms-swift and move any local `swift` folder out of the way."))
    if v3:
        return Diagnosis(
            message=f"`{mod}` is an ms-swift 3.x module; ms-swift 4.0 reorganised the package ({_MOVES}), so "
                    f"code written for 3.x (a reward plugin, a custom script) fails to import on "
                    f"{version_label(run) if run.major == 4 else 'ms-swift 4.x'}.",
            fix=(f"Update the imports ({_MOVES}).",
                 "Or install the ms-swift the code was written for: pip install 'ms-swift<4'."))
    if mod.startswith(V4_MODULES):
        return Diagnosis(
            message=f"`{mod}` exists only in ms-swift 4.x; the installed ms-swift is older.",
            fix=("pip install -U 'ms-swift>=4' (and its matching trl), or use the 3.x import paths "
                 "(swift.llm, swift.plugin).",))
    return None
