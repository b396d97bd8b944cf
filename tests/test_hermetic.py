"""The suite passes in a clone that has nothing beside it: no test reads ../shared or another path outside
the repository (DESIGN.md, Testing)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# a path built above the repository root, or an absolute path into the team's shared folder
_OUTSIDE = re.compile(r"ROOT\.parent\b|parent\.parent\.parent\b|[\"']/work/shared|[\"']\.\./shared|SHARED\s*=")


def test_no_test_reads_outside_the_repository():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "tests read outside the repository:\n" + "\n".join(offenders)


def test_copied_real_logs_have_their_provenance():
    readme = (ROOT / "fixtures" / "real-swift" / "README.md").read_text(encoding="utf-8")
    for case in sorted(p.name for p in (ROOT / "fixtures" / "real-swift").iterdir() if p.is_dir()):
        assert case in readme, f"fixtures/real-swift/{case} has no provenance line"
        assert (ROOT / "fixtures" / "real-swift" / case / "log.txt").is_file()
