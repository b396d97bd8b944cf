"""The suite passes in a clone that has nothing beside it: no test reads ../shared or another path outside
the repository (DESIGN.md, Testing), and none writes to the user's home cache."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import SESSION_CACHE

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


def test_a_run_under_the_suite_writes_its_cache_in_the_session_folder(tmp_path: Path) -> None:
    """A run started by a test (here a subprocess, as the CLI tests start it) writes the parsed rule files under the
    session's own cache folder; with HOME pointed at an empty folder, nothing appears under its ~/.cache."""
    from doctor.cachefiles import CATALOG, RULES

    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert cache == Path(SESSION_CACHE)
    assert not cache.resolve().is_relative_to((Path.home() / ".cache").resolve())
    folder = cache / "grpo-doctor"
    for p in [*folder.glob("rules-*.json"), *folder.glob("catalog-*.marshal")]:
        p.unlink()                       # written by earlier tests: the run below must write its own
    home = tmp_path / "home"
    home.mkdir()
    p = subprocess.run([sys.executable, "-c", "from doctor.cli import main; main()", "analyze", "--isolated",
                        "-f", "json", str(ROOT / "fixtures" / "logs" / "real-grpo-lora-healthy")],
                       env=dict(os.environ, HOME=str(home)), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert [p.name for p in folder.iterdir() if RULES.owns(p.name)]
    assert [p.name for p in folder.iterdir() if CATALOG.owns(p.name)]
    assert not (home / ".cache").exists()
