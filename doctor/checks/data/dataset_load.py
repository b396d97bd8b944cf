"""GD442: the dataset could not be loaded (missing file, malformed assistant turn, unknown hub id, bad JSON)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def dataset_load_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    ds = run.get("dataset")
    shown = " ".join(ds) if isinstance(ds, list) else (ds or "?")
    if g.get("file"):
        return Diagnosis(
            message=f"The dataset file {g['file']} does not exist (seen from the directory swift was started "
                    f"in).",
            fix=(f"Fix --dataset (now {shown}): use an absolute path, or launch from the directory the "
                 f"relative path starts from; on multi-node runs every node needs the file.",))
    if g.get("assistant"):
        return Diagnosis(
            message="A dataset row has an empty or malformed assistant message (ms-swift FAQ Q2).",
            fix=("GRPO rows need only the prompt turns (system/user) in `messages`; drop empty assistant turns "
                 "or fill them, and keep the roles alternating.",
                 "Find the row: the message prints it after `assistant_message:`."))
    if g.get("hub"):
        return Diagnosis(
            message=f"The dataset id in --dataset {shown} was not found on the hub.",
            fix=("Check the id (ModelScope ids differ from HF ids; USE_HF=1 switches to the HF hub), or "
                 "download it and pass the local path.",))
    return Diagnosis(
        message=f"The dataset ({shown}) could not be parsed: a line is not valid JSON, or a column has "
                f"different types in different rows.",
        fix=("Validate the file: python -c \"import json,sys; [json.loads(l) for l in open(sys.argv[1])]\" "
             "<file> finds the broken line; make each column the same type in every row (e.g. `solution` "
             "always a string).",
             "The traceback lines above the error (`Generating train split`, the row number) point at the "
             "file and row."))
