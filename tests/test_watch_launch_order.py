"""watch starts the run before it builds its rules (the Session: a fifth of a second of CPU the run need not wait
for), loses none of the output printed meanwhile, and stops the run when the rules cannot be built."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from watchutil import run_watch

from doctor.live import supervisor


def test_the_run_starts_before_the_rules_are_built(tmp_path: Path, monkeypatch) -> None:
    launched: list = []   # the Watch, once its child is started
    running_at_build: list[bool] = []
    real_session, real_launch = supervisor.Session, supervisor.Watch._launch

    def launch(self) -> None:
        real_launch(self)
        launched.append(self)

    def session(*a, **k):
        running_at_build.append(bool(launched) and launched[0].proc is not None)
        return real_session(*a, **k)

    monkeypatch.setattr(supervisor.Watch, "_launch", launch)
    monkeypatch.setattr(supervisor, "Session", session)
    # the run prints at once, more than a pipe holds, while the rules are being built
    code = "import sys; sys.stdout.write('x' * 200000 + '\\nend\\n')"
    r = run_watch(tmp_path, [], argv=[sys.executable, "-c", code])
    assert r.code == 0 and running_at_build == [True]
    assert r.out == b"x" * 200000 + b"\nend\n"
    assert r.report["run"]["watch"]["status"] == "exited"


def test_rules_that_cannot_be_built_stop_the_run(tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / "still-running"

    def broken(*a, **k):
        raise RuntimeError("catalog broken")

    monkeypatch.setattr(supervisor, "Session", broken)
    code = f"import time, pathlib; time.sleep(1); pathlib.Path({str(marker)!r}).write_text('x')"
    with pytest.raises(RuntimeError, match="catalog broken"):   # the CLI says it in one line (cli.watch)
        run_watch(tmp_path, [], argv=[sys.executable, "-c", code])
    time.sleep(2)
    assert not marker.exists()   # stopped, not left running unwatched
