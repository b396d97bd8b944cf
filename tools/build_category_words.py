"""Train the category-from-words model (doctor/classify/category_words.py) on the labelled logs under
fixtures/devlogs*/ and write doctor/data/category_words.json.gz; or measure it leave-one-set-out.

Needs scikit-learn (a build step, not a runtime dependency: `pip install scikit-learn`).

    python tools/build_category_words.py                 # train on every set, write the model
    python tools/build_category_words.py --cross-validate [--tool SET=accuracy.json ...]

--cross-validate trains on all sets but one and predicts that one, for every set; with --tool (a bench/accuracy.py
--json result of the tool on that set, e.g. its measure at harvest), it counts what the session's use of the model
(doctor/engine/session.py: only over a generic primary finding of category `other`, at MIN_MARGIN and MIN_SCORE)
changes there.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor.classify.category_words import MIN_MARGIN, MIN_SCORE, TAIL_LINES, tokens  # noqa: E402

OUT = ROOT / "doctor" / "data" / "category_words.json.gz"
GENERIC = {"GD999", "GD326", "GD327", "GD328", "GD329", "GD330"}
C = 0.5            # LinearSVC's regularisation, chosen leave-one-set-out among 0.1-2
MIN_DF, MAX_DF = 2, 0.3
PRUNE = 0.005      # coefficients below this are left out of the file (the build checks nothing changes by it)


def cases() -> list[dict]:
    out = []
    for label in sorted(ROOT.glob("fixtures/devlogs*/*/label.json")):
        d = json.loads(label.read_text())
        texts = []
        for name in ("log.txt", "command.txt"):
            p = label.parent / name
            if p.is_file():
                texts.append("\n".join(p.read_text(errors="replace").splitlines()[-TAIL_LINES:]))
        out.append({"set": label.parent.parent.name, "case": label.parent.name, "category": d["category"],
                    "accept": {d["category"], *d.get("also_accept", [])}, "doc": "\n".join(texts)})
    return out


def _fit(train: list[dict]):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC
    vec = TfidfVectorizer(analyzer=lambda doc: list(tokens(doc)), min_df=MIN_DF, max_df=MAX_DF, sublinear_tf=True)
    x = vec.fit_transform([c["doc"] for c in train])
    clf = LinearSVC(C=C).fit(x, [c["category"] for c in train])
    return vec, clf


def _top(clf, vec, docs: list[str]) -> list[tuple[str, float, float]]:
    """(best category, its lead over the next, its decision value) per document."""
    d = clf.decision_function(vec.transform(docs))
    out = []
    for row in d:
        order = sorted(range(len(row)), key=lambda k: -row[k])
        out.append((clf.classes_[order[0]], float(row[order[0]] - row[order[1]]), float(row[order[0]])))
    return out


def build() -> None:
    every = cases()
    vec, clf = _fit(every)
    vocab = vec.get_feature_names_out()
    idf = {t: round(float(v), 6) for t, v in zip(vocab, vec.idf_)}
    coef: dict[str, dict[str, float]] = {}
    for j, t in enumerate(vocab):
        w = {str(k): round(float(clf.coef_[k, j]), 5) for k in range(len(clf.classes_)) if abs(clf.coef_[k, j]) >= PRUNE}
        if w:
            coef[t] = w
    digest = hashlib.sha256("\n".join(f"{c['set']}/{c['case']}\t{c['category']}" for c in every).encode()).hexdigest()
    checks = [{"case": f"{c['set']}/{c['case']}", "category": cat, "margin": round(m, 6), "score": round(v, 6)}
              for c, (cat, m, v) in list(zip(every, _top(clf, vec, [c["doc"] for c in every])))[::25]]
    model = {"about": "tools/build_category_words.py: LinearSVC(C=%s) over tf-idf of the last %d lines"
                      % (C, TAIL_LINES), "trained_on": len(every), "cases_digest": digest,
             "classes": list(clf.classes_), "intercept": [round(float(v), 6) for v in clf.intercept_],
             "idf": idf, "coef": coef, "checks": checks}
    OUT.write_bytes(gzip.compress(json.dumps(model, sort_keys=True).encode(), mtime=0))
    print(f"{OUT.relative_to(ROOT)}: {len(every)} logs, {len(clf.classes_)} categories, {len(idf)} words, "
          f"{sum(len(w) for w in coef.values())} weights, {OUT.stat().st_size} bytes")


def cross_validate(tool_files: list[str]) -> None:
    every = cases()
    tool: dict[tuple[str, str], dict] = {}
    for spec in tool_files:
        name, _, path = spec.partition("=")
        for c in json.loads(Path(path).read_text())["cases"]:
            tool[(name, c["case"])] = c
    right = total = 0
    changed = []
    for held in sorted({c["set"] for c in every}):
        test = [c for c in every if c["set"] == held]
        vec, clf = _fit([c for c in every if c["set"] != held])
        for c, (cat, margin, score) in zip(test, _top(clf, vec, [c["doc"] for c in test])):
            total += 1
            right += cat in c["accept"]
            t = tool.get((held, c["case"]))
            if t and t["rule_id"] in GENERIC and t["got"] == "other" and cat != "other" and margin >= MIN_MARGIN \
                    and score >= MIN_SCORE:
                changed.append((bool(t["top1"]), cat in c["accept"]))
    print(f"the model alone, leave-one-set-out: {right}/{total} ({right / max(total, 1):.1%})")
    if tool:
        n = len(tool)
        before = sum(bool(t["top1"]) for t in tool.values())
        gained = sum(1 for was, now in changed if now and not was)
        lost = sum(1 for was, now in changed if was and not now)
        print(f"over the tool's results ({n} logs, top-1 {before}): {len(changed)} generic primaries re-categorised, "
              f"{gained} wrong -> right, {lost} right -> wrong: top-1 {before + gained - lost}/{n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cross-validate", action="store_true")
    ap.add_argument("--tool", action="append", default=[], metavar="SET=accuracy.json")
    a = ap.parse_args()
    cross_validate(a.tool) if a.cross_validate else build()


if __name__ == "__main__":
    main()
