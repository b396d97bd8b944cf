"""Scoreboard: inject real faults into real GRPO runs on CPU and score grpo-doctor's diagnosis of each.

Every case (bench/scoreboard_cases.py) is a real `swift rlhf --rlhf_type grpo` run, or a TRL GRPOTrainer script
(bench/scoreboard_plugins/trl_grpo.py), of a tiny local Qwen2 model (tools/swiftgen_tiny.py builds it offline),
launched under `grpo-doctor watch` (so hangs are caught live, as a user would), then diagnosed post mortem with
`grpo-doctor analyze RUN_DIR --format json`. Faults are injected for real: wrong flags, a reward plugin that raises,
hangs, slows down, kills its process or divides by zero (bench/scoreboard_plugins/faults.py), a learning rate that
makes the model diverge, a missing module, a second node that never joins, a checkpoint cut in half before a resume
(made by a plain run first), image paths that are not there, a full disk (a small tmpfs, root only), a dataset row
the chat template rejects, SIGTERM to the run's process group while a checkpoint file is half written
(scoreboard_plugins/midsave.py), an address-space limit (`ulimit -v`) that a 240M-parameter model's load does not fit
in (scoreboard_plugins/wide_model.py). Nothing is written by hand into a log. Scoring and outputs: bench/scoreboard_score.py.

Per case it records: the primary finding's category (``findings[0]``), whether it is the expected one, whether its
evidence quotes the line that shows the fault (a regex per case, chosen from the library source that raises it or
the metric that shows it), whether its ``action`` verdict is an expected one, watch's own CPU time, and for hangs
the seconds from the moment the fault began (the plugin writes it) to watch's exit after stopping the run.

Per fault class (= expected category): precision, recall, F1 over all cases (a healthy run whose primary is an
error of class C is a false positive of C), then macro-F1 over the classes, evidence right and verdict right
(shares of fault cases), false alarms (healthy runs with an error finding).

    python bench/scoreboard.py                 # full matrix -> bench/results/scoreboard.json + docs/SCOREBOARD.md
    python bench/scoreboard.py --quick         # one fault per class, one framework (ms-swift), < 5 min
    python bench/scoreboard.py --quick --check-baseline bench/results/quick-baseline.json   # exit 1 on regression
    python bench/scoreboard.py --against RESULT.json --check-baseline bench/results/quick-baseline.json  # no run
    python bench/scoreboard.py --list

Options: --work DIR (default: a new temp dir; the model, runs and logs), --json FILE, --markdown FILE, --only NAMES
(comma list), --write-baseline FILE, --jobs N (cases side by side; the runs' own CPU is then not measured; the
default, 1, runs one case at a time). Exit status: 0, or 1 when
--check-baseline finds a class whose check passed in the baseline and fails now.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(1, str(ROOT))     # this checkout's doctor package, not an installed one
sys.path.insert(2, str(HERE))
import swiftgen  # noqa: E402
from scoreboard_cases import (  # noqa: E402,F401  (names the tests and callers read from here)
    BY_NAME,
    CASES,
    DRAIN,
    FIRST_STEP_TIMEOUT,
    GRACE,
    HANG_TIMEOUT,
    MISSING_MODULE_PLUGIN,
    PLUGIN,
    SWIFT_STEP3_ROW,
    TRL_SCRIPT,
    TRL_STEP3_ROW,
    Case,
    image_rows,
    noisy,
    null_content_rows,
    system_last_rows,
    trl,
)
from scoreboard_score import (  # noqa: E402,F401
    CaseResult,
    class_scores,
    document,
    gated,
    hang_stacks,
    healthy_scores,
    regressions,
    render_markdown,
    summary,
    write_baseline,
)

RESULTS = HERE / "results"
DOC = ROOT / "docs" / "SCOREBOARD.md"
BASELINE = RESULTS / "quick-baseline.json"

# classes whose runs stop at an argument or data check, before any training step (the shortest runs)
EARLY = frozenset({"batch-divisibility", "eval-batch-divisibility", "argument-error-other", "dataset-or-template-error",
                   "import-or-dependency-error"})

# --------------------------------------------------------------------------- running


class Bench:
    def __init__(self, work: Path, py: str, log=print):
        self.work = work.resolve()
        self.py = py
        self.log = log
        self.gen = swiftgen.Generator(self.work, py, log=log, sft_steps=20)
        self.swift = swiftgen.swift_cmd(py)
        self.exclusive = True           # one case at a time (--jobs 1): the run's own CPU is measured
        self.subreaper = become_subreaper()

    def setup(self, cases: list[Case]) -> None:
        # watch's CPU share is measured as users run it: from an installed package, whose modules pip compiled to
        # bytecode at install. A checkout run with PYTHONDONTWRITEBYTECODE=1 (as on the dev machine) compiles the
        # ~200 modules at every start instead: 0.6 s of CPU per watch, about half of its CPU in a 20 s run
        import compileall
        compileall.compile_dir(str(ROOT / "doctor"), quiet=1)
        self.gen.build_tiny()
        data = self.work / "data"
        (data / "with_images.jsonl").write_text(image_rows(data / "train.jsonl"), encoding="utf-8")
        (data / "system_last_row.jsonl").write_text(system_last_rows(data / "train.jsonl", SWIFT_STEP3_ROW),
                                                    encoding="utf-8")
        (data / "null_content_row.jsonl").write_text(null_content_rows(data / "train.jsonl", TRL_STEP3_ROW),
                                                     encoding="utf-8")
        plugins = self.work / "plugins"
        plugins.mkdir(exist_ok=True)
        (plugins / "needs_judge_client.py").write_text(MISSING_MODULE_PLUGIN, encoding="utf-8")
        needs = {n for c in cases for n in c.needs} & {"merged", "base"}
        if needs:
            self.gen.ensure(tuple(sorted(needs)))
        if any("damaged" in c.needs for c in cases):
            self.damaged_checkpoint()
        if any("trl-damaged" in c.needs for c in cases):
            self.trl_damaged_checkpoint()
        if any("wide" in c.needs for c in cases) and not (self.work / "wide-qwen2" / "model.safetensors").exists():
            subprocess.run([self.py, str(HERE / "scoreboard_plugins" / "wide_model.py"), str(self.work / "tiny-qwen2"),
                            str(self.work / "wide-qwen2")], check=True, capture_output=True, timeout=900)
            self.log(f"built the wide model in {self.work / 'wide-qwen2'}")

    def trl_damaged_checkpoint(self) -> None:
        """A TRL checkpoint (a plain 2-step run, not scored) whose optimizer.pt lost its second half."""
        dest = self.work / "bases" / "trl-damaged-ckpt"
        if (dest / "optimizer.pt").exists():
            return
        out = self.work / "runs" / "prep-trl-damaged"
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([self.py, str(TRL_SCRIPT), *self.fill(Case("prep", "healthy", trl(max_steps="2")), str(out))],
                           cwd=self.work, capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not (out / "checkpoint-2" / "optimizer.pt").exists():
            raise RuntimeError(f"the TRL run that makes the checkpoint to damage failed:\n{r.stderr[-2000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(out / "checkpoint-2", dest)
        o = dest / "optimizer.pt"
        os.truncate(o, o.stat().st_size // 2)

    def damaged_checkpoint(self) -> None:
        """A LoRA GRPO checkpoint (a plain run, not scored) whose adapter weights lost their second half: what a save
        killed mid-write leaves behind."""
        dest = self.work / "bases" / "damaged-ckpt"
        if (dest / "adapter_model.safetensors").exists():
            return
        res = self.gen.run([*(a.replace("{TINY}", "tiny-qwen2") for a in noisy(max_steps="2", save_steps="2")),
                            "--output_dir", "runs/prep-damaged"], {}, "runs/prep-damaged", timeout=600)
        ckpts = sorted((self.work / "runs" / "prep-damaged").glob("v*/checkpoint-2"))
        if res.rc != 0 or not ckpts:
            raise RuntimeError(f"the run that makes the checkpoint to damage failed, rc {res.rc}:\n{res.log[-2000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(ckpts[-1], dest)
        w = dest / "adapter_model.safetensors"
        os.truncate(w, w.stat().st_size // 2)

    def start_cost(self, times: int = 3) -> float:
        """watch's own CPU around a command that does nothing (`true`): its fixed cost (imports, the rule catalog,
        the final analysis and report), the median of ``times``. A 20 s tiny run pays it in full; a real run of
        hours does not notice it, so the summary gives watch's share with and without it."""
        import resource
        vals = []
        for _ in range(times):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
                            "--run-dir", str(self.work / "runs" / "start-cost"), "--drain", "0", "--", "true"],
                           capture_output=True, cwd=self.work,
                           env=dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            vals.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
        return round(sorted(vals)[len(vals) // 2], 3)

    def fill(self, case: Case, out: str) -> list[str]:
        vals = {"TINY": "tiny-qwen2", "MERGED": "bases/lora-sft-merged", "BASE": "bases/full-sft",
                "LORA": "bases/lora-sft", "DAMAGED": "bases/damaged-ckpt", "TRL_DAMAGED": "bases/trl-damaged-ckpt",
                "WIDE": "wide-qwen2", "WORK": str(self.work)}
        argv = [re.sub(r"\{(\w+)\}", lambda m: vals[m.group(1)], a) for a in case.argv]
        return [*argv, "--output_dir", out]

    def launcher(self, case: Case) -> list[str]:
        if case.framework != "trl":
            return list(self.swift)     # swift itself starts torchrun when NPROC_PER_NODE is set
        env = dict(case.env)
        if int(env.get("NPROC_PER_NODE", "1")) > 1:     # the TRL script under torchrun, as a user launches it
            return [self.py, "-m", "torch.distributed.run", "--nproc_per_node", env["NPROC_PER_NODE"],
                    "--master_port", env.get("MASTER_PORT", "29500"), str(TRL_SCRIPT)]
        return [self.py, str(TRL_SCRIPT)]

    def run_case(self, case: Case) -> CaseResult:
        res = CaseResult(case.name, case.cls, case.framework, case.description, list(case.verdicts))
        if "root" in case.needs and os.geteuid() != 0:
            res.skipped = "needs root (mounts a tmpfs)"
            return res
        out = self.work / "runs" / case.name
        if out.exists():
            self._umount(out)
            shutil.rmtree(out)
        out.mkdir(parents=True)
        mounted = False
        if case.tmpfs_kb:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={case.tmpfs_kb}k", "tmpfs", str(out)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                res.skipped = f"could not mount a tmpfs: {r.stderr.strip()[:200]}"
                return res
            mounted = True
        fault_file = self.work / "runs" / f"{case.name}.fault-time"
        fault_file.unlink(missing_ok=True)
        # the console log and watch's report go beside the output dir when it is a tmpfs (they must not fill it)
        run_dir = self.work / "runs" / f"{case.name}.watch" if mounted else out
        run_dir.mkdir(exist_ok=True)
        env = dict(os.environ, **dict(case.env), SCOREBOARD_FAULT_FILE=str(fault_file), PYTHONUNBUFFERED="1")
        env["PATH"] = str(Path(self.py).parent) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("GRPO_DOCTOR_SWIFT_PYTHON", None)
        cmd = [sys.executable, "-m", "doctor.cli", "watch", "--no-preflight", "--gpu-interval", "0",
               "--run-dir", str(run_dir), "--on-hang", "stop", "--grace", str(GRACE), "--drain", str(DRAIN),
               "--hang-timeout", str(HANG_TIMEOUT), "--phase-timeout", f"first-step={FIRST_STEP_TIMEOUT:g}",
               "--startup-timeout", "300", "--", *self.launcher(case), *self.fill(case, str(out))]
        start = time.monotonic()
        import resource
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        # the limit of a job script's `ulimit -v`: on watch and everything it starts
        n = case.limit_as
        limit = functools.partial(resource.setrlimit, resource.RLIMIT_AS, (n, n)) if n else None
        with open(self.work / "runs" / f"{case.name}.watch.stderr", "wb") as err:
            proc = subprocess.Popen(cmd, cwd=self.work, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                    preexec_fn=limit)
            cpu = 0.0
            while True:
                # exited, not yet reaped: its /proc entry holds watch's own CPU to the end, its final report included
                # (polling its CPU every half second missed the last of it)
                if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                    cpu = own_cpu_of(proc.pid)           # watch itself, not the run it supervises
                    res.rc = proc.wait()
                    break
                time.sleep(0.2)
                if time.monotonic() - start > 600:
                    proc.kill()
        ended = time.time()
        wall = time.monotonic() - start
        reap_orphans(self.subreaper and self.exclusive)   # cases side by side: the others are children too
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # watch and every process below it that was waited for (the run): minus watch's own, the run's CPU
        total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        # with cases side by side the children's CPU cannot be told apart: no figure rather than a wrong one
        res.run_cpu_s = round(max(total - cpu, 0.0), 2) if self.exclusive else 0.0
        res.wall_s = round(wall, 1)
        res.watch_cpu_s = round(cpu, 2)
        res.watch_cpu_share = round(cpu / res.wall_s, 4) if res.wall_s else 0.0
        if case.hang and fault_file.exists():
            res.hang_detect_s = round(ended - float(fault_file.read_text()), 1)
        if case.hang:
            res.hang_stacks = hang_stacks(run_dir, int(dict(case.env).get("NPROC_PER_NODE", "1")))
        watch_rep = run_dir / "grpo-doctor-report.json"
        if watch_rep.exists():
            try:
                wf = json.loads(watch_rep.read_text()).get("findings") or []
                res.watch_category = wf[0]["category"] if wf else None
            except (ValueError, KeyError, TypeError):
                pass
        if mounted:
            # analyze a copy: the tmpfs goes away
            copy = self.work / "runs" / f"{case.name}.copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(out, copy)
            self._umount(out)
            for p in run_dir.iterdir():
                if p.is_file():
                    shutil.copy2(p, copy / p.name)
            analyzed = copy
        else:
            analyzed = out
        self.score(case, res, self.analyze(analyzed))
        return res

    @staticmethod
    def _umount(path: Path) -> None:
        if os.path.ismount(path):
            subprocess.run(["umount", str(path)], capture_output=True)

    def analyze(self, path: Path) -> dict:
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(path), "--format", "json"],
                           capture_output=True, text=True, timeout=300, cwd=self.work, env=env)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {"findings": [], "error": r.stderr[-500:]}

    @staticmethod
    def score(case: Case, res: CaseResult, rep: dict) -> None:
        findings = rep.get("findings") or []
        res.got_framework = (rep.get("run") or {}).get("framework")
        res.error_findings = [f"{f['rule_id']} {f['category']}" for f in findings if f.get("severity") == "error"]
        if case.cls == "healthy":
            res.false_alarm = bool(res.error_findings)
            res.category_ok = not res.false_alarm
            top = next((f for f in findings if f.get("severity") == "error"), None)
        else:
            top = findings[0] if findings else None
        if top is not None:
            res.got_category, res.got_rule = top.get("category"), top.get("rule_id")
            res.got_severity, res.got_action, res.got_title = top.get("severity"), top.get("action"), top.get("title")
            res.got_evidence = [str(e.get("text", ""))[:300] for e in top.get("evidence") or []][:5]
        if case.cls == "healthy":
            return
        res.category_ok = res.got_category == case.cls
        res.verdict_ok = res.got_action in case.verdicts
        if case.hang:
            res.evidence_ok = None          # a hang has no line to quote: scored by the time to stop instead
        else:
            rx = re.compile(case.evidence, re.I)
            res.evidence_ok = any(rx.search(t) for t in res.got_evidence)



def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER). A run killed
    as a group (a hang watch stopped, a SIGTERM from outside) loses its parent before its training process: that
    process is then reparented here instead of to init, and its CPU counts in this process's RUSAGE_CHILDREN once it
    is reaped (reap_orphans), so the run's own CPU is not lost for those runs."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans(subreaper: bool, wait_s: float = 5.0) -> None:
    """Reap the descendants reparented here (become_subreaper) once the case's own processes have ended: each is
    waited for until none is left or ``wait_s`` passed (a run's last processes die within the grace watch gives)."""
    if not subreaper:
        return
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


def own_cpu_of(pid: int) -> float:
    """utime + stime of a process that has exited and is not reaped yet, without its children's (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        try:
            return psutil.Process(pid).cpu_times().user + psutil.Process(pid).cpu_times().system
        except psutil.Error:
            return 0.0


def rescore(a) -> int:
    by_name: dict[str, CaseResult] = {}
    versions: dict = {}
    total = 0.0
    start_cpu = None
    for path in a.from_json:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
        versions = old.get("versions") or versions
        total += old.get("total_s") or 0.0
        start_cpu = start_cpu or (old.get("summary") or {}).get("watch_start_cpu_s")
        for d in old["cases"]:
            by_name[d["name"]] = CaseResult(**d)
    order = {c.name: i for i, c in enumerate(CASES)}
    results = sorted(by_name.values(), key=lambda r: order.get(r.name, len(order)))
    doc = document(results, "full", versions, total, start_cpu)
    doc["merged_from"] = len(a.from_json)
    if a.write_baseline:    # from the quick cases of these results: the same runs --quick makes
        quick = {c.name for c in CASES if c.quick}
        mine = [r for r in results if r.name in quick]
        write_baseline(a.write_baseline, {**class_scores(mine), "healthy": healthy_scores(mine)})
    Path(a.json or RESULTS / "scoreboard.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    Path(a.markdown or DOC).write_text(render_markdown(doc), encoding="utf-8")
    print(render_markdown(doc))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one case per class and the healthy run")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--work", help="work dir (default: a new temp dir)")
    ap.add_argument("--json", help="result file (default: bench/results/scoreboard.json; --quick: none)")
    ap.add_argument("--markdown", help="markdown file (default: docs/SCOREBOARD.md; --quick: none)")
    ap.add_argument("--check-baseline", metavar="FILE", help="exit 1 when a check that passed there fails now")
    ap.add_argument("--write-baseline", metavar="FILE", help="write the passing checks per class there")
    ap.add_argument("--from-json", metavar="FILE", nargs="+",
                    help="run nothing: score the cases of these result files together (a later file's case replaces "
                         "an earlier one of the same name), then write the outputs as a full run would")
    ap.add_argument("--jobs", type=int, default=1,
                    help="cases run side by side (the CI's --quick uses 2: a case mostly waits on one core for its "
                         "imports, a hang case on its timeout); the runs' own CPU is then not measured")
    ap.add_argument("--against", metavar="RESULT",
                    help="run nothing: compare this result file (a --json of an earlier run) with --check-baseline")
    a = ap.parse_args(argv)
    if a.against:
        if not a.check_baseline:
            ap.error("--against needs --check-baseline FILE")
        return check_baseline(gated(json.loads(Path(a.against).read_text(encoding="utf-8"))), a.check_baseline)
    if a.from_json:
        return rescore(a)
    cases = [c for c in CASES if c.quick] if a.quick else list(CASES)
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        cases = [BY_NAME[n] for n in names]
    if a.list:
        for c in CASES:
            print(f"{c.name:30} {c.cls:34} {'quick ' if c.quick else '      '}{c.description}")
        return 0
    py = swiftgen.swift_python()
    if not py or not swiftgen.swift_ok(py):
        print("ms-swift is not importable: pip install -e '.[swift]'", file=sys.stderr)
        return 2
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="scoreboard-"))
    t0 = time.monotonic()
    bench = Bench(work, py, log=lambda m: print(m, file=sys.stderr, flush=True))
    bench.setup(cases)
    start_cpu = bench.start_cost()
    def one(c: Case) -> CaseResult:
        r = bench.run_case(c)
        verdict = "skipped: " + r.skipped if r.skipped else (
            f"{'ok  ' if r.category_ok else 'MISS'} {r.got_rule} {r.got_category} action {r.got_action} "
            f"evidence {r.evidence_ok} rc {r.rc} {r.wall_s} s"
            + (f" hang stopped {r.hang_detect_s} s after the fault" if r.hang_detect_s is not None else ""))
        print(f"{c.name:30} {c.cls:34} {verdict}", file=sys.stderr, flush=True)
        return r

    bench.exclusive = a.jobs <= 1
    if bench.exclusive:
        results = [one(c) for c in cases]
    else:
        # longest first: the hang cases (they mostly wait, so others run beside them), then the runs that train,
        # then those that stop at an argument or data check before the first step
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(a.jobs) as pool:
            futures = {c.name: pool.submit(one, c) for c in sorted(cases, key=lambda c: (not c.hang, c.cls in EARLY))}
            results = [futures[c.name].result() for c in cases]
    doc = document(results, "quick" if a.quick else ("only" if a.only else "full"), bench.gen.versions,
                   time.monotonic() - t0, start_cpu)
    checks = gated(doc)
    full = not a.quick and not a.only
    json_path = a.json or (str(RESULTS / "scoreboard.json") if full else None)
    md_path = a.markdown or (str(DOC) if full else None)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if md_path:
        Path(md_path).write_text(render_markdown(doc), encoding="utf-8")
    print(render_markdown(doc))
    if a.write_baseline:
        write_baseline(a.write_baseline, checks)
    if a.check_baseline:
        return check_baseline(checks, a.check_baseline)
    return 0


def check_baseline(checks: dict[str, dict], baseline: str) -> int:
    """1 (and a REGRESSION line per check) when a check that passed in the baseline file fails in ``checks``."""
    base = json.loads(Path(baseline).read_text(encoding="utf-8"))["classes"]
    bad = regressions(checks, base)
    for line in bad:
        print(f"REGRESSION {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
