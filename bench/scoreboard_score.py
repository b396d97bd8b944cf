"""The scoreboard's scoring and outputs: per-class precision, recall and F1, the summary, the published JSON document,
the markdown page, and the baseline of passing checks that --quick compares against (bench/scoreboard.py)."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
from scoreboard_cases import FIRST_STEP_TIMEOUT, GRACE, HANG_TIMEOUT

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CaseResult:
    name: str
    cls: str
    framework: str
    description: str
    expected_verdicts: list[str]
    rc: int | None = None
    wall_s: float = 0.0
    watch_cpu_s: float = 0.0
    watch_cpu_share: float = 0.0
    run_cpu_s: float = 0.0            # the CPU of the run watch supervised (all its processes, reaped)
    got_category: str | None = None
    got_rule: str | None = None
    got_severity: str | None = None
    got_action: str | None = None
    got_title: str | None = None
    got_evidence: list[str] = field(default_factory=list)
    watch_category: str | None = None
    got_framework: str | None = None
    category_ok: bool = False
    evidence_ok: bool | None = None
    verdict_ok: bool | None = None
    false_alarm: bool | None = None
    error_findings: list[str] = field(default_factory=list)
    hang_detect_s: float | None = None
    hang_stacks: str | None = None   # hangs: "captured/expected" ranks whose py-spy stack watch's hang report holds
    skipped: str | None = None



# doctor/live/hangs.py writes "== py-spy dump: pid P rank R pid P ==" (rank set) or "== py-spy dump: pid P pid P =="
_DUMP = re.compile(r"^== py-spy dump: pid \d+ (?:rank (\d+) )?pid \d+ ==", re.M)


def hang_stacks(run_dir: Path, ranks: int) -> str:
    """How many of the run's ``ranks`` training processes have a py-spy stack in watch's hang report(s): with
    several ranks, each ``rank r`` by number; with one process, any stack (its rank is not set)."""
    seen: set[int] = set()
    dumps = 0
    for path in sorted(run_dir.glob("*hang*.txt")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _DUMP.finditer(text):
            dumps += 1
            if m.group(1) is not None:
                seen.add(int(m.group(1)))
    got = len(seen & set(range(ranks))) if ranks > 1 else min(dumps, 1)
    return f"{got}/{ranks}"


def _stacks_ok(r: CaseResult) -> bool | None:
    if r.hang_stacks is None:
        return None
    got, want = r.hang_stacks.split("/")
    return got == want


def _share(oks: list[bool | None]) -> float | None:
    return round(sum(bool(x) for x in oks) / len(oks), 3) if oks else None


def class_scores(results: list[CaseResult]) -> dict[str, dict]:
    done = [r for r in results if not r.skipped]
    classes = sorted({r.cls for r in done if r.cls != "healthy"})
    out = {}
    for c in classes:
        mine = [r for r in done if r.cls == c]
        tp = sum(r.category_ok for r in mine)
        fn = len(mine) - tp
        fp = sum(1 for r in done if r.cls != c and r.got_category == c
                 and (r.cls != "healthy" or r.false_alarm))
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        ev = [r.evidence_ok for r in mine if r.evidence_ok is not None]
        hangs = [r.hang_detect_s for r in mine if r.hang_detect_s is not None]
        stacks = [_stacks_ok(r) for r in mine if r.hang_stacks is not None]
        out[c] = {"frameworks": sorted({r.framework for r in mine}), "cases": len(mine), "tp": tp, "fp": fp, "fn": fn,
                  "precision": round(prec, 3), "recall": round(rec, 3), "f1": round(f1, 3),
                  "evidence_right": f"{sum(ev)}/{len(ev)}" if ev else None,
                  "verdict_right": f"{sum(bool(r.verdict_ok) for r in mine)}/{len(mine)}",
                  "hang_detect_s": max(hangs) if hangs else None,
                  "hang_stacks_right": f"{sum(bool(x) for x in stacks)}/{len(stacks)}" if stacks else None,
                  "passed": {"category": tp == len(mine), "verdict": all(r.verdict_ok for r in mine),
                             "evidence": all(ev) if ev else None,
                             **({"stacks": all(stacks)} if stacks else {})}}
    return out


def healthy_scores(results: list[CaseResult]) -> dict:
    """The healthy runs as one more entry for the baseline: passed when none got a finding at error."""
    healthy = [r for r in results if r.cls == "healthy" and not r.skipped]
    alarms = [r.name for r in healthy if r.false_alarm]
    return {"frameworks": sorted({r.framework for r in healthy}), "runs": len(healthy), "false_alarms": alarms,
            "passed": {"no_false_alarm": not alarms} if healthy else {}}


def gated(doc: dict) -> dict[str, dict]:
    """What the baseline and the regression check compare: the fault classes and the healthy runs."""
    return {**doc["categories"], "healthy": doc["healthy"]}


def summary(results: list[CaseResult], classes: dict[str, dict], start_cpu: float | None = None) -> dict:
    done = [r for r in results if not r.skipped]
    faults = [r for r in done if r.cls != "healthy"]
    healthy = [r for r in done if r.cls == "healthy"]
    ev = [r.evidence_ok for r in faults if r.evidence_ok is not None]
    hangs = [r.hang_detect_s for r in faults if r.hang_detect_s is not None]
    wall = sum(r.wall_s for r in done)
    cpu = sum(r.watch_cpu_s for r in done)
    # the run's own CPU is measured only for a case that ran alone (--jobs 1): the share over those cases only
    alone = [r for r in done if r.run_cpu_s > 0]
    run_cpu = sum(r.run_cpu_s for r in alone)
    cpu_alone = sum(r.watch_cpu_s for r in alone)
    f1s = [v["f1"] for v in classes.values()]
    return {
        "macro_f1": round(sum(f1s) / len(f1s), 3) if f1s else None,
        "classes": len(classes),
        "fault_cases": len(faults),
        "top1_right": sum(r.category_ok for r in faults),
        "evidence_right": sum(bool(x) for x in ev), "evidence_scored": len(ev),
        "verdict_right": sum(bool(r.verdict_ok) for r in faults),
        "framework_right": sum(r.got_framework == r.framework for r in done), "runs": len(done),
        "healthy_runs": len(healthy),
        "false_alarms": sum(bool(r.false_alarm) for r in healthy),
        "hang_stacks_right": sum(bool(_stacks_ok(r)) for r in faults if r.hang_stacks is not None),
        "hang_stacks_scored": sum(1 for r in faults if r.hang_stacks is not None),
        "hang_detect_s": {"max": max(hangs), "mean": round(sum(hangs) / len(hangs), 1),
                          "hang_timeout_s": HANG_TIMEOUT, "first_step_timeout_s": FIRST_STEP_TIMEOUT,
                          "grace_s": GRACE} if hangs else None,
        "watch_cpu_share": round(cpu / wall, 4) if wall else None,
        "watch_cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
        "run_cpu_s": round(run_cpu, 1), "watch_cpu_of_run_cpu": round(cpu_alone / run_cpu, 4) if run_cpu else None,
        "run_cpu_cases": len(alone),
        # watch's fixed cost per launch (watch -- true) and its share of the wall time without it: what a long run sees
        "watch_start_cpu_s": start_cpu,
        "watch_cpu_share_after_start": round(max(cpu - start_cpu * len(done), 0.0) / wall, 4)
        if start_cpu is not None and wall else None,
        "skipped": [f"{r.name}: {r.skipped}" for r in results if r.skipped],
    }


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"os": f"{platform.system()} {platform.release()}", "cpu": cpu, "cores": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1), "gpu": None,
            "python": platform.python_version()}


def commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                              timeout=30).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def render_markdown(doc: dict) -> str:
    s = doc["summary"]
    v = doc["versions"]
    m = doc["machine"]
    hd = s["hang_detect_s"]
    lines = [
        "# Scoreboard: real injected faults, scored",
        "",
        "Generated by `python bench/scoreboard.py` (the whole file; do not edit by hand). Each case is a real "
        "`swift rlhf --rlhf_type grpo` run, or a TRL `GRPOTrainer` script, of a tiny Qwen2 model on CPU, with a fault "
        "injected for real (bench/scoreboard_cases.py says how), run under "
        "`grpo-doctor watch` and diagnosed with `grpo-doctor analyze`. See the docstring of `bench/scoreboard.py` "
        "for how each figure is computed.",
        "",
        f"- date: {doc['generated']}, mode: {doc['mode']}, grpo-doctor {doc['grpo_doctor']['version']} "
        f"(commit {doc['grpo_doctor']['commit']}), {doc['total_s']:.0f} s in all "
        + (f"(summed over {doc['merged_from']} result files, which may have run side by side)"
           if doc.get("merged_from", 1) > 1 else "(one run at a time)"),
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, no GPU, {m['os']}, Python {m['python']}",
        "",
        f"**macro-F1 {s['macro_f1']}** over {s['classes']} fault classes; top-1 right {s['top1_right']}/"
        f"{s['fault_cases']}; evidence right {s['evidence_right']}/{s['evidence_scored']}; verdict right "
        f"{s['verdict_right']}/{s['fault_cases']}; false alarms {s['false_alarms']}/{s['healthy_runs']} healthy runs; "
        + (f"hang caught and stopped {hd['mean']} s (mean), {hd['max']} s (max) after the fault began "
           f"(--hang-timeout {hd['hang_timeout_s']:g}, --phase-timeout first-step={hd['first_step_timeout_s']:g}, "
           f"--grace {hd['grace_s']:g}), with the stacks of every rank in {s.get('hang_stacks_right', '?')}/"
           f"{s.get('hang_stacks_scored', '?')} hangs; " if hd else "")
        + f"watch's own CPU {100 * (s['watch_cpu_share'] or 0):.1f}% of the runs' wall time"
        + (f" ({100 * s['watch_cpu_of_run_cpu']:.1f}% of the runs' own CPU time, over the "
           f"{s.get('run_cpu_cases', s['runs'])} runs that ran alone)" if s.get("watch_cpu_of_run_cpu") else "")
        + (f", of which {s['watch_start_cpu_s']:g} s per launch is its fixed start and end (watch -- true): without "
           f"it {100 * s['watch_cpu_share_after_start']:.1f}%" if s.get("watch_cpu_share_after_start") is not None
           else "") + "; framework named right "
        f"in {s.get('framework_right', '?')}/{s.get('runs', '?')} runs.",
        "",
        "| class | frameworks | cases | precision | recall | F1 | evidence | verdict | hang s | hang stacks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, x in doc["categories"].items():
        lines.append(f"| {c} | {', '.join(x['frameworks'])} | {x['cases']} | {x['precision']} | {x['recall']} | "
                     f"{x['f1']} | {x['evidence_right'] or 'n/a'} | {x['verdict_right']} | "
                     f"{x['hang_detect_s'] if x['hang_detect_s'] is not None else ''} | "
                     f"{x.get('hang_stacks_right') or ''} |")
    lines += ["", "## Cases", "",
              "| case | class | got (findings[0]) | verdict | evidence | rc | wall s | note |",
              "|---|---|---|---|---|---|---|---|"]
    for r in doc["cases"]:
        if r["skipped"]:
            lines.append(f"| {r['name']} | {r['cls']} | skipped | | | | | {r['skipped']} |")
            continue
        got = f"{r['got_rule']} {r['got_category']}" if r["got_category"] else "(no error)"
        mark = "ok" if r["category_ok"] else "MISS"
        ev = {True: "ok", False: "wrong", None: "n/a"}[r["evidence_ok"]]
        vd = "" if r["verdict_ok"] is None else f"{r['got_action']} ({'ok' if r['verdict_ok'] else 'want ' + '/'.join(r['expected_verdicts'])})"
        lines.append(f"| {r['name']} | {r['cls']} | {mark}: {got} | {vd} | {ev} | {r['rc']} | {r['wall_s']} | "
                     f"{r['description']} |")
    misses = []
    for r in doc["cases"]:
        if r["skipped"]:
            continue
        if r["cls"] == "healthy" and r["false_alarm"]:
            misses.append(f"- {r['name']}: false alarm, {', '.join(r['error_findings'])}")
        elif r["cls"] != "healthy":
            what = [w for w, bad in (("category", not r["category_ok"]), ("verdict", r["verdict_ok"] is False),
                                     ("evidence", r["evidence_ok"] is False)) if bad]
            if what:
                misses.append(f"- {r['name']} ({r['cls']}): {', '.join(what)} wrong; got {r['got_rule']} "
                              f"{r['got_category']}, action {r['got_action']}")
    lines += ["", "## Misses", "", *(misses or ["none"])]
    if s["skipped"]:
        lines += ["", "Skipped: " + "; ".join(s["skipped"])]
    return "\n".join(lines) + "\n"


def baseline_of(classes: dict[str, dict]) -> dict[str, list[str]]:
    return {c: sorted(k for k, ok in x["passed"].items() if ok) for c, x in classes.items() if x["passed"]}


def write_baseline(path: str, classes: dict[str, dict]) -> None:
    Path(path).write_text(json.dumps(
        {"comment": "checks that passed per class in `bench/scoreboard.py --quick`; "
                    "tests/test_scoreboard.py fails when one of them fails",
         "classes": baseline_of(classes)}, indent=1) + "\n", encoding="utf-8")


def regressions(classes: dict[str, dict], base: dict[str, list[str]]) -> list[str]:
    out = []
    for c, checks in base.items():
        now = classes.get(c)
        if now is None:
            out.append(f"{c}: no case ran")
            continue
        out += [f"{c}: {k} passed in the baseline, fails now" for k in checks if not now["passed"].get(k)]
    return out


def fault_classes(results: list[CaseResult], categories: dict[str, dict]) -> list[dict]:
    """One object per fault class and framework (the published schema): the category it should get, its runs, the
    category's precision and recall over every run of that framework, and the share of runs with the right evidence
    line and verdict; for hangs the seconds from the fault to watch's stop."""
    done = [r for r in results if not r.skipped and r.cls != "healthy"]
    out = []
    for cls, fw in sorted({(r.cls, r.framework) for r in done}):
        mine = [r for r in done if r.cls == cls and r.framework == fw]
        same_fw = [r for r in results if not r.skipped and r.framework == fw]
        tp = sum(r.category_ok for r in mine)
        fp = sum(1 for r in same_fw if r.cls != cls and r.got_category == cls and (r.cls != "healthy" or r.false_alarm))
        ev = [r.evidence_ok for r in mine if r.evidence_ok is not None]
        hangs = [r.hang_detect_s for r in mine if r.hang_detect_s is not None]
        out.append({"fault": cls, "framework": fw, "expected_category": cls, "runs": len(mine),
                    "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
                    "recall": round(tp / len(mine), 3) if mine else 0.0,
                    "evidence_right": round(sum(bool(x) for x in ev) / len(ev), 3) if ev else None,
                    "verdict_right": round(sum(bool(r.verdict_ok) for r in mine) / len(mine), 3) if mine else None,
                    "detect_s": max(hangs) if hangs else None,
                    "stacks_right": _share([_stacks_ok(r) for r in mine if r.hang_stacks is not None]),
                    "cases": [r.name for r in mine]})
    return out


def document(results: list[CaseResult], mode: str, versions: dict, total_s: float,
             start_cpu: float | None = None) -> dict:
    from doctor import __version__
    classes = class_scores(results)
    summ = summary(results, classes, start_cpu)
    return {
        "schema_version": 1,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": mode,
        "grpo_doctor": {"version": __version__, "commit": commit()},
        "versions": versions,
        "machine": machine(),
        "total_s": round(total_s, 1),
        "macro_f1": summ["macro_f1"],
        "false_alarms": summ["false_alarms"],
        "summary": summ,
        "classes": fault_classes(results, classes),   # per fault class and framework
        "categories": classes,                         # per expected category, all frameworks together
        "healthy": healthy_scores(results),
        "cases": [asdict(r) for r in results],
    }

