"""Every fixtures/logs case analysed once per test process (the markdown, SARIF and schema tests share them)."""
from __future__ import annotations

import functools
import os

from golden import FIXTURES, cases  # noqa: F401 - re-exported

from doctor.analyze import analyze
from doctor.model import Report


@functools.cache
def case_report(case: str) -> Report:
    """The Report of a case, analysed from fixtures/logs (paths as in the goldens: relative, '<case>/...')."""
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        return analyze([case])
    finally:
        os.chdir(old)
