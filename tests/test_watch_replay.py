"""The live path gives the same findings as `analyze`: every fixture log is printed by a real child process
(in random chunk sizes, so lines arrive cut in pieces) under `watch`, and the final report equals the
fixture's golden (the reviewed `analyze` output), evidence paths aside."""
from __future__ import annotations

import json
import sys

import pytest
from golden import FIXTURES, cases, golden_path
from watchutil import run_watch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _replayable(case: str) -> bool:
    d = FIXTURES / case
    files = {p.name for p in d.iterdir() if p.is_file()} - {"provenance.toml"}
    return "log.txt" in files and files <= {"log.txt", "command.txt", "args.json", "logging.jsonl"} \
        and golden_path(case).exists() and not _pasted(d / "log.txt") \
        and not tomllib.loads((d / "provenance.toml").read_text(encoding="utf-8")).get("excerpt")


def _pasted(log) -> bool:
    """A log whose analysis undoes paste damage (sources/reflow.py: an indent, a hard wrap, a cut exception line): a
    live run's own output never has it, so `watch` reads it as printed and the two readings differ by design."""
    from doctor.sources.reflow import MAX_REFLOW, needs_reflow
    data = log.read_bytes()
    # the paste cut inside its last line (a traceback header cut mid-word): a live run's output never stops so, and
    # `analyze` reads the rows above it as an excerpt's, `watch` as a whole run's
    last = data.rstrip().rsplit(b"\n", 1)[-1]
    if b"Traceback (most rec" in last and not last.rstrip().endswith(b"last):"):
        return True
    return len(data) <= MAX_REFLOW and needs_reflow(data) is not None


CASES = [c for c in cases() if _replayable(c)]


def _norm(findings: list[dict]) -> list[dict]:
    out = []
    for f in findings:
        f = dict(f)
        f["evidence"] = [{**e, "path": e["path"].rsplit("/", 1)[-1].replace("grpo-doctor-console.log", "log.txt")}
                         for e in f["evidence"]]
        out.append(f)
    return out


def test_enough_cases():
    assert len(CASES) >= 80


@pytest.mark.parametrize("case", CASES)
def test_live_equals_analyze(case, tmp_path):
    d = FIXTURES / case
    args = ["--log", str(d / "log.txt"), "--chunks", "--out", str(tmp_path / "run")]
    if (d / "args.json").exists():
        args += ["--args-json", str(d / "args.json")]
    if (d / "logging.jsonl").exists():
        # swift creates logging.jsonl with the first logged step; here it is there before the log is printed
        args += ["--jsonl", str(d / "logging.jsonl"), "--jsonl-wait", "2.5"]
    command = (d / "command.txt").read_text(encoding="utf-8", errors="replace") if (d / "command.txt").exists() else ""
    r = run_watch(tmp_path, args, command_text=command, poll=0.2, eval_interval=0.5)
    assert r.code == 0
    assert r.out == (d / "log.txt").read_bytes()  # byte-exact pass-through
    expected = json.loads(golden_path(case).read_text(encoding="utf-8"))
    assert _norm(r.report["findings"]) == _norm(expected["findings"])
