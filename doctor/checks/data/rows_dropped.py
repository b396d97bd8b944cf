"""GD433: dataset rows that failed and were dropped; every row of the dataset when ms-swift logs a filtered length of 0
(an error: nothing is left to train on). The row error printed above the warning says why; a preference dataset's
missing rejected answer gets its own fix."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit

# ms-swift's row checks for preference data (swift/dataset/preprocessor/core.py RowPreprocessor._check_rejected_response,
# swift/template/template_inputs.py TemplateInputs._compat_rejected_response, 3.x-4.6)
_REJECTED = ("rejected_response", "rejected_messages")


def rows_dropped_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    emptied = next((h for h in hits if h.groups.get("origin")), None)
    warned = [h for h in hits if not h.groups.get("origin")]
    first = min(h.seq for h in warned) if warned else (emptied.seq if emptied else 0)
    row_error = next((e for e in sorted(ctx.exceptions, key=lambda e: -e.seq) if e.seq < first), None)
    said = f" The row error printed above the warning: `{row_error.short_type}: {row_error.message[:160]}`." \
        if row_error is not None else ""
    preference = row_error is not None and any(k in row_error.message for k in _REJECTED)
    fix: list[str] = []
    if preference:
        fix.append("Rows of a preference dataset (DPO, RM, KTO, CPO, ORPO) need a rejected answer: a `rejected_response` "
                   "column (or `rejected_messages`) in every row; ms-swift drops the rows without one.")
    if emptied is None:
        if not preference:
            return Diagnosis()  # the rule's own message and fixes
        return Diagnosis(message="Some dataset rows raised errors while being preprocessed and were dropped." + said,
                         fix=tuple(fix))
    origin = int(emptied.groups["origin"])
    msg = (f"ms-swift dropped every row of a dataset while preprocessing it (origin length {origin}, filtered "
           f"dataset length 0, read from the log; the line does not say whether the training or the validation set): "
           f"that set is empty, and whatever fails after this line is a consequence." + said)
    if not preference:
        fix.append("Read the row error printed above the first `There are errors in the dataset` warning and fix the "
                   "dataset's columns to the format of this rlhf_type (ms-swift's Custom-dataset guide); check the "
                   "dataset file is the one you meant.")
        if not warned:
            fix.append("No row error was read: rows are also dropped for their length (truncation_strategy delete): "
                       "then raise --max_length or use --truncation_strategy left.")
    return Diagnosis(message=msg, fix=tuple(fix), severity=Severity.error)
