"""Scoreboard: inject real faults into real GRPO runs on CPU and score grpo-doctor's diagnosis of each.

Every case is a real `swift rlhf --rlhf_type grpo` run of a tiny local Qwen2 model (tools/swiftgen_tiny.py builds
it offline), launched under `grpo-doctor watch` (so hangs are caught live, as a user would), then diagnosed
post mortem with `grpo-doctor analyze RUN_DIR --format json`. Faults are injected for real: wrong flags, a reward
plugin that raises, hangs or divides by zero (bench/scoreboard_plugins/faults.py), a learning rate that makes the
model diverge, a missing module, a full disk (a small tmpfs, root only). Nothing is written by hand into a log.

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
    python bench/scoreboard.py --list

Options: --work DIR (default: a new temp dir; the model, runs and logs), --json FILE, --markdown FILE, --only NAMES
(comma list), --write-baseline FILE. Runs one swift process at a time. Exit status: 0, or 1 when
--check-baseline finds a class whose check passed in the baseline and fails now.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(1, str(ROOT))     # this checkout's doctor package, not an installed one
import swiftgen  # noqa: E402

PLUGIN = HERE / "scoreboard_plugins" / "faults.py"
TRL_SCRIPT = HERE / "scoreboard_plugins" / "trl_grpo.py"
RESULTS = HERE / "results"
DOC = ROOT / "docs" / "SCOREBOARD.md"
BASELINE = RESULTS / "quick-baseline.json"

# watch's settings for every case: hangs are caught in seconds, not the default minutes (a tiny model's step is
# ~0.2-3 s; the real defaults, 5 x the slowest step and at least 300 s, would only make the bench slow; at 10 s
# the healthy runs were stopped while swift plotted its curves with matplotlib after the last step)
HANG_TIMEOUT = 30.0
FIRST_STEP_TIMEOUT = 20.0
GRACE = 2.0
DRAIN = 2.0

MT = ["--model_type", "qwen2", "--template", "qwen2_5"]
BASE = ["rlhf", "--rlhf_type", "grpo", "--model", "{TINY}", *MT, "--check_model", "false",
        "--dataset", "data/train.jsonl", "--tuner_type", "lora", "--torch_dtype", "float32",
        "--max_completion_length", "8", "--num_generations", "4", "--per_device_train_batch_size", "4",
        "--max_steps", "4", "--save_steps", "2", "--logging_steps", "1", "--dataloader_num_workers", "0",
        # no tensorboard: swift then skips drawing its curves with matplotlib after the last step (10-20 s of CPU
        # per run on 2 shared cores); logging.jsonl is written all the same
        "--report_to", "none"]
PLUG = ["--external_plugins", str(PLUGIN)]


def argv_with(base: list[str], **flags: str | None) -> list[str]:
    """``base`` with ``--flag value`` set (replaced when present) or removed (value None)."""
    out = list(base)
    for name, val in flags.items():
        flag = "--" + name
        if flag in out:
            i = out.index(flag)
            j = i + 1
            while j < len(out) and not out[j].startswith("--"):
                j += 1
            out[i:j] = [] if val is None else [flag, *val.split()]
        elif val is not None:
            out += [flag, *val.split()]
    return out


def noisy(**flags: str | None) -> list[str]:
    return argv_with([*BASE, *PLUG], **{"reward_funcs": "sb_noisy", **flags})


@dataclass(frozen=True)
class Case:
    name: str
    cls: str                          # the fault class = the expected category; "healthy" for a healthy run
    argv: tuple[str, ...]             # after `swift`; {TINY} {MERGED} {WORK} filled in; --output_dir added
    verdicts: tuple[str, ...] = ()    # accepted `action` of findings[0] (the first is the expected one)
    evidence: str = ""                # regex one of findings[0]'s evidence texts must match
    description: str = ""
    framework: str = "ms-swift"
    quick: bool = False               # the --quick representative of its class
    env: tuple[tuple[str, str], ...] = ()
    needs: tuple[str, ...] = ()       # "merged": the LoRA SFT base merged (swiftgen), "root": mount a tmpfs
    hang: bool = False                # watch must stop it; time fault -> stop
    tmpfs_kb: int = 0                 # --output_dir on a tmpfs of this size (disk full)


CASES: list[Case] = [
    # ---- healthy runs (no finding at error allowed)
    Case("healthy-lora", "healthy", tuple(noisy()), description="LoRA GRPO, 4 steps, a reward that varies in each group",
         quick=True),
    Case("healthy-full-fp32", "healthy", tuple(noisy(tuner_type="full", learning_rate="1e-5")),
         description="full-parameter GRPO in fp32, 4 steps"),
    Case("healthy-ddp2", "healthy", tuple(noisy(per_device_train_batch_size="2", use_cpu="true", ddp_backend="gloo")),
         description="2 processes (torchrun, gloo, --use_cpu true), 2 x 2 completions = one group of 4",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29621"))),
    # ---- batch-divisibility: GRPOTrainer / swift's argument check raises `must be evenly divisible`
    Case("batch-div-train", "batch-divisibility", tuple(noisy(num_generations="2", per_device_train_batch_size="3")),
         ("relaunch",), r"evenly divisible", "per_device_train_batch_size 3, num_generations 2", quick=True),
    Case("batch-div-ddp2", "batch-divisibility",
         tuple(noisy(per_device_train_batch_size="3", use_cpu="true", ddp_backend="gloo")),
         ("relaunch",), r"evenly divisible", "2 processes x 3 = 6 completions, num_generations 4",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29623"))),
    # ---- eval-batch-divisibility
    Case("eval-batch-default", "eval-batch-divisibility", tuple(noisy(val_dataset="data/val.jsonl")),
         ("relaunch",), r"eval batch size.*evenly divisible|evenly divisible.*num_generations_eval",
         "--val_dataset with per_device_eval_batch_size left at 1, num_generations 4", quick=True),
    Case("eval-batch-3", "eval-batch-divisibility",
         tuple(noisy(val_dataset="data/val.jsonl", num_generations="2", per_device_eval_batch_size="3")),
         ("relaunch",), r"eval batch size.*evenly divisible",
         "per_device_eval_batch_size 3 with num_generations 2"),
    # ---- argument-error-other
    Case("unknown-flag", "argument-error-other", tuple(noisy(reward_temperature="0.5")), ("relaunch",),
         r"remaining_argv", "a made-up flag --reward_temperature", quick=True),
    Case("bf16-on-cpu", "argument-error-other", tuple(noisy(torch_dtype="bfloat16")), ("relaunch",),
         r"doesn't support bf16", "--torch_dtype bfloat16 without --use_cpu on a machine without a GPU"),
    # ---- dataset-or-template-error
    Case("no-template", "dataset-or-template-error", tuple(noisy(template=None)), ("relaunch",),
         r"template_type", "a local model directory without --template: several templates match", quick=True),
    Case("no-model-type", "dataset-or-template-error", tuple(noisy(model_type=None)), ("relaunch",),
         r"model_type", "a local model directory without --model_type: two model types match"),
    # ---- import-or-dependency-error
    Case("plugin-missing-module", "import-or-dependency-error",
         tuple(argv_with(noisy(), external_plugins=str(PLUGIN) + " {WORK}/plugins/needs_judge_client.py")),
         ("relaunch",), r"No module named", "an --external_plugins file imports a module that is not installed",
         quick=True),
    # ---- reward-function-error
    Case("reward-raises", "reward-function-error", tuple(noisy(reward_funcs="sb_raising")), ("stop", "relaunch"),
         r"judge_score: cannot score", "a user reward function raises ValueError at its first call", quick=True),
    Case("accuracy-no-solution-column", "reward-function-error",
         tuple(argv_with([*BASE], dataset="data/no_solution.jsonl", reward_funcs="accuracy")), ("stop", "relaunch"),
         r"solution", "--reward_funcs accuracy on a dataset without a `solution` column"),
    # ---- reward-zero-or-flat
    Case("reward-constant", "reward-zero-or-flat", tuple(noisy(reward_funcs="sb_constant")), ("stop",),
         r"reward_std", "a reward that gives every completion the same score: reward_std 0 at every step", quick=True),
    Case("reward-nan-swallowed", "reward-zero-or-flat", tuple(noisy(reward_funcs="sb_nan", max_steps="6")), ("stop",),
         r"reward", "a reward returning NaN: swift's nansum turns it into reward 0, reward_std 0"),
    Case("random-init-accuracy-format", "reward-zero-or-flat",
         tuple(argv_with([*BASE], reward_funcs="accuracy format", max_steps="6")), ("stop",),
         r"reward", "a random-init model never writes the format: accuracy and format score 0 everywhere"),
    # ---- loss-nan-or-inf
    Case("diverged-lr", "loss-nan-or-inf",
         tuple(noisy(tuner_type="full", learning_rate="1e4", max_grad_norm="1e9", save_steps="4")), ("relaunch",),
         r"nan", "learning_rate 1e4 without clipping: the model diverges, grad_norm nan at step 4", quick=True),
    # ---- hangs (watch stops them)
    Case("hang-reward-mid", "hang-mid-training", tuple(noisy(reward_funcs="sb_stuck")),
         ("stop",), r"", "the reward function never returns from its 3rd call (step 3)", quick=True,
         env=(("SCOREBOARD_OK_CALLS", "2"),), hang=True),
    Case("hang-reward-first", "hang-at-start", tuple(noisy(reward_funcs="sb_stuck")), ("stop",), r"",
         "the reward function never returns from its first call: no training step ever ends",
         env=(("SCOREBOARD_OK_CALLS", "0"),), hang=True),
    # ---- checkpoints
    Case("full-from-merged-load-args", "checkpoint-adapter-only-load-args",
         tuple(noisy(model="{MERGED}", tuner_type="full", load_args="true")), ("relaunch",), r"adapter|lora",
         "--model <merged LoRA dir> --tuner_type full --load_args true: the LoRA run's tuner_type wins",
         needs=("merged",)),
    # ---- more reward-function faults and argument checks
    Case("reward-short", "reward-function-error", tuple(noisy(reward_funcs="sb_short")), ("stop", "relaunch"),
         r"", "a reward that returns one score fewer than completions (drops the ones it cannot parse)"),
    Case("num-generations-1", "batch-divisibility", tuple(noisy(num_generations="1", per_device_train_batch_size="1")),
         ("relaunch",), r"num_generations", "--num_generations 1: GRPO needs at least 2 completions per prompt"),
    # ---- a rank killed with SIGKILL (what the OOM killer sends); one rank that stalls before a collective: the other
    # waits in it, and watch stops the run before any process-group timeout (stacks of both ranks)
    Case("rank-sigkill-ddp2", "host-oom-killed",
         tuple(noisy(reward_funcs="sb_killed", per_device_train_batch_size="2", use_cpu="true", ddp_backend="gloo")),
         ("relaunch", "resume"), r"SIGKILL|Signal 9|-9", "rank 1 gets SIGKILL in its 3rd reward call (2 processes)",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29625"), ("SCOREBOARD_OK_CALLS", "2"),
                          ("SCOREBOARD_RANK", "1"))),
    Case("rank-stall-ddp2", "hang-mid-training",
         tuple(noisy(reward_funcs="sb_rank_stall", per_device_train_batch_size="2", use_cpu="true",
                     ddp_backend="gloo")),
         ("stop",), r"", "rank 1's reward never returns from its 3rd call; rank 0 waits in the next collective",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29627"), ("SCOREBOARD_OK_CALLS", "2"),
              ("SCOREBOARD_RANK", "1")), hang=True),
    # ---- output-degenerate: every completion cut at --max_completion_length
    Case("clipped-completions", "output-degenerate",
         tuple(noisy(model="{MERGED}", max_completion_length="3", max_steps="6")),
         ("relaunch",), r"clipped_ratio", "--max_completion_length 3 for a policy that writes 13-token answers",
         needs=("merged",)),
    Case("disk-full-tmpfs", "disk-full", tuple(noisy(tuner_type="full", save_steps="2")),
         ("resume", "restart", "relaunch"), r"No space left on device",
         "--output_dir on a 256 KB tmpfs: the first checkpoint save fails", needs=("root",), tmpfs_kb=256),
]



def trl(**flags: str) -> tuple[str, ...]:
    """A TRL GRPOTrainer run (bench/scoreboard_plugins/trl_grpo.py) of the same tiny model and data."""
    return tuple(argv_with(["--model", "{TINY}", "--dataset", "data/train.jsonl", "--reward", "noisy"], **flags))


CASES += [
    Case("trl-healthy", "healthy", trl(), description="TRL GRPOTrainer, 4 steps, a reward that varies", framework="trl"),
    Case("trl-healthy-6-steps", "healthy", trl(max_steps="6", learning_rate="1e-6"),
         description="TRL GRPOTrainer, 6 steps at learning_rate 1e-6", framework="trl"),
    Case("trl-healthy-slow-first-step", "healthy", trl(reward="slow_first"),
         description="TRL GRPOTrainer whose first reward call takes 12 s (a cold judge): a slow first step, no hang",
         framework="trl"),
    Case("trl-batch-div", "batch-divisibility", trl(per_device_train_batch_size="3", num_generations="2"),
         ("relaunch",), r"divisible", "GRPOConfig per_device_train_batch_size 3, num_generations 2", framework="trl"),
    Case("trl-missing-module", "import-or-dependency-error", trl(**{"import": "judge_client"}), ("relaunch",),
         r"No module named", "the training script imports a module that is not installed", framework="trl"),
    Case("trl-reward-raises", "reward-function-error", trl(reward="raising"), ("stop", "relaunch"),
         r"judge_score: cannot score", "the reward function raises ValueError at its first call", framework="trl"),
    Case("trl-reward-constant", "reward-zero-or-flat", trl(reward="constant", max_steps="6"), ("stop",),
         r"reward", "every completion gets the same reward: reward_std 0 at every step", framework="trl"),
    # the same fault as diverged-lr, but trl's run never reaches NaN (10 steps tried): one step saturates the tiny
    # model and every later gradient is exactly 0, so the class is what the run shows; resuming from a checkpoint
    # saved after that step would keep the dead weights, hence relaunch
    Case("trl-diverged-lr", "grad-norm-zero", trl(learning_rate="1e4", max_grad_norm="1e9"), ("relaunch",),
         r"grad_norm", "learning_rate 1e4 without clipping: grad_norm 2.1 at step 1, exactly 0 from step 2",
         framework="trl"),
    Case("trl-reward-short", "reward-function-error", trl(reward="short"), ("stop", "relaunch"), r"",
         "the reward function returns one score fewer than completions", framework="trl"),
    Case("trl-sigkill", "host-oom-killed", trl(reward="killed", ok_calls="2"), ("relaunch", "resume"),
         r"SIGKILL|Signal 9|-9|137", "the training process gets SIGKILL in its 3rd reward call", framework="trl"),
    Case("trl-hang-reward-first", "hang-at-start", trl(reward="stuck", ok_calls="0"), ("stop",), r"",
         "the reward function never returns from its first call", framework="trl", hang=True),
    Case("trl-hang-reward-mid", "hang-mid-training", trl(reward="stuck", ok_calls="2", max_steps="6"), ("stop",), r"",
         "the reward function never returns from its 3rd call", framework="trl", hang=True),
]
BY_NAME = {c.name: c for c in CASES}

MISSING_MODULE_PLUGIN = '''\
# An --external_plugins file that needs a client library this environment does not have.
import judge_client  # noqa: F401  (not installed)
'''


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
    skipped: str | None = None


# --------------------------------------------------------------------------- running


class Bench:
    def __init__(self, work: Path, py: str, log=print):
        self.work = work.resolve()
        self.py = py
        self.log = log
        self.gen = swiftgen.Generator(self.work, py, log=log, sft_steps=20)
        self.swift = swiftgen.swift_cmd(py)

    def setup(self, cases: list[Case]) -> None:
        # watch's CPU share is measured as users run it: from an installed package, whose modules pip compiled to
        # bytecode at install. A checkout run with PYTHONDONTWRITEBYTECODE=1 (as on the dev machine) compiles the
        # ~200 modules at every start instead: 0.6 s of CPU per watch, about half of its CPU in a 20 s run
        import compileall
        compileall.compile_dir(str(ROOT / "doctor"), quiet=1)
        self.gen.build_tiny()
        plugins = self.work / "plugins"
        plugins.mkdir(exist_ok=True)
        (plugins / "needs_judge_client.py").write_text(MISSING_MODULE_PLUGIN, encoding="utf-8")
        if any("merged" in c.needs for c in cases):
            self.gen.ensure(("merged",))

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
        vals = {"TINY": "tiny-qwen2", "MERGED": "bases/lora-sft-merged", "WORK": str(self.work)}
        argv = [re.sub(r"\{(\w+)\}", lambda m: vals[m.group(1)], a) for a in case.argv]
        return [*argv, "--output_dir", out]

    def launcher(self, case: Case) -> list[str]:
        return [self.py, str(TRL_SCRIPT)] if case.framework == "trl" else list(self.swift)

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
        with open(self.work / "runs" / f"{case.name}.watch.stderr", "wb") as err:
            proc = subprocess.Popen(cmd, cwd=self.work, env=env, stdout=subprocess.DEVNULL, stderr=err)
            me = psutil.Process(proc.pid)
            cpu = 0.0
            while True:
                try:
                    t = me.cpu_times()
                    cpu = t.user + t.system           # watch itself, not the run it supervises
                except psutil.Error:
                    pass
                try:
                    res.rc = proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - start > 600:
                        proc.kill()
        ended = time.time()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # watch and every process below it that was waited for (the run): minus watch's own, the run's CPU
        total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        res.run_cpu_s = round(max(total - cpu, 0.0), 2)
        res.wall_s = round(time.monotonic() - start, 1)
        res.watch_cpu_s = round(cpu, 2)
        res.watch_cpu_share = round(cpu / res.wall_s, 4) if res.wall_s else 0.0
        if case.hang and fault_file.exists():
            res.hang_detect_s = round(ended - float(fault_file.read_text()), 1)
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


# --------------------------------------------------------------------------- scoring


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
        out[c] = {"frameworks": sorted({r.framework for r in mine}), "cases": len(mine), "tp": tp, "fp": fp, "fn": fn,
                  "precision": round(prec, 3), "recall": round(rec, 3), "f1": round(f1, 3),
                  "evidence_right": f"{sum(ev)}/{len(ev)}" if ev else None,
                  "verdict_right": f"{sum(bool(r.verdict_ok) for r in mine)}/{len(mine)}",
                  "hang_detect_s": max(hangs) if hangs else None,
                  "passed": {"category": tp == len(mine), "verdict": all(r.verdict_ok for r in mine),
                             "evidence": all(ev) if ev else None}}
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
    run_cpu = sum(r.run_cpu_s for r in done)
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
        "hang_detect_s": {"max": max(hangs), "mean": round(sum(hangs) / len(hangs), 1),
                          "hang_timeout_s": HANG_TIMEOUT, "first_step_timeout_s": FIRST_STEP_TIMEOUT,
                          "grace_s": GRACE} if hangs else None,
        "watch_cpu_share": round(cpu / wall, 4) if wall else None,
        "watch_cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
        "run_cpu_s": round(run_cpu, 1), "watch_cpu_of_run_cpu": round(cpu / run_cpu, 4) if run_cpu else None,
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
        "`swift rlhf --rlhf_type grpo` run of a tiny Qwen2 model on CPU, with a fault injected for real, run under "
        "`grpo-doctor watch` and diagnosed with `grpo-doctor analyze`. See the docstring of `bench/scoreboard.py` "
        "for how each figure is computed.",
        "",
        f"- date: {doc['generated']}, mode: {doc['mode']}, grpo-doctor {doc['grpo_doctor']['version']} "
        f"(commit {doc['grpo_doctor']['commit']}), {doc['total_s']:.0f} s in all (one run at a time)",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, no GPU, {m['os']}, Python {m['python']}",
        "",
        f"**macro-F1 {s['macro_f1']}** over {s['classes']} fault classes; top-1 right {s['top1_right']}/"
        f"{s['fault_cases']}; evidence right {s['evidence_right']}/{s['evidence_scored']}; verdict right "
        f"{s['verdict_right']}/{s['fault_cases']}; false alarms {s['false_alarms']}/{s['healthy_runs']} healthy runs; "
        + (f"hang caught and stopped {hd['mean']} s (mean), {hd['max']} s (max) after the fault began "
           f"(--hang-timeout {hd['hang_timeout_s']:g}, --phase-timeout first-step={hd['first_step_timeout_s']:g}, "
           f"--grace {hd['grace_s']:g}); " if hd else "")
        + f"watch's own CPU {100 * (s['watch_cpu_share'] or 0):.1f}% of the runs' wall time"
        + (f" ({100 * s['watch_cpu_of_run_cpu']:.1f}% of the runs' own CPU time)" if s.get("watch_cpu_of_run_cpu")
           else "")
        + (f", of which {s['watch_start_cpu_s']:g} s per launch is its fixed start and end (watch -- true): without "
           f"it {100 * s['watch_cpu_share_after_start']:.1f}%" if s.get("watch_cpu_share_after_start") is not None
           else "") + "; framework named right "
        f"in {s.get('framework_right', '?')}/{s.get('runs', '?')} runs.",
        "",
        "| class | frameworks | cases | precision | recall | F1 | evidence | verdict | hang s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c, x in doc["categories"].items():
        lines.append(f"| {c} | {', '.join(x['frameworks'])} | {x['cases']} | {x['precision']} | {x['recall']} | "
                     f"{x['f1']} | {x['evidence_right'] or 'n/a'} | {x['verdict_right']} | "
                     f"{x['hang_detect_s'] if x['hang_detect_s'] is not None else ''} |")
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


def rescore(a) -> int:
    by_name: dict[str, CaseResult] = {}
    versions: dict = {}
    total = 0.0
    for path in a.from_json:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
        versions = old.get("versions") or versions
        total += old.get("total_s") or 0.0
        for d in old["cases"]:
            by_name[d["name"]] = CaseResult(**d)
    order = {c.name: i for i, c in enumerate(CASES)}
    results = sorted(by_name.values(), key=lambda r: order.get(r.name, len(order)))
    doc = document(results, "full", versions, total)
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
    a = ap.parse_args(argv)
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
    results = []
    for c in cases:
        r = bench.run_case(c)
        results.append(r)
        verdict = "skipped: " + r.skipped if r.skipped else (
            f"{'ok  ' if r.category_ok else 'MISS'} {r.got_rule} {r.got_category} action {r.got_action} "
            f"evidence {r.evidence_ok} rc {r.rc} {r.wall_s} s"
            + (f" hang stopped {r.hang_detect_s} s after the fault" if r.hang_detect_s is not None else ""))
        print(f"{c.name:30} {c.cls:34} {verdict}", file=sys.stderr, flush=True)
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
        base = json.loads(Path(a.check_baseline).read_text(encoding="utf-8"))["classes"]
        bad = regressions(checks, base)
        for line in bad:
            print(f"REGRESSION {line}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
