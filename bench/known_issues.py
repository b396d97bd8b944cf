"""Known-issues benchmark: leave-one-out accuracy of the thread shown first, the threshold sweep, lookup time.

Usage:
  python bench/known_issues.py [CORPUS_DIR] [--threshold X]      (default corpus: fixtures/devlogs)

1. Dev logs, leave-one-out: each case is analyzed in-process; its primary finding (the first at ``error`` that
   quotes a line) is looked up with the case's own thread (label.json ``source``) removed from the index. The
   thread shown first counts as "about the same failure" when its category is the case's labelled category or
   one of its ``also_accept``; otherwise it is a wrong thread. A case "has a similar thread" when the index,
   without its own thread, holds a thread of an accepted category. Printed: right / cases with a similar
   thread, wrong / all cases, and one line per case.
2. The index itself, leave-one-out (the held-apart cases the threshold was tuned on): each signature of each
   thread is a query with its own thread removed; same criterion (category).
3. Time: analyze + JSON render of a log with an exception, with the lookup and with it switched off (best of
   5, after a warm-up that does not load the index), and of a healthy log (the index must stay unloaded).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor import known  # noqa: E402
from doctor.analyze import analyze  # noqa: E402
from doctor.classify.message import parse  # noqa: E402
from doctor.known import fit  # noqa: E402
from doctor.known import index as kindex  # noqa: E402
from doctor.model import Severity  # noqa: E402
from doctor.render import jsonr  # noqa: E402


def primary(report):
    return next((f for f in report.findings if f.severity == Severity.error and f.evidence), None)


def lookup(f, exclude: frozenset[str], threshold: float):
    idx = kindex.load()
    best = {}
    for e in f.evidence[:known.MAX_EVIDENCE]:
        msg = parse(e.text)
        if len(msg.text) < 8 and not msg.exc_type:
            continue
        for m in idx.match(msg.exc_type, msg.text, f.category, threshold=threshold, exclude=exclude):
            if m.thread not in best or m.score > best[m.thread].score:
                best[m.thread] = m
    return sorted(best.values(), key=lambda m: (-round(m.score, 3), m.thread))[:known.MAX_SHOWN]


SIMILAR = 0.4


def has_similar(f, ok: set[str], exclude: frozenset[str]) -> bool:
    """Some other thread of an accepted category resembles the quoted line (no category bonus, no threshold)."""
    idx = kindex.load()
    for e in f.evidence[:known.MAX_EVIDENCE]:
        msg = parse(e.text)
        for m in idx.match(msg.exc_type, msg.text, None, top=50, threshold=SIMILAR, exclude=exclude):
            if m.category in ok:
                return True
    return False


def devlogs(corpus: Path, threshold: float, verbose: bool = True) -> dict:
    idx = kindex.load()
    cats_by_thread = {t["thread"]: t["category"] for t in idx.threads}
    n = similar = loose = right = wrong = 0
    steps = {"ungated": [0, 0], "gated": [0, 0]}  # the resolution shown as a fix step: [right, wrong]
    for case in sorted(p for p in corpus.iterdir() if (p / "label.json").is_file()):
        label = json.loads((case / "label.json").read_text())
        own = re.match(r"\S+#\d+", label["source"]).group(0)
        ok = {label["category"], *label.get("also_accept", [])}
        n += 1
        loose += any(c in ok for t, c in cats_by_thread.items() if t != own)
        report = analyze([str(case / "log.txt")])
        f = primary(report)
        similar_here = f is not None and has_similar(f, ok, frozenset({own}))
        similar += similar_here
        shown = lookup(f, frozenset({own}), threshold) if f is not None else []
        verdict = "-"
        if shown:
            verdict = "right" if shown[0].category in ok else "WRONG"
            right += verdict == "right"
            wrong += verdict == "WRONG"
        step = ""
        resolved = [m for m in shown if m.confidence != "unresolved" and m.resolution]
        for kind, cands in (("ungated", resolved),
                            ("gated", [m for m in resolved if f is not None and fit.fits(m, f, report.run)])):
            if cands:
                ok_step = cands[0].category in ok
                steps[kind][0 if ok_step else 1] += 1
                step += f" {kind[0]}:{cands[0].thread}{'' if ok_step else '(WRONG)'}"
        if verbose:
            top = f"{shown[0].thread} [{shown[0].category}] {shown[0].score:.2f}" if shown else "(none)"
            print(f"  {case.name[:60]:60} {label['category']:28} {verdict:5} {'S' if similar_here else ' '} {top}"
                  + (f"  fix step{step}" if step else ""))
    return {"cases": n, "with_similar": similar, "loose": loose, "right": right, "wrong": wrong, "steps": steps}


def index_loo(threshold: float) -> dict:
    idx = kindex.load()
    n = right = wrong = 0
    for t in idx.threads:
        for s in t["signatures"]:
            n += 1
            shown = idx.match(s.get("type"), s["message"], None, threshold=threshold, exclude=frozenset({t["thread"]}))
            if shown:
                right += shown[0].category == t["category"]
                wrong += shown[0].category != t["category"]
    return {"queries": n, "right": right, "wrong": wrong}


def timing(log_exc: Path, log_ok: Path, reps: int = 7) -> None:
    """analyze + JSON render, best and median of ``reps``; "with lookup" starts from an unloaded index each time
    (what one `grpo-doctor analyze` invocation pays), "without" has the lookup switched off."""
    def run(path: Path, on: bool, clock=time.perf_counter) -> list[float]:
        out = []
        saved = known.for_finding
        for _ in range(reps):
            known._lookup.cache_clear()
            kindex._index = None
            if not on:
                known.for_finding = lambda f: []  # type: ignore[assignment]
            t = clock()
            jsonr.render(analyze([str(path)]))
            out.append(clock() - t)
            known.for_finding = saved  # type: ignore[assignment]
        return sorted(out)

    kindex._index = None
    jsonr.render(analyze([str(log_ok)]))
    print(f"healthy log: index loaded after analyze+render: {kindex.loaded()}")
    run(log_exc, True)  # warm-up: imports, catalog
    off, on = run(log_exc, False), run(log_exc, True)
    med = reps // 2
    print(f"log with an exception, analyze+render: best {off[0] * 1000:.1f} / median {off[med] * 1000:.1f} ms without "
          f"lookup; best {on[0] * 1000:.1f} / median {on[med] * 1000:.1f} ms with (index loaded from scratch each run): "
          f"+{(on[0] - off[0]) * 1000:.1f} ms best, +{(on[med] - off[med]) * 1000:.1f} ms median")
    off, on = run(log_exc, False, time.process_time), run(log_exc, True, time.process_time)
    print(f"same, CPU time of this process (what a loaded machine does not inflate): best {off[0] * 1000:.1f} / "
          f"median {off[med] * 1000:.1f} ms without; best {on[0] * 1000:.1f} / median {on[med] * 1000:.1f} ms with: "
          f"+{(on[0] - off[0]) * 1000:.1f} ms best, +{(on[med] - off[med]) * 1000:.1f} ms median")
    loads, cpu = [], []
    for _ in range(reps):
        kindex._index = None
        t, c = time.perf_counter(), time.process_time()
        kindex.load()
        loads.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    print(f"load of the index alone ({len(kindex.load().threads)} threads): best {min(loads) * 1000:.1f} ms wall, "
          f"{min(cpu) * 1000:.1f} ms CPU; median {sorted(loads)[med] * 1000:.1f} ms wall, {sorted(cpu)[med] * 1000:.1f} ms CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", type=Path, default=ROOT / "fixtures" / "devlogs")
    ap.add_argument("--threshold", type=float, default=kindex.THRESHOLD)
    ap.add_argument("--no-time", action="store_true")
    a = ap.parse_args()
    if not a.no_time:
        timing(ROOT / "fixtures" / "logs" / "dev-020-batch-1x1-numgen8-plain-traceback",
               ROOT / "fixtures" / "logs" / "real-grpo-lora-healthy")
    print(f"index: {len(kindex.load().threads)} threads")
    print("threshold sweep (index leave-one-out: right / wrong of queries):")
    for th in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7):
        r = index_loo(th)
        print(f"  {th:.2f}: {r['right']}/{r['queries']} right, {r['wrong']} wrong")
    print(f"dev logs, leave-one-out, threshold {a.threshold}:")
    r = devlogs(a.corpus, a.threshold)
    print(f"top thread about the same failure: {r['right']}/{r['with_similar']} cases with a similar thread "
          f"({100 * r['right'] / max(1, r['with_similar']):.0f}%; {r['right']}/{r['loose']} = "
          f"{100 * r['right'] / max(1, r['loose']):.0f}% of the cases whose category the index holds at all); "
          f"wrong thread shown: {r['wrong']}/{r['cases']} ({100 * r['wrong'] / max(1, r['cases']):.0f}%)")
    st = r["steps"]
    print(f"resolution shown as a fix step (doctor/known/fit.py): without the fit gate {st['ungated'][0]} right / "
          f"{st['ungated'][1]} wrong; with it {st['gated'][0]} right / {st['gated'][1]} wrong")


if __name__ == "__main__":
    main()
