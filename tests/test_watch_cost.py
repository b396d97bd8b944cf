"""What watch's own CPU does not pay for (issue 33: watch's share of the fault scoreboard's short runs): the rule
catalog's TOML parsed once and cached, numpy not imported for a run of a few metric rows."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from doctor import registry

ROOT = Path(__file__).resolve().parent.parent

# four metric rows as transformers prints them (numbers), then the end of the run
ROWS = "".join(
    f"print({{'loss': {0.1 * k!r}, 'grad_norm': 0.9, 'learning_rate': 1e-06, 'reward': 0.{k}, 'reward_std': 0.2, "
    f"'frac_reward_zero_std': 0.0, 'kl': 0.01, 'epoch': 0.{k}, 'global_step/max_steps': '{k}/4'}}); "
    for k in range(1, 5))


def _watch(code: str, tmp_path: Path, child: str) -> subprocess.CompletedProcess:
    """``grpo-doctor watch`` run by ``code`` (a driver that patches or inspects doctor before calling its main) over a
    child Python program, without preflight, GPU sampling or drain, its run folder under ``tmp_path``."""
    return subprocess.run([sys.executable, "-c", code, "watch", "--no-preflight", "--gpu-interval", "0", "--drain", "0",
                           "--run-dir", str(tmp_path / "run"), "--", sys.executable, "-c", child],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def _counts(stderr: str) -> tuple[int, int]:
    """The two counters a driver printed at exit ("counts A B")."""
    m = re.search(r"counts (\d+) (\d+)", stderr)
    assert m, stderr[-2000:]
    return int(m.group(1)), int(m.group(2))


def test_watch_of_a_short_run_does_not_import_numpy(tmp_path: Path) -> None:
    """A run of four metric rows is read row by row (engine/columns.MIN_ROWS): numpy, ~0.17 s of CPU to import, is
    not imported by watch at start, by the live evaluation or by the final report."""
    code = ("import sys, atexit; atexit.register(lambda: print('numpy imported:', 'numpy' in sys.modules, "
            "file=sys.stderr)); from doctor.cli import main; sys.argv[0] = 'grpo-doctor'; main()")
    p = _watch(code, tmp_path, ROWS)
    assert p.returncode == 0, p.stderr
    rep = json.loads((tmp_path / "run" / "grpo-doctor-report.json").read_text())
    assert rep["run"]["watch"]["status"] == "exited"
    assert p.stdout.count("'global_step/max_steps'") == 4   # the rows passed through (and were read as metrics)
    assert "numpy imported: False" in p.stderr, p.stderr[-2000:]


def test_catalog_cache_gives_what_the_toml_gives(tmp_path: Path, monkeypatch) -> None:
    """The parsed rule files come from the cache only for the very same files: an edited file is parsed again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rules = tmp_path / "rules"
    for f in registry.rule_files()[:3]:
        (rules / f.parent.name).mkdir(parents=True, exist_ok=True)
        (rules / f.parent.name / f.name).write_bytes(f.read_bytes())
    files = registry.rule_files(rules)
    want = [registry._parse(f) for f in files]
    assert registry._parsed(files) == want                       # parsed, then written
    assert len(list((tmp_path / "cache" / "grpo-doctor").glob("rules-*.json"))) == 1
    assert registry._parsed(files) == want                       # read back
    text = files[0].read_text()
    files[0].write_text(re.sub(r'(?m)^title = ".*"$', 'title = "edited"', text, count=1))
    got = registry._parsed(files)
    assert got[0]["title"] == "edited" and got[1:] == want[1:]
    assert len(list((tmp_path / "cache" / "grpo-doctor").glob("rules-*.json"))) == 2


def test_watch_detects_the_framework_once_per_evaluation(tmp_path: Path) -> None:
    """A report's findings and its run block name the framework from one detection (framework_of reads the logs'
    heads for the final report): framework_of runs once per evaluation of the findings, not once more per report."""
    code = ("import sys, atexit, doctor.run_terms as a, doctor.live.reporting as r\n"
            "n = {'fw': 0, 'eval': 0}\n"
            "orig, find = a.framework_of, r.Reporting._findings\n"
            "def fw(*x, **k):\n    n['fw'] += 1\n    return orig(*x, **k)\n"
            "def fi(*x, **k):\n    n['eval'] += 1\n    return find(*x, **k)\n"
            "a.framework_of, r.Reporting._findings = fw, fi\n"
            "atexit.register(lambda: print('counts', n['fw'], n['eval'], file=sys.stderr))\n"
            "from doctor.cli import main\nsys.argv[0] = 'grpo-doctor'\nmain()\n")
    p = _watch(code, tmp_path, ROWS)
    assert p.returncode == 0, p.stderr
    detections, evaluations = _counts(p.stderr)
    assert evaluations >= 1 and detections == evaluations, (detections, evaluations)
    rep = json.loads((tmp_path / "run" / "grpo-doctor-report.json").read_text())
    assert "framework_source" in rep["run"]


# imported only when a run needs them: the fallback rules' advice at the first exception or traceback, the GPU
# snapshot parsers at the first GPU sample, psutil at the first sample or when processes outlive the run,
# tomllib when a rule file is parsed rather than read from the cache, secrets (hmac, OpenSSL) never
LAZY = ("secrets", "tomllib", "doctor.checks.fallback.advice", "doctor.classify.hints", "doctor.classify.failing_line",
        "doctor.sources.gpu", "doctor.sources.gpu_nvml", "psutil")


def test_watch_of_a_clean_run_leaves_the_lazy_modules_unimported(tmp_path: Path) -> None:
    """watch of a run that prints metric rows and exits 0, no GPU sampling: none of LAZY is imported from its start
    to its final report (the second launch: the first may parse the rule files to fill the catalog cache)."""
    code = ("import sys, atexit; atexit.register(lambda: print('lazy imported:', [m for m in " + repr(LAZY)
            + " if m in sys.modules], file=sys.stderr)); from doctor.cli import main; sys.argv[0] = 'grpo-doctor'; "
            "main()")
    for _ in range(2):
        p = _watch(code, tmp_path, ROWS)
        assert p.returncode == 0, p.stderr
    rep = json.loads((tmp_path / "run" / "grpo-doctor-report.json").read_text())
    assert rep["run"]["watch"]["status"] == "exited"
    assert p.stdout.count("'global_step/max_steps'") == 4
    assert "lazy imported: []" in p.stderr, p.stderr[-2000:]


def test_the_lazy_modules_load_when_a_run_needs_them(tmp_path: Path) -> None:
    """The other side: a run that ends in an exception no rule knows gets GD999 with the message hints
    (doctor/classify/hints.py) read, so what is imported late is still imported."""
    code = ("import sys, atexit; atexit.register(lambda: print('hints imported:', 'doctor.classify.hints' in "
            "sys.modules, file=sys.stderr)); from doctor.cli import main; sys.argv[0] = 'grpo-doctor'; main()")
    crash = "import sys; print('Traceback (most recent call last):\\n  File \"x.py\", line 1, in <module>\\n" \
            "WidgetError: the widget broke', file=sys.stderr); sys.exit(1)"
    p = _watch(code, tmp_path, crash)
    assert p.returncode == 1, p.stderr
    rep = json.loads((tmp_path / "run" / "grpo-doctor-report.json").read_text())
    assert any("WidgetError" in f["message"] for f in rep["findings"]), rep["findings"]
    assert "hints imported: True" in p.stderr, p.stderr[-2000:]


def test_watch_does_not_evaluate_a_session_that_took_no_input(tmp_path: Path) -> None:
    """A live evaluation of a session fed nothing since the last one reuses its findings (Session.generation): a run
    that prints four rows and then nothing for 12 s is evaluated live every 5 s, but the rules finish only when the
    session moved (once live, once for the final report), and the report is the one of a session finished each time."""
    code = ("import sys, atexit, doctor.engine.session as s, doctor.live.reporting as r\n"
            "n = {'finish': 0, 'eval': 0}\n"
            "fin, find = s.Session.finish, r.Reporting._findings\n"
            "def fi(*x, **k):\n    n['finish'] += 1\n    return fin(*x, **k)\n"
            "def fd(*x, **k):\n    n['eval'] += 1\n    return find(*x, **k)\n"
            "s.Session.finish, r.Reporting._findings = fi, fd\n"
            "atexit.register(lambda: print('counts', n['finish'], n['eval'], file=sys.stderr))\n"
            "from doctor.cli import main\nsys.argv[0] = 'grpo-doctor'\nmain()\n")
    child = ROWS + "import time; time.sleep(12)"
    p = _watch(code, tmp_path, child)
    assert p.returncode == 0, p.stderr
    finishes, evaluations = _counts(p.stderr)
    assert evaluations >= 3 and finishes < evaluations, (finishes, evaluations)
    # the same findings as analyze of the console log (one finish of the whole session)
    rep = json.loads((tmp_path / "run" / "grpo-doctor-report.json").read_text())
    got = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(tmp_path / "run" / "grpo-doctor-console.log"),
                          "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert [f["rule_id"] for f in rep["findings"]] == [f["rule_id"] for f in json.loads(got.stdout)["findings"]]


def test_watch_holds_the_garbage_collector_only_while_it_starts(tmp_path: Path) -> None:
    """The process entry holds the cyclic garbage collector off while watch imports its modules and builds its rules
    (doctor/live/collector.py); then what the start made is frozen (never walked again) and the collector runs for
    what the run makes: on at the end, with the start's objects in the permanent generation."""
    code = ("import sys, gc, atexit; atexit.register(lambda: print('counts', int(gc.isenabled()), gc.get_freeze_count(), "
            "file=sys.stderr)); from doctor.cli import main; sys.argv[0] = 'grpo-doctor'; main()")
    p = _watch(code, tmp_path, ROWS)
    assert p.returncode == 0, p.stderr
    enabled, frozen = _counts(p.stderr)
    assert enabled == 1 and frozen > 10_000, (enabled, frozen)


def test_the_collector_is_left_as_a_library_caller_set_it() -> None:
    """Without the process entry's hold (watch called in process), resume changes nothing: the collector stays as
    the caller set it, and nothing is frozen."""
    import gc

    from doctor.live import collector
    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        gc.disable()
        collector.resume()
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
        gc.enable()
        collector.resume()
        assert gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable() if was else gc.disable()
