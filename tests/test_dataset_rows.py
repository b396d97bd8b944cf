"""Dataset rows that fail in ms-swift's preprocessing: the whole dataset gone is an error; a preference row without its
rejected answer gets that fix; the row checks' exceptions are dataset errors, not argument errors."""
from __future__ import annotations

from conftest import run_text

from doctor.model import Severity

SP = "/usr/local/lib/python3.10/site-packages"
ROW_ERROR = (f'Traceback (most recent call last):\n'
             f'  File "{SP}/swift/llm/dataset/preprocessor/core.py", line 220, in batched_preprocess\n'
             f'    self._check_rejected_response(row)\n'
             f'  File "{SP}/swift/llm/dataset/preprocessor/core.py", line 185, in _check_rejected_response\n'
             f"    raise ValueError(f'rejected_response: {{rejected_response}}')\n"
             f'ValueError: rejected_response: None\n'
             f'[WARNING:swift] 👆👆👆There are errors in the dataset, the data will be deleted\n')
EMPTIED = "[INFO:swift] Dataset filtered, origin length: 66317, filtered dataset length: 0\n"


def test_every_row_dropped_is_an_error_that_names_the_row_error():
    f = run_text(ROW_ERROR + EMPTIED)[0]
    assert f.rule_id == "GD433" and f.severity == Severity.error
    assert "origin length 66317, filtered dataset length 0" in f.message
    assert "`ValueError: rejected_response: None`" in f.message
    assert f.fix[0].startswith("Rows of a preference dataset")
    assert not any("GRPO rows need" in x for x in f.fix)


def test_some_rows_dropped_stays_a_warning():
    found = run_text(ROW_ERROR.replace("rejected_response", "messages") + "[INFO:swift] Dataset filtered, origin length: "
                     "100, filtered dataset length: 97\n")
    gd433 = next(f for f in found if f.rule_id == "GD433")
    assert gd433.severity == Severity.warning


def test_a_row_check_exception_is_a_dataset_error_not_an_argument_check():
    f = run_text(ROW_ERROR.split("[WARNING")[0])[0]
    assert f.category == "dataset-or-template-error" and f.rule_id == "GD994"
