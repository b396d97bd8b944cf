"""GD619: what a math reward's grader printed about the samples it could not score (pure: the matched lines in)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Severity
from ...rules import Diagnosis, Hit

_GOLD = "Failed to parse gold solution"
_NOISE = "equations is deprecated"


def grader_lines_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    counts: dict[str, int] = {}
    for h in hits:
        kind = h.groups.get("kind", "")
        key = "gold" if kind == _GOLD else "noise" if kind == _NOISE else "timeout"
        counts[key] = counts.get(key, 0) + 1
    said, fix = [], []
    if counts.get("gold"):
        said.append(f"{counts['gold']} line(s) say the accuracy reward could not parse a sample's gold solution "
                    f"(`{_GOLD}:`, printed by open-r1's accuracy_reward and the rewards copied from it): open-r1 then "
                    f"gives every completion of that sample reward 1.0 (early versions: a free reward that raises the "
                    f"accuracy mean) or None (later versions: skipped), and copies give some other fixed value; "
                    f"either way its completions all score alike, so it teaches nothing.")
        fix.append("Make the dataset's solution column parseable by math_verify (a final answer in LaTeX, e.g. "
                   "\\boxed{...}), or drop the rows whose solution math_verify.parse returns nothing for before "
                   "training.")
    if counts.get("timeout"):
        said.append(f"{counts['timeout']} line(s) say math_verify's timer stopped a parse or comparison: that "
                    f"completion counts as not equal (reward 0) however right it is, and each timeout costs its "
                    f"seconds in every step that meets one.")
        fix.append("Cap completion length (long, malformed answers are what time out), or raise math_verify's "
                   "timeout (verify(..., timeout_seconds=...), parse(..., parsing_timeout=...)) where rewards run "
                   "in the main thread.")
    if counts.get("noise"):
        said.append(f"{counts['noise']} line(s) are latex2sympy2_extended's `equations is deprecated` warning, "
                    f"printed on every normalisation: noise that says nothing about the run (ms-swift and verl "
                    f"filter it).")
        fix.append("Silence it with logging.getLogger('latex2sympy2_extended.math_normalization')"
                   ".setLevel(logging.ERROR) in the reward's module, or drop equations=True from its "
                   "NormalizationConfig.")
    only_noise = set(counts) == {"noise"}
    return Diagnosis(message=" ".join(said), fix=tuple(fix),
                     severity=Severity.info if only_noise else None,
                     title="The math grader's deprecation warning repeats (noise)" if only_noise else None)
