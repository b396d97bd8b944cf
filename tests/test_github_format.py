"""Issue 17 point 13: --format github writes GitHub Actions workflow commands (annotations) for CI gates, escaped
as GitHub's runner reads them: %, CR, LF in the message; also ':' and ',' in properties."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from doctor.analyze import analyze
from doctor.model import Evidence, Finding, InputInfo, Report, Severity
from doctor.render import github
from doctor.render.github import escape_data, escape_property

ROOT = Path(__file__).resolve().parent.parent
LINE = "ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"


def _unescape(s: str, prop: bool) -> str:
    # the runner's ActionCommand unescaping (actions/runner ActionCommand.cs UnescapeValue / UnescapeProperty)
    if prop:
        s = s.replace("%3A", ":").replace("%2C", ",")
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    """``::cmd k=v,k=v::data`` as the runner parses it (the first '::' after the command ends the properties)."""
    assert line.startswith("::")
    head, sep, data = line[2:].partition("::")
    assert sep
    cmd, _, props = head.partition(" ")
    out = {}
    for kv in props.split(",") if props else []:
        k, _, v = kv.partition("=")
        out[k] = _unescape(v, True)
    return cmd, out, _unescape(data, False)


def test_escaping_by_hand():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\n") == "a%3Ab%2Cc%25d%0A"
    assert escape_data("x\x1b[31m") == "x\\x1b[31m"  # the rest goes through render.safe


def test_cli_annotations_for_a_fixture():
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", "fixtures/logs/real-batch-div-grad-accum",
                        "--format", "github"], cwd=ROOT, capture_output=True, check=False, timeout=120)
    assert p.returncode == 1
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("::error file=fixtures/logs/real-batch-div-grad-accum/log.txt,line=45,"
                               "title=GD101 Generation batch is not divisible by num_generations::world size 1 x ")
    assert "6 %25 4 = 2.%0A- --num_generations 2 or 3 or 6" in lines[0]  # the fix's '%' and its new lines escaped
    cmd, props, data = _parse(lines[0])
    assert cmd == "error" and props["line"] == "45" and "\nFix:\n- world size 1" in data


def test_hostile_names_and_messages_round_trip(tmp_path):
    run = tmp_path / "r,un:1 50%"
    run.mkdir()
    (run / "a,b:c%.log").write_text(LINE, encoding="utf-8")
    rep = analyze([str(run)])
    f = rep.findings[0]
    hostile = Finding(f.rule_id, f.slug, f.category, Severity.warning, "t: a, b", "line one\r\n::set-env name=X::1\n%0A",
                      evidence=f.evidence)
    out = github.render(Report("X", rep.inputs, {}, [f, hostile]))
    lines = out.splitlines()
    assert len(lines) == 2 and all(x.startswith(("::error ", "::warning ")) for x in lines)
    for line in lines:
        cmd, props, data = _parse(line)
        assert props["file"] == str(run / "a,b:c%.log") and props["line"] == "1"
    cmd, props, data = _parse(lines[1])
    assert cmd == "warning" and props["title"] == f"{f.rule_id} t: a, b"
    assert data == "line one\r\n::set-env name=X::1\n%0A"


def test_pseudo_input_has_no_file_and_no_findings_is_a_notice():
    f = Finding("GD101", "s", "batch-divisibility", Severity.info, "T", "m", evidence=(Evidence("<preflight>", 1, "x"),))
    line = github.render(Report("X", [InputInfo("<command>", "args")], {}, [f])).strip()
    assert line == "::notice title=GD101 T::m%0A(from <preflight>)"
    assert github.render(Report("X", [], {}, [])) == "::notice title=grpo-doctor::No problem found.\n"
