"""The HTML report (--format html), --series and the terminal sparklines (issue 21).

The browser tests open each page in a real headless Chromium (Debian's `chromium`; skipped with the reason when it
is not installed): no console error, no request leaves the file (Chromium's own network log lists every URL it
requested), every finding's rule id is in the page, every chart has points. Screenshots are saved to
$GRPO_DOCTOR_ARTIFACTS (default: the test's tmp dir).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.render import html as html_r
from doctor.render import text as text_r

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "logs"
LOGGERS = ROOT / "fixtures" / "loggers"
ASSETS = ROOT / "doctor" / "render" / "assets"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAILING = [LOGS / "real-grpo-lora-random-init-zero-reward", LOGS / "edge-console-nan-transformers5",
           LOGGERS / "zero-reward", LOGGERS / "reward-raises"]
HEALTHY = [LOGS / "real-grpo-lora-healthy"]
HOSTILE = ('[INFO:swift] </script><script>window.__pwned=1</script><img src="http://example.invalid/x.png" '
           'onerror="window.__pwned=2"> <b>bold</b> & "quotes" \u202e')


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, cwd=cwd, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def page(paths: list[Path], tmp: Path, *opts: str, name: str = "report.html") -> Path:
    out = tmp / name
    p = cli("analyze", *map(str, paths), "--format", "html", "-o", str(out), *opts)
    assert p.returncode in (0, 1), p.stderr
    assert out.stat().st_size > 0
    return out


def hostile_run(tmp: Path) -> Path:
    d = tmp / "hostile"
    d.mkdir()
    src = (LOGS / "real-grpo-lora-random-init-zero-reward" / "log.txt").read_bytes().decode().split("\n")
    src.insert(5, HOSTILE)
    end = next(i for i, ln in enumerate(src) if "End time of running main" in ln)
    src = src[:end]   # the run stops after step 4 with an exception that no rule knows: GD999 shows its text
    src.append("{'loss': 0.0, 'grad_norm': 0.0, 'reward': 0.0, 'rewards/</script><b>key/mean': 1.0, "
               "'global_step/max_steps': '5/5'}")   # a metric named with markup: a chart label
    src += ["Traceback (most recent call last):", '  File "/work/train.py", line 3, in <module>',
            "    main()", "ValueError: " + HOSTILE]   # also in a finding's message and evidence
    (d / "log.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    return d


# ------------------------------------------------------------------------------------------------ without a browser
def test_vendored_uplot_is_the_recorded_release():
    sums = {"uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
            "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
            "uPlot.LICENSE": "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd"}
    for name, digest in sums.items():
        assert hashlib.sha256((ASSETS / name).read_bytes()).hexdigest() == digest, name
    assert "MIT" in (ASSETS / "uPlot.LICENSE").read_text()


def test_page_is_self_contained_and_lists_findings_in_text_order(tmp_path):
    d = LOGS / "real-grpo-lora-random-init-zero-reward"
    out = page([d], tmp_path).read_text(encoding="utf-8")
    report = analyze([str(d)])
    ids = re.findall(r'<section class="finding \w+" id="finding-\d+" data-rule="(GD\d+)"', out)
    assert ids == [f.rule_id for f in report.findings] and ids
    assert "default-src 'none'" in out
    # nothing fetched at view time: no src/href to another resource, no @import or url() but data:
    assert not re.search(r'\s(?:src|href)\s*=\s*"(?!#)', out)
    assert not re.search(r"@import|url\((?!data:)", out)
    assert "uPlot" in out and "leeoniya/uPlot" in out   # the library inlined with its licence notice


def test_hostile_log_text_is_text(tmp_path):
    out = page([hostile_run(tmp_path)], tmp_path, "--select", "GD999").read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in out and "<img" not in out and "<b>bold" not in out
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;" in out
    data = re.search(r'<script type="application/json" id="grpo-data">(.*?)</script>', out, re.S).group(1)
    assert "<" not in data and "rewards/\\u003c/script\\u003e\\u003cb\\u003ekey/mean" in data
    labels = [s["label"] for c in json.loads(data)["charts"] for s in c["series"]]
    assert "loss" in labels and "rewards/</script><b>key/mean" in labels
    assert "Reward function &lt;/script&gt;&lt;b&gt;key" in out


def test_json_for_script_cannot_close_the_block():
    s = html_r.json_for_script({"k": "</script><!-- \u2028 &"})
    assert "</" not in s and "<!--" not in s and "\u2028" not in s and json.loads(s) == {"k": "</script><!-- \u2028 &"}


def test_json_series_is_additive(tmp_path):
    d = LOGS / "real-grpo-lora-random-init-zero-reward"
    plain = json.loads(cli("analyze", str(d), "--format", "json").stdout)
    with_series = json.loads(cli("analyze", str(d), "--format", "json", "--series").stdout)
    assert "series" not in plain
    series = with_series.pop("series")
    assert with_series == plain
    assert series["steps"]["last"] == 4 and series["steps"]["rows"] == 4
    assert {"reward", "reward_std", "loss", "grad_norm", "kl"} <= set(series["metrics"])
    assert series["metrics"]["reward"] == [[1, 0.0], [2, 0.0], [3, 0.0], [4, 0.0]]
    first = series["markers"][0]
    assert first["rule_id"] == plain["findings"][0]["rule_id"] and first["series"] == "reward"


def test_downsampled_10000_steps_keeps_extremes_and_stays_small(tmp_path):
    rows = [json.loads(x) for x in (LOGS / "real-grpo-lora-healthy" / "logging.jsonl").read_text().splitlines()
            if '"loss"' in x]
    d = tmp_path / "long"
    d.mkdir()
    with open(d / "logging.jsonl", "w") as f:
        for i in range(10_000):   # the real rows of the healthy run, repeated with their steps renumbered
            r = dict(rows[i % len(rows)], **{"global_step/max_steps": f"{i + 1}/10000"})
            if i == 1234:
                r["grad_norm"] = 987.0   # one spike among old steps: downsampling must keep it
            f.write(json.dumps(r) + "\n")
    out = page([d], tmp_path)
    assert out.stat().st_size < 3_000_000
    series = analyze([str(d)], series=True).series
    gn = series["metrics"]["grad_norm"]
    assert len(gn) <= 1100 and [1235, 987.0] in gn and series["downsampled"]


def test_check_ckpt_html(tmp_path):
    out = tmp_path / "ck.html"
    p = cli("check-ckpt", str(ROOT / "fixtures" / "ckpt" / "real-lora-healthy"), "--format", "html", "-o", str(out))
    assert p.returncode in (0, 1), p.stderr
    assert "<h2>Findings</h2>" in out.read_text(encoding="utf-8")


def test_sparkline_only_when_asked(monkeypatch):
    d = LOGS / "real-grpo-lora-random-init-zero-reward"
    report = analyze([str(d)], series=True)
    plain = text_r.render(report)
    assert plain == text_r.render(analyze([str(d)]))           # piped text unchanged
    spark = text_r.render(report, spark=True)
    extra = [ln for ln in spark.splitlines() if ln not in plain.splitlines()]
    assert [x.strip() for x in extra] == ["reward ▁▁▁▁ flat at 0 over steps 1-4",   # GD610, under its message
                                          "completions/mean_length ▁▁▁▁ flat at 16 over steps 1-4"]   # GD641


# ------------------------------------------------------------------------------------------------ in Chromium
def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp / 'profile'}"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


BLINK_LOADER = 101845102   # the traffic annotation of requests a page makes (Chromium's blink_resource_loader)


def page_requests(netlog: str) -> set[str]:
    """URLs the page itself requested (not Chromium's own background requests), but its own file and data: URLs."""
    out = set()
    for m in re.finditer(r'\{[^{}]*"traffic_annotation":(\d+)[^{}]*"url":"([^"]+)"[^{}]*\}', netlog):
        if int(m.group(1)) == BLINK_LOADER and not m.group(2).startswith(("file:", "data:")):
            out.add(m.group(2))
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_request_check_can_fail(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<img src="http://example.invalid/x.png"><script>fetch("https://example.invalid/y")</script>')
    net = tmp_path / "net.json"
    _chromium([f"--log-net-log={net}", "--dump-dom", bad.as_uri()], tmp_path)
    assert page_requests(net.read_text(errors="replace")) == {"http://example.invalid/x.png",
                                                               "https://example.invalid/y"}


def _artifacts(tmp: Path) -> Path:
    d = Path(os.environ.get("GRPO_DOCTOR_ARTIFACTS") or tmp)
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium); the HTML "
                                              "report is checked without a browser by the tests above")
@pytest.mark.parametrize("run", FAILING + HEALTHY + ["hostile"], ids=lambda p: getattr(p, "name", str(p)))
def test_in_chromium(run, tmp_path):
    paths = [hostile_run(tmp_path)] if run == "hostile" else [run]
    select = ["--select", "GD999"] if run == "hostile" else []
    out = page(paths, tmp_path, *select)
    report = analyze([str(p) for p in paths], {"GD999"} if select else None, series=True)
    net = tmp_path / "net.json"
    url = out.resolve().as_uri()
    p = _chromium([f"--log-net-log={net}", "--dump-dom", url], tmp_path)
    dom = p.stdout
    assert 'data-charts-done="' in dom, p.stderr[-2000:]
    console = [ln for ln in p.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    assert net.exists()
    assert not page_requests(net.read_text(errors="replace")), "the page requested something"
    for f in report.findings:
        assert f'data-rule="{f.rule_id}"' in dom
    charts = re.findall(r'<div class="chart" id="chart-\d+"[^>]*>', dom)
    if report.series["steps"]["rows"]:
        assert charts, "no chart"
    else:   # the run failed before its first step: the page says so
        assert not charts and "No metric was logged" in dom
    for c in charts:
        m = re.search(r'data-points="(\d+)"', c)
        assert m and int(m.group(1)) > 0, c
    assert "__pwned" not in dom.split('id="grpo-data"')[0] or "&lt;/script&gt;" in dom
    assert "<img" not in dom
    shot = _artifacts(tmp_path) / f"html-{getattr(run, 'name', run)}.png"
    s = _chromium(["--window-size=1200,1800", f"--screenshot={shot}", url], tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000, s.stderr[-2000:]


def test_watch_writes_its_final_report_as_html_too(tmp_path):
    """watch's hook: the final report also as HTML beside the JSON, with the curves the live run printed."""
    rows = [ln for ln in (LOGS / "real-grpo-lora-random-init-zero-reward" / "log.txt").read_bytes().decode()
            .replace("\r", "\n").split("\n") if "'loss'" in ln]
    script = tmp_path / "child.py"
    script.write_text("import sys\nfor ln in sys.argv[1:]:\n    print(ln[ln.index('{'):], flush=True)\n")
    run_dir = tmp_path / "run"
    p = cli("watch", "--no-preflight", "--gpu-interval", "0", "--run-dir", str(run_dir), "--",
            sys.executable, str(script), *rows)
    assert p.returncode == 0, p.stderr
    page_text = (run_dir / "grpo-doctor-report.html").read_text(encoding="utf-8")
    doc = json.loads((run_dir / "grpo-doctor-report.json").read_text())
    ids = re.findall(r'data-rule="(GD\d+)"', page_text)
    assert ids == [f["rule_id"] for f in doc["findings"]]
    data = json.loads(re.search(r'id="grpo-data">(.*?)</script>', page_text, re.S).group(1))
    reward = next(c for c in data["charts"] if c["series"][0]["label"] == "reward")
    assert [p[0] for p in reward["series"][0]["points"]] == [1, 2, 3, 4]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_panels_one_point_runs_and_gpu_time_in_chromium(tmp_path):
    """Charts sit in a grid of panels; a series of one logged step is shown as its values (no empty axes); the GPU
    charts' time axis reads as durations (a run of hours: 1h00, 2h00), not as thousands of seconds."""
    from doctor.model import Report
    from doctor.render import html
    hour = [[0.0, 100.0], [1800.0, 150.0], [3600.0, 200.0], [5400.0, 250.0], [7200.0, 300.0]]
    series = {"steps": {"first": 1, "last": 1, "max_steps": 100, "rows": 1}, "downsampled": False,
              "max_points": 1000, "metrics": {"reward": [[1, 0.25]], "reward_std": [[1, 0.0]]},
              "gpu": {"x": "seconds", "gpus": {"0": {"name": "H200", "mem_used_mib": hour,
                                                     "util_pct": [[x, 50.0] for x, _ in hour],
                                                     "mem_total_mib": 143771.0}}},
              "markers": [], "log_end": None}
    out = tmp_path / "p.html"
    out.write_text(html.render(Report("0", [], {}, [], series=series)))
    dom = _chromium(["--window-size=1200,1800", "--dump-dom", out.as_uri()], tmp_path).stdout
    assert '<div class="charts">' in dom
    reward = re.search(r'<div class="chart" id="chart-0".*?</div>\s*</div>', dom, re.S).group(0)
    assert "Only one point (step 1): reward 0.25, reward_std 0" in reward and "<canvas" not in reward
    ticks = re.search(r'data-x-ticks="([^"]+)"', dom)
    assert ticks, "no GPU time axis drawn"
    shown = ticks.group(1).split("|")
    assert "1h00" in shown and "2h00" in shown and not any(t.isdigit() and int(t) > 120 for t in shown)
