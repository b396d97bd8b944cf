"""Accuracy benchmark: does `grpo-doctor analyze` name the labelled failure of real logs?

Usage:
  python bench/accuracy.py CORPUS_DIR... [--split 1-25,26-70] [--json [FILE]] [--evidence FILE]
  python bench/accuracy.py CORPUS_DIR... --mutate [--seed N] [--mutations wrap,crlf,...] [--json [FILE]]

A CORPUS_DIR is a folder of case folders (``NNN-slug/`` with ``log.txt``, optional ``command.txt``,
``label.json``), as in dev-logs, or one case folder. Each case folder is analyzed in-process, exactly as
``grpo-doctor analyze CASE_DIR`` would (doctor.sources.inputs.discover reads ``command.txt`` as the launch
command and skips ``label.json``), so nothing is timed or launched per case.

Figures printed (over all cases, then per --split range and per labelled category):

- top-1: ``findings[0].category`` is the label's ``category`` or one of its ``also_accept``;
- macro-F1: per labelled category, the F1 of findings[0], averaged over the labelled categories;
- anywhere: some finding (any severity) has such a category;
- evidence: ``findings[0]`` quotes a line that shows the failure. The lines that show each failure were
  chosen by reading each log and are kept in ``bench/data/devlogs-evidence.toml`` (see its header for the
  criterion and provenance): a case counts when an evidence entry of findings[0] is one of its key lines
  (the same line number of ``log.txt``; each key line's marker text is checked first). Cases with no entry
  there (another corpus) are left out of this figure, and the count says so; a corpus may also carry the
  key lines in ``label.json`` under ``"evidence"`` (same shape as the TOML entries);
- of which right only as "other": the label accepts ``other`` and GD999 (the fallback) came first;
- framework named right: ``run.framework`` is the framework that ran (the table's ``framework``, or the
  first word of its ``project``);
- silent: no finding at warning or above (a real failure log must always get one);
- confidence calibration: for findings[0] of each case, per level (certain, likely, possible): how many, how many
  are right (top-1), the share right and its target (certain >= 95%, likely >= 75%); the share of cases whose primary
  is certain; one line per wrong primary at certain or likely;
- one line per top-1 miss: case id, label, what came first, its title.

``--mutate`` measures robustness instead: each case's log is damaged the way pastes are (bench/mutate.py: hard
wraps, rank prefixes stripped, cut after or inside the traceback, indentation, prose lines, metric rows reversed,
CRLF, an exception line glued to the line before, a prefix on every line: Ray's worker prefix, a collector's
timestamp, a launcher's host or task label, a markdown quote), each variant is analyzed like a case (a temporary case folder with
the damaged ``log.txt`` and the same ``command.txt``), and a variant is stable when its ``findings[0].category`` is
the one the ORIGINAL log gets (not the label) or, for ``cut_before`` only, when a finding says the excerpt stops early
(``mutate.says_cut_early``). Printed: the stability rate per mutation and overall, then one line per unstable variant.
Variants are the same for the same ``--seed``.

``--json`` dumps per-case results (to FILE, or stdout when no FILE is given; the text figures then go to
stderr). Exit code 0 always: this is a measurement, not a gate (tests/test_devlogs.py is the gate).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_EVIDENCE = HERE / "data" / "devlogs-evidence.toml"
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


@dataclass
class KeyLine:
    line: int
    marker: str


@dataclass
class CaseResult:
    case: str
    number: int | None
    label: str
    accept: list[str]
    got: str | None
    rule_id: str | None
    title: str | None
    severity: str | None
    top1: bool
    anywhere: bool
    evidence: bool | None      # None: no key lines known for this case
    framework: str | None      # run.framework of the report
    framework_ok: bool | None  # None: the framework that ran is not known for this case
    by_fallback: bool          # top-1 right only because the label accepts "other" (GD999's category)
    silent: bool               # no finding at warning or above
    categories: list[str] = field(default_factory=list)
    evidence_lines: list[int] = field(default_factory=list)
    error: str | None = None   # analyze raised (a bug: counted as a miss)
    seconds: float = 0.0
    confidence: str | None = None  # findings[0].confidence: certain | likely | possible
    alternatives: list[str] = field(default_factory=list)  # findings[0].alternatives (a possible one's)


def find_cases(roots: list[str]) -> list[Path]:
    cases: list[Path] = []
    for r in roots:
        p = Path(r)
        if (p / "label.json").is_file():
            cases.append(p)
            continue
        if not p.is_dir():
            raise SystemExit(f"{r}: not a folder of cases (no label.json in it or its subfolders)")
        found = sorted(d for d in p.iterdir() if d.is_dir() and (d / "label.json").is_file())
        if not found:
            raise SystemExit(f"{r}: not a folder of cases (no label.json in it or its subfolders)")
        cases.extend(found)
    return cases


def load_table(path: Path | None) -> dict[str, dict]:
    """The per-case entries of the evidence table (key lines, framework, project)."""
    if path is None or not path.is_file():
        return {}
    with open(path, "rb") as f:
        return tomllib.load(f).get("cases", {})


def load_key_lines(path: Path | None) -> dict[str, list[KeyLine]]:
    return {case: [KeyLine(int(k[0]), str(k[1])) for k in entry.get("key", [])]
            for case, entry in load_table(path).items()}


def frameworks_of(entry: dict | None) -> list[str]:
    """The framework names a report may give for this case: the framework, or the project's first word."""
    if not entry or not entry.get("framework"):
        return []
    # (a label may spell a name with an underscore where the report does not: llama_factory, llamafactory)
    names = [str(entry["framework"]).lower().replace("_", "")]
    # a fork named for itself where the label names what it forked: EasyR1 keeps verl's package (its runs are verl's
    # by their frames), and a report that names EasyR1 names the run more exactly
    names += [fork for base, fork in (("verl", "easyr1"),) if names[0] == base]
    # torch.distributed (a label's name for a job launched with torchrun and nothing above it) is the report's "torch"
    names += ["torch"] if names[0] == "torch.distributed" else []
    if entry.get("project"):
        names.append(str(entry["project"]).split()[0].lower())
    return names


def check_key_lines(case_dir: Path, keys: list[KeyLine]) -> None:
    """The table must describe this log: each key line holds its marker (else the table has drifted)."""
    lines = (case_dir / "log.txt").read_text(encoding="utf-8", errors="replace").splitlines()
    for k in keys:
        if not (1 <= k.line <= len(lines)) or _norm(k.marker) not in _norm(lines[k.line - 1]):
            raise SystemExit(f"{case_dir.name}: key line {k.line} does not contain {k.marker!r}: "
                             "the evidence table does not match this log")


def case_number(name: str) -> int | None:
    m = re.match(r"(\d+)", name)
    return int(m.group(1)) if m else None


def run_case(case_dir: Path, keys: list[KeyLine] | None, frameworks: list[str] | None = None,
             reports: Path | None = None) -> CaseResult:
    if str(ROOT) not in sys.path:  # this checkout's doctor, also when it is not installed
        sys.path.insert(0, str(ROOT))
    from doctor.analyze import analyze
    from doctor.model import Severity

    label = json.loads((case_dir / "label.json").read_text(encoding="utf-8"))
    want = label["category"]
    accept = [want] + list(label.get("also_accept") or [])
    if keys is None and label.get("evidence"):
        # [line, marker] pairs, or {"line": N, "marker": "..."} objects
        keys = [KeyLine(int(k["line"]), str(k["marker"])) if isinstance(k, dict) else KeyLine(int(k[0]), str(k[1]))
                for k in label["evidence"]]
    if frameworks is None or not frameworks:
        frameworks = frameworks_of(label) or frameworks
    t0 = time.perf_counter()
    error = None
    findings = []
    run: dict = {}
    try:
        report = analyze([str(case_dir)])
        findings, run = report.findings, report.run
        if reports is not None:  # the text a person reads, its own thread left out of the known issues
            from doctor import known
            from doctor.known.index import load
            from doctor.render.text import render as text_render
            own = re.match(r"[\w.-]+/[\w.-]+#\d+", str(label.get("source", "")))
            # the index's own spelling of that thread (a label may write the owner or repository in another case)
            known.EXCLUDE = frozenset(t["thread"] for t in load().threads
                                      if own and t["thread"].lower() == own.group(0).lower())
            try:
                (reports / f"{case_dir.name}.txt").write_text(text_render(report), encoding="utf-8")
            finally:
                known.EXCLUDE = frozenset()
    except Exception as e:  # noqa: BLE001 - a crash is a result to report, not a reason to stop the bench
        error = f"{type(e).__name__}: {e}"
    dt = time.perf_counter() - t0
    first = findings[0] if findings else None
    cats = [f.category for f in findings]
    evidence = None
    ev_lines: list[int] = []
    if first is not None:
        ev_lines = [e.line for e in first.evidence if Path(e.path).name == "log.txt"]
    if keys:
        evidence = False
        if first is not None:
            key_nums = {k.line for k in keys}
            evidence = any(Path(e.path).name == "log.txt" and e.line in key_nums for e in first.evidence)
    return CaseResult(
        case=case_dir.name, number=case_number(case_dir.name), label=want, accept=accept,
        got=first.category if first else None, rule_id=first.rule_id if first else None,
        title=first.title if first else None, severity=first.severity.name if first else None,
        top1=first is not None and first.category in accept,
        by_fallback=first is not None and first.category == "other" and want != "other" and "other" in accept,
        framework=run.get("framework"),
        framework_ok=(str(run.get("framework") or "").lower() in frameworks) if frameworks else None,
        anywhere=any(c in accept for c in cats),
        evidence=evidence,
        silent=not any(f.severity >= Severity.warning for f in findings),
        categories=cats, evidence_lines=ev_lines, error=error, seconds=round(dt, 4),
        confidence=first.confidence if first else None, alternatives=list(first.alternatives) if first else [])


def parse_split(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise SystemExit(f"--split: {part!r} is not N or N-M")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.append((lo, hi))
    return out


def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100.0 * n / d:.1f}%)" if d else "0/0"


def summary(results: list[CaseResult], title: str, out) -> None:
    n = len(results)
    ev = [r for r in results if r.evidence is not None]
    fw = [r for r in results if r.framework_ok is not None]
    fb = [r for r in results if r.by_fallback]
    silent = [r for r in results if r.silent]
    print(f"== {title}: {n} cases", file=out)
    print(f"  top-1 category        {pct(sum(r.top1 for r in results), n)}"
          + (f"   (of which {len(fb)} only as 'other' by GD999: {', '.join(r.case.split('-')[0] for r in fb)})" if fb else ""),
          file=out)
    print(f"  macro-F1              {macro_f1(results):.3f}", file=out)
    print(f"  right anywhere        {pct(sum(r.anywhere for r in results), n)}", file=out)
    print(f"  evidence line right   {pct(sum(bool(r.evidence) for r in ev), len(ev))}"
          + (f"   ({n - len(ev)} cases without key lines left out)" if len(ev) < n else ""), file=out)
    if fw:
        print(f"  framework named right {pct(sum(bool(r.framework_ok) for r in fw), len(fw))}", file=out)
    print(f"  silent (no finding >= warning) {len(silent)}"
          + (": " + ", ".join(r.case.split('-')[0] for r in silent) if silent else ""), file=out)


def macro_f1(results: list[CaseResult]) -> float:
    """Per labelled category, F1 of findings[0] (a right primary counts for the label, whatever its
    also_accept name); predictions of a category nobody labelled lower only the recall of the true
    ones. Averaged over the labelled categories."""
    scores = []
    for category in sorted({r.label for r in results}):
        true_pos = sum(r.top1 for r in results if r.label == category)
        predicted = sum(1 for r in results if (r.label == category and r.top1) or (not r.top1 and r.got == category))
        labelled = sum(1 for r in results if r.label == category)
        precision = true_pos / predicted if predicted else 0.0
        recall = true_pos / labelled
        scores.append(2 * precision * recall / (precision + recall) if true_pos else 0.0)
    return sum(scores) / len(scores) if scores else 0.0


def per_category(results: list[CaseResult], out) -> None:
    cats = sorted({r.label for r in results})
    width = max(len(c) for c in cats) if cats else 10
    print(f"== per labelled category ({'category':<{width - 11}} n  top-1  anywhere  evidence)", file=out)
    for c in cats:
        rs = [r for r in results if r.label == c]
        ev = [r for r in rs if r.evidence is not None]
        print(f"  {c:<{width}} {len(rs):>2}  {sum(r.top1 for r in rs):>5}  {sum(r.anywhere for r in rs):>8}"
              f"  {sum(bool(r.evidence) for r in ev):>4}/{len(ev)}", file=out)


LEVELS = ("certain", "likely", "possible")
TARGETS = {"certain": 0.95, "likely": 0.75}  # issue 29 point 3: share right that each level must reach


def calibration(results: list[CaseResult], out) -> None:
    """Is findings[0].confidence honest? Per level: primaries, how many are right (top-1), the share right (and the
    target it must reach); then the share of cases whose primary is certain, and the wrong ones at certain/likely."""
    print("== confidence calibration (findings[0]; right = top-1)", file=out)
    print(f"  {'level':<9} {'n':>3} {'right':>5}  share   target", file=out)
    for level in LEVELS:
        rs = [r for r in results if r.confidence == level]
        right = sum(r.top1 for r in rs)
        share = f"{100.0 * right / len(rs):5.1f}%" if rs else "    -"
        target = f">= {100 * TARGETS[level]:.0f}%" if level in TARGETS else "-"
        flag = "  BELOW" if rs and level in TARGETS and right / len(rs) < TARGETS[level] else ""
        print(f"  {level:<9} {len(rs):>3} {right:>5}  {share}  {target}{flag}", file=out)
    none = [r for r in results if r.confidence is None]
    if none:
        print(f"  (no finding: {len(none)})", file=out)
    print(f"  primary certain       {pct(sum(r.confidence == 'certain' for r in results), len(results))}", file=out)
    for r in results:
        if r.confidence in TARGETS and not r.top1:
            print(f"  wrong at {r.confidence}: {r.case}: label {r.label}, got {r.got} [{r.rule_id}] {r.title}",
                  file=out)


def misses(results: list[CaseResult], out) -> None:
    bad = [r for r in results if not r.top1]
    print(f"== top-1 misses ({len(bad)})", file=out)
    for r in bad:
        got = r.got or "(no finding)"
        extra = f" [{r.rule_id} {r.severity}] {r.title}" if r.rule_id else ""
        if r.error:
            extra = f" analyze raised {r.error}"
        where = " (right category further down)" if r.anywhere else ""
        print(f"  {r.case}: label {r.label}, got {got}{extra}{where}", file=out)


def load_mutate():
    """bench/mutate.py as a module (bench/ is not a package)."""
    import importlib.util
    name = "bench_mutate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "mutate.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@dataclass
class VariantResult:
    case: str
    mutation: str
    original: str | None       # findings[0].category of the original log, as analyzed
    got: str | None            # findings[0].category of the variant
    title: str | None          # findings[0].title of the variant
    stable: bool
    by_cut_note: bool          # stable only because a finding says the excerpt stops early (cut_before)
    error: str | None = None   # analyze raised on the variant (counted as unstable)


def _analyze_top(case_dir: Path):
    """(report, category, title, error) of findings[0] for a case folder, analyzed as run_case does."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from doctor.analyze import analyze
    try:
        report = analyze([str(case_dir)])
    except Exception as e:  # noqa: BLE001 - a crash is a result to report
        return None, None, None, f"{type(e).__name__}: {e}"
    first = report.findings[0] if report.findings else None
    return report, (first.category if first else None), (first.title if first else None), None


def run_mutations(cases: list[Path], seed: int, names: list[str], tmp: Path) -> tuple[list[VariantResult], dict]:
    """Analyze every applicable variant of every case; also returns {mutation: how many cases it does not apply to}."""
    mut = load_mutate()
    results: list[VariantResult] = []
    skipped = {m: 0 for m in names}
    for c in cases:
        _, original, _, _ = _analyze_top(c)
        text = (c / "log.txt").read_bytes().decode("utf-8", errors="surrogateescape")
        for m in names:
            variant = mut.MUTATIONS[m](text, mut.rng_for(seed, c.name, m))
            if variant is None:
                skipped[m] += 1
                continue
            d = tmp / m / c.name
            d.mkdir(parents=True)
            (d / "log.txt").write_bytes(variant.encode("utf-8", errors="surrogateescape"))
            if (c / "command.txt").is_file():
                (d / "command.txt").write_bytes((c / "command.txt").read_bytes())
            report, got, title, error = _analyze_top(d)
            cut_note = m == "cut_before" and report is not None and mut.says_cut_early(report)
            stable = error is None and (got == original or cut_note)
            results.append(VariantResult(c.name, m, original, got, title, stable,
                                         by_cut_note=stable and got != original, error=error))
    return results, skipped


def mutate_summary(results: list[VariantResult], skipped: dict, names: list[str], seed: int, n_cases: int,
                   out) -> None:
    print(f"== mutate, seed {seed}: {n_cases} cases; stable = findings[0].category of the original log as analyzed "
          f"(not the label), or for cut_before a finding saying the excerpt stops early", file=out)
    print(f"  {'mutation':<14} {'n/a':>4} {'variants':>8} {'stable':>7}   rate", file=out)
    for m in names:
        rs = [r for r in results if r.mutation == m]
        note = sum(r.by_cut_note for r in rs)
        extra = f"   ({note} by the cut note)" if note else ""
        rate = f"{100.0 * sum(r.stable for r in rs) / len(rs):5.1f}%" if rs else "    -"
        print(f"  {m:<14} {skipped[m]:>4} {len(rs):>8} {sum(r.stable for r in rs):>7}  {rate}{extra}", file=out)
    print(f"  {'overall':<14} {sum(skipped.values()):>4} {len(results):>8} {sum(r.stable for r in results):>7}  "
          + (f"{100.0 * sum(r.stable for r in results) / len(results):5.1f}%" if results else "    -"), file=out)
    bad = [r for r in results if not r.stable]
    print(f"== unstable variants ({len(bad)})", file=out)
    for r in bad:
        what = f"analyze raised {r.error}" if r.error else (r.title or "(no finding)")
        print(f"  {r.case}: {r.mutation}, {r.original or '(no finding)'} -> {r.got or '(no finding)'}: {what}",
              file=out)


def main_mutate(args) -> int:
    import tempfile
    mut = load_mutate()
    names = [m.strip() for m in args.mutations.split(",") if m.strip()] if args.mutations else list(mut.MUTATIONS)
    unknown = [m for m in names if m not in mut.MUTATIONS]
    if unknown:
        raise SystemExit(f"--mutations: unknown {', '.join(unknown)} (known: {', '.join(mut.MUTATIONS)})")
    cases = find_cases(args.corpus)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grpo-doctor-mutate-") as tmp:
        results, skipped = run_mutations(cases, args.seed, names, Path(tmp))
    total = time.perf_counter() - t0
    out = sys.stderr if args.json == "-" else sys.stdout
    mutate_summary(results, skipped, names, args.seed, len(cases), out)
    print(f"== {len(results)} variants of {len(cases)} cases analyzed in {total:.2f} s", file=out)
    if args.json is not None:
        _dump(args.json, {"seed": args.seed, "variants": [asdict(r) for r in results]})
    return 0


def _dump(target: str, doc: dict) -> None:
    """--json: to stdout ("-") or to a file."""
    if target == "-":
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        with open(target, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="+", help="folder of case folders (or one case folder)")
    ap.add_argument("--split", default="", help="case-number ranges shown apart, e.g. 1-25,26-70")
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                    help="dump per-case results as JSON (to FILE, or stdout)")
    ap.add_argument("--evidence", default=str(DEFAULT_EVIDENCE), metavar="FILE",
                    help="key lines per case (TOML); default bench/data/devlogs-evidence.toml")
    ap.add_argument("--reports", default=None, metavar="DIR",
                    help="write each case's text report to DIR/<case>.txt (for grading by bench/RUBRIC.md), with the "
                         "case's own thread (label.json source) left out of its known issues")
    ap.add_argument("--mutate", action="store_true",
                    help="robustness instead of accuracy: analyze damaged variants of each log (bench/mutate.py) and "
                         "print how often findings[0] keeps the original's category")
    ap.add_argument("--seed", type=int, default=1, help="with --mutate: the seed of the variants (default 1)")
    ap.add_argument("--mutations", default="", metavar="A,B",
                    help="with --mutate: only these mutations (default all)")
    ap.add_argument("--without-words", action="store_true",
                    help="leave out the category-from-words reading (doctor/classify/category_words.py): its model "
                         "is trained on fixtures/devlogs*, so on those sets it reads its memory, not the rules")
    args = ap.parse_args(argv)
    if args.without_words:
        import doctor.classify.category_words as words
        words.closest = lambda texts: None
    if args.mutate:
        return main_mutate(args)
    if args.reports:
        Path(args.reports).mkdir(parents=True, exist_ok=True)

    cases = find_cases(args.corpus)
    table = load_table(Path(args.evidence)) if args.evidence else {}
    t0 = time.perf_counter()
    results = []
    for c in cases:
        entry = table.get(c.name)
        keys = [KeyLine(int(k[0]), str(k[1])) for k in entry.get("key", [])] if entry else None
        if keys:
            check_key_lines(c, keys)
        results.append(run_case(c, keys, frameworks_of(entry), Path(args.reports) if args.reports else None))
    total = time.perf_counter() - t0

    out = sys.stderr if args.json == "-" else sys.stdout
    summary(results, "all", out)
    for lo, hi in parse_split(args.split):
        part = [r for r in results if r.number is not None and lo <= r.number <= hi]
        summary(part, f"cases {lo:03d}-{hi:03d}", out)
    per_category(results, out)
    calibration(results, out)
    misses(results, out)
    print(f"== {len(results)} cases analyzed in {total:.2f} s", file=out)

    if args.json is not None:
        _dump(args.json, {"cases": [asdict(r) for r in results]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
