"""Reproduce GRPO failures with the real ms-swift and store them as golden fixtures.

Builds a tiny Qwen2 model, a BPE tokenizer and data locally (tools/swiftgen_tiny.py, no model hub),
trains the small SFT bases the scenarios need (`swift sft`, `swift export --merge_lora`), then runs
each named scenario of `swift rlhf --rlhf_type grpo` and writes fixtures/logs/real-<scenario>/:
command.txt, log.txt, logging.jsonl / args.json / completions.jsonl when swift wrote them,
tree.txt (the output directory with sizes; no weights are copied) and provenance.toml (this
generator, the scenario, versions, exit code and what a person checked the run against).

    python tools/swiftgen.py --list
    python tools/swiftgen.py [--swift-python PY] [--work DIR] [--out fixtures/logs] [SCENARIO ...]

The Python that has ms-swift is --swift-python, else $GRPO_DOCTOR_SWIFT_PYTHON, else this one if it
imports swift, else the interpreter of the `swift` script on PATH. Only one swift process runs at a
time. Machine-specific paths (work dir, venv, home, the base interpreter, /tmp) become <work>, <venv>,
<home>, <python> and <tmp> in everything that is stored.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY_SCRIPT = Path(__file__).resolve().parent / "swiftgen_tiny.py"
GENERATOR = "tools/swiftgen.py"

# --------------------------------------------------------------------------- finding ms-swift


def swift_python(explicit: str | None = None) -> str | None:
    """The interpreter that can import ms-swift, or None."""
    cands = [explicit, os.environ.get("GRPO_DOCTOR_SWIFT_PYTHON")]
    for c in cands:
        if c:
            return c
    if importlib.util.find_spec("swift") is not None and importlib.util.find_spec("trl") is not None:
        return sys.executable
    script = shutil.which("swift")
    if script:
        try:
            with open(script, "rb") as f:
                first = f.readline().decode("utf-8", "replace").strip()
        except OSError:
            return None
        if first.startswith("#!"):
            py = first[2:].strip().split()[0]
            if os.path.exists(py):
                return py
    return None


def swift_ok(py: str) -> bool:
    """ms-swift, trl and msgspec (which ms-swift 4.6 imports but does not declare) import in `py`."""
    try:
        r = subprocess.run([py, "-c", "import swift, trl, msgspec, transformers"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def versions(py: str) -> dict[str, str]:
    code = ("import json, importlib.metadata as m\n"
            "out = {}\n"
            "for d in ('ms-swift', 'trl', 'transformers', 'torch', 'peft', 'accelerate'):\n"
            "    try: out[d] = m.version(d)\n"
            "    except Exception: out[d] = 'missing'\n"
            "print(json.dumps(out))")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(r.stdout)


def swift_cmd(py: str) -> list[str]:
    """How to start `swift`: the script next to the interpreter, else `python -m swift.cli.main`."""
    script = Path(py).parent / "swift"
    if script.exists():
        return [str(script)]
    return [py, "-m", "swift.cli.main"]


# --------------------------------------------------------------------------- scenarios

MT = ["--model_type", "qwen2", "--template", "qwen2_5"]   # a local dir needs both (swift cannot guess)
NC = ["--check_model", "false"]                          # skip the offline ModelScope lookup (~20 s)
G = ["rlhf", "--rlhf_type", "grpo", *MT, *NC, "--dataset", "data/train.jsonl", "--reward_funcs", "accuracy", "format",
     "--max_completion_length", "16", "--logging_steps", "1"]
LORA_ON_BASE = [*G, "--model", "{BASE}", "--tuner_type", "lora", "--torch_dtype", "float32", "--max_steps", "4",
                "--save_steps", "2"]
FULL_FROM = [*G, "--tuner_type", "full", "--torch_dtype", "float32", "--num_generations", "4",
             "--per_device_train_batch_size", "4", "--max_steps", "4", "--save_steps", "2"]
DTYPE = [*G, "--model", "{TINY}", "--tuner_type", "full", "--num_generations", "4", "--per_device_train_batch_size", "4",
         "--max_steps", "2", "--save_steps", "2"]
DDP = [*G, "--model", "{BASE}", "--tuner_type", "lora", "--torch_dtype", "float32", "--num_generations", "4",
       "--max_steps", "4", "--save_steps", "2", "--ddp_backend", "gloo"]

PLUGINS = {
    "raising_reward.py": '''\
# A user reward function with a bug: it raises on every call.
from swift.rewards import ORM, orms


class StrictLength(ORM):
    def __call__(self, completions, **kwargs):
        lengths = [len(c) for c in completions]
        raise ValueError(f"strict_length: cannot score completions of lengths {lengths}")


orms["strict_length"] = StrictLength
''',
    "hanging_reward.py": '''\
# A user reward function that never returns once training is under way (think: a remote judge that
# stopped answering, called without a timeout).
import threading

from swift.rewards import ORM, orms


class RemoteJudge(ORM):
    calls = 0

    def __call__(self, completions, **kwargs):
        RemoteJudge.calls += 1
        if RemoteJudge.calls > {ok_calls}:
            threading.Event().wait()  # blocks forever
        return [float(sol in c) for c, sol in zip(completions, kwargs["solution"])]


orms["remote_judge"] = RemoteJudge
''',
}


@dataclass(frozen=True)
class Scenario:
    name: str                       # fixture folder: real-<name>
    argv: tuple[str, ...]           # after `swift`; {TINY} {BASE} {LORA} {MERGED} {OUT} are filled in
    description: str
    expect: dict                    # expect_category | expect_no_error, expect_rules, forbid_rules
    env: tuple[tuple[str, str], ...] = ()
    needs: tuple[str, ...] = ()     # bases: "base" (full SFT), "lora" (LoRA SFT), "merged" (LoRA merged)
    plugin: str | None = None       # PLUGINS key, written to plugins/ in the work dir
    plugin_fmt: tuple[tuple[str, str], ...] = ()
    hang_silence: float | None = None  # a hang: stop after this many seconds without output, log cut there
    timeout: float = 600.0
    copy_completions: bool = False
    note: str = ""                  # what was checked by hand against the real run (provenance comment)

    @property
    def fixture(self) -> str:
        return f"real-{self.name}"


# Full runs started from the LoRA base: the weights are right (tree.txt: model.safetensors in every
# checkpoint), but the one-epoch LoRA SFT never learned the answer format, so every reward is 0.
ZERO_REWARD_FULL = {"expect_category": "reward-zero-or-flat", "expect_rules": ["GD610"],
                    "forbid_rules": ["GD701", "GD438", "GD439"]}
ZERO_NOTE = ("checked against the run: logging.jsonl reward 0 and reward_std 0 at every step (the LoRA SFT base\n"
             "never writes the <think>/<answer> format), so GD610 is right; tree.txt: every checkpoint holds\n"
             "model.safetensors (full weights), so no GD701.")


# The dtype runs start from the random tiny model (2 steps): rewards are 0 (a warning, not an error,
# over 2 steps) and every completion hits max_completion_length; the point is tree.txt's sizes.
DTYPE_EXPECT = {"expect_no_error": True, "expect_rules": ["GD610", "GD641"], "forbid_rules": ["GD701"]}
DTYPE_NOTE = "the sizes to compare are in tree.txt (checkpoint-2/*): weights, optimizer.pt, rng_state.pth."


def _s(name, argv, description, expect, **kw) -> Scenario:
    return Scenario(name, tuple(argv), description, expect, **kw)


SCENARIOS: list[Scenario] = [
    # ---- healthy runs
    _s("grpo-lora-healthy", [*G, "--model", "{BASE}", "--tuner_type", "lora", "--torch_dtype", "float32",
                             "--num_generations", "4", "--per_device_train_batch_size", "4", "--learning_rate", "1e-4",
                             "--max_steps", "6", "--save_steps", "2", "--log_completions", "true"],
       "Healthy LoRA GRPO baseline, 6 steps, G=4, reward accuracy+format, --log_completions true",
       {"expect_no_error": True, "forbid_rules": ["GD610", "GD612", "GD613", "GD620", "GD630", "GD640", "GD642"]},
       needs=("base",), copy_completions=True),
    _s("grpo-lora-eval-ok", [*G, "--model", "{BASE}", "--val_dataset", "data/val.jsonl", "--tuner_type", "lora",
                             "--torch_dtype", "float32", "--num_generations", "4", "--per_device_train_batch_size", "4",
                             "--per_device_eval_batch_size", "4", "--max_steps", "4", "--save_steps", "2",
                             "--eval_steps", "2"],
       "Healthy LoRA GRPO with a validation set: eval batch 4 = one group of num_generations 4",
       {"expect_no_error": True, "forbid_rules": ["GD102"]}, needs=("base",)),
    _s("grpo-full-fp32", [*FULL_FROM, "--model", "{BASE}", "--learning_rate", "1e-5"],
       "Healthy full-parameter GRPO in fp32 (fp16 autocast flag on CPU); checkpoints hold model.safetensors",
       {"expect_no_error": True, "forbid_rules": ["GD701"]}, needs=("base",)),
    _s("grpo-full-bf16", [*G, "--model", "{BASE}", "--tuner_type", "full", "--torch_dtype", "bfloat16", "--use_cpu", "true",
                          "--num_generations", "4", "--per_device_train_batch_size", "4", "--learning_rate", "1e-5",
                          "--max_steps", "4", "--save_steps", "2"],
       "Healthy full-parameter GRPO in bf16 with --use_cpu true",
       {"expect_no_error": True, "forbid_rules": ["GD407", "GD701"]}, needs=("base",)),
    _s("ddp2-cpu-gloo-use-cpu-healthy", [*DDP, "--per_device_train_batch_size", "2", "--use_cpu", "true"],
       "2 processes (torchrun, gloo, --use_cpu true): 2 x 2 = 4 completions = one group of 4; trains",
       {"expect_no_error": True, "forbid_rules": ["GD301", "GD304", "GD305", "GD307", "GD310", "GD320", "GD321"]},
       env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29511")), needs=("base",)),
    # ---- batch divisibility
    _s("batch-div-train", [*LORA_ON_BASE, "--num_generations", "2", "--per_device_train_batch_size", "3"],
       "per_device_train_batch_size 3, num_generations 2: generation_batch_size (3) not divisible by 2",
       {"expect_category": "batch-divisibility", "expect_rules": ["GD101"]}, needs=("base",)),
    _s("batch-div-grad-accum", [*LORA_ON_BASE, "--num_generations", "4", "--per_device_train_batch_size", "2",
                                "--gradient_accumulation_steps", "3"],
       "per_device_train_batch_size 2 x gradient_accumulation_steps 3 = 6, not divisible by num_generations 4",
       {"expect_category": "batch-divisibility", "expect_rules": ["GD101"]}, needs=("base",)),
    _s("batch-div-eval-default", [*LORA_ON_BASE, "--num_generations", "4", "--per_device_train_batch_size", "4",
                                  "--val_dataset", "data/val.jsonl"],
       "--val_dataset with per_device_eval_batch_size left at its default 1: 1 is not divisible by 4",
       {"expect_category": "eval-batch-divisibility", "expect_rules": ["GD102"]}, needs=("base",)),
    _s("batch-div-eval", [*LORA_ON_BASE, "--num_generations", "2", "--per_device_train_batch_size", "4",
                          "--val_dataset", "data/val.jsonl", "--per_device_eval_batch_size", "3"],
       "per_device_eval_batch_size 3 with num_generations 2: global eval batch 3 not divisible by 2",
       {"expect_category": "eval-batch-divisibility", "expect_rules": ["GD102"]}, needs=("base",)),
    _s("ddp2-batch-div-child-failed", [*DDP, "--per_device_train_batch_size", "3", "--use_cpu", "true"],
       "2 processes x per_device_train_batch_size 3 = 6, not divisible by num_generations 4; torchrun ChildFailedError",
       {"expect_category": "batch-divisibility", "expect_rules": ["GD101", "GD307"],
        "forbid_rules": ["GD999", "GD320", "GD321", "GD310"]},
       env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29513")), needs=("base",)),
    _s("ddp2-cpu-gloo-shape-error-child-failed", [*DDP, "--per_device_train_batch_size", "2"],
       "2 processes without --use_cpu: each rank runs undistributed with 2 completions, then view(-1, 4) fails",
       {"expect_category": "argument-error-other", "expect_rules": ["GD415", "GD307"],
        "forbid_rules": ["GD999", "GD320", "GD321", "GD310"]},
       env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29512")), needs=("base",)),
    _s("num-generations-1", [*G, "--model", "{TINY}", "--tuner_type", "lora", "--torch_dtype", "float32",
                             "--max_steps", "2", "--num_generations", "1", "--per_device_train_batch_size", "2"],
       "--num_generations 1 without a teacher model: rejected while parsing arguments",
       {"expect_category": "batch-divisibility", "expect_rules": ["GD103"]}),
    # ---- full runs from LoRA artefacts (load_args)
    _s("full-from-merged-default", [*FULL_FROM, "--model", "{MERGED}"],
       "--model <merged LoRA dir> --tuner_type full, load_args left at its default (false for training): full weights",
       ZERO_REWARD_FULL, needs=("merged",), note=ZERO_NOTE),
    _s("full-from-merged-load-args-true", [*FULL_FROM, "--model", "{MERGED}", "--load_args", "true"],
       "--model <merged LoRA dir> --tuner_type full --load_args true: the LoRA run's tuner_type wins, adapter-only checkpoints",
       {"expect_category": "checkpoint-adapter-only-load-args", "expect_rules": ["GD701"]}, needs=("merged",)),
    _s("full-from-merged-load-args-false", [*FULL_FROM, "--model", "{MERGED}", "--load_args", "false"],
       "--model <merged LoRA dir> --tuner_type full --load_args false: full weights",
       ZERO_REWARD_FULL, needs=("merged",), note=ZERO_NOTE),
    _s("full-with-lora-adapters", [*FULL_FROM, "--model", "{TINY}", "--adapters", "{LORA}"],
       "--adapters <LoRA ckpt> --tuner_type full: the adapter is merged first, full weights",
       ZERO_REWARD_FULL, needs=("lora",), note=ZERO_NOTE),
    _s("full-with-lora-adapters-load-args-true", [*FULL_FROM, "--model", "{TINY}", "--adapters", "{LORA}",
                                                  "--load_args", "true"],
       "--adapters <LoRA ckpt> --tuner_type full --load_args true: adapter-only checkpoints",
       {"expect_category": "checkpoint-adapter-only-load-args", "expect_rules": ["GD701"]}, needs=("lora",)),
    _s("full-model-is-lora-ckpt", [*FULL_FROM, "--model", "{LORA}"],
       "--model <LoRA adapter dir> --tuner_type full: no config.json model_type",
       {"expect_category": "dataset-or-template-error", "expect_rules": ["GD438"], "forbid_rules": ["GD701"]},
       needs=("lora",)),
    _s("full-resume-from-lora-ckpt", [*FULL_FROM, "--model", "{TINY}", "--resume_from_checkpoint", "{LORA}"],
       "--resume_from_checkpoint <LoRA ckpt> in a full run: no checkpoint index",
       {"expect_category": "dataset-or-template-error", "expect_rules": ["GD439"]}, needs=("lora",)),
    # ---- dtype and checkpoint size
    _s("dtype-fp32-from-bf16-base", [*DTYPE, "--torch_dtype", "float32"],
       "bf16 base trained as fp32: model.safetensors 2x the bf16 file, optimizer.pt 2x that",
       DTYPE_EXPECT, note=DTYPE_NOTE),
    _s("dtype-bf16-from-bf16-base", [*DTYPE, "--torch_dtype", "bfloat16", "--use_cpu", "true"],
       "bf16 with --use_cpu true: checkpoint = bf16 weights + optimizer.pt (2 Adam moments) + rng/scheduler",
       DTYPE_EXPECT, note=DTYPE_NOTE),
    _s("dtype-bf16-save-only-model", [*DTYPE, "--torch_dtype", "bfloat16", "--use_cpu", "true", "--save_only_model", "true"],
       "bf16 with --save_only_model true: checkpoint holds the weights only (no optimizer/rng/scheduler)",
       DTYPE_EXPECT, note=DTYPE_NOTE),
    _s("cpu-default-dtype-bf16", [*G, "--model", "{TINY}", "--tuner_type", "lora", "--num_generations", "4",
                                  "--per_device_train_batch_size", "4", "--max_steps", "4", "--save_steps", "2"],
       "No --torch_dtype: the bf16 checkpoint's dtype gives bf16=True, which transformers refuses on CPU",
       {"expect_category": "argument-error-other", "expect_rules": ["GD407"]}),
    _s("grpo-full-bf16-no-use-cpu", [*G, "--model", "{BASE}", "--tuner_type", "full", "--torch_dtype", "bfloat16", "--num_generations", "4",
        "--per_device_train_batch_size", "4", "--learning_rate", "1e-5", "--max_steps", "4", "--save_steps", "2"],
       "--torch_dtype bfloat16 without --use_cpu on a CPU-only machine: bf16/gpu refused",
       {"expect_category": "argument-error-other", "expect_rules": ["GD407"]}, needs=("base",)),
    # ---- rewards
    _s("grpo-lora-random-init-zero-reward", ["rlhf", "--rlhf_type", "grpo", "--model", "{TINY}", *MT, "--dataset",
                                             "data/train.jsonl", "--reward_funcs", "accuracy", "format", "--tuner_type",
                                             "lora", "--torch_dtype", "float32", "--max_completion_length", "16",
                                             "--num_generations", "4", "--per_device_train_batch_size", "4",
                                             "--max_steps", "4", "--save_steps", "2", "--logging_steps", "1"],
       "Random-init model: every completion scores 0 (reward_std 0, loss 0, grad_norm 0); --check_model left on",
       {"expect_category": "reward-zero-or-flat", "expect_rules": ["GD610"], "forbid_rules": ["GD630"]}),
    _s("reward-func-raises", [*G[:G.index("--reward_funcs")], "--reward_funcs", "strict_length", "format",
                              "--external_plugins", "plugins/raising_reward.py", "--max_completion_length", "16",
                              "--logging_steps", "1", "--model", "{BASE}", "--tuner_type", "lora", "--torch_dtype",
                              "float32", "--num_generations", "4", "--per_device_train_batch_size", "4",
                              "--max_steps", "4", "--save_steps", "2"],
       "A reward function from --external_plugins raises ValueError at the first scoring",
       {"expect_category": "reward-function-error", "expect_rules": ["GD606"]}, needs=("base",),
       plugin="raising_reward.py"),
    _s("reward-func-hang", [*G[:G.index("--reward_funcs")], "--reward_funcs", "remote_judge", "format",
                            "--external_plugins", "plugins/hanging_reward.py", "--max_completion_length", "16",
                            "--logging_steps", "1", "--model", "{BASE}", "--tuner_type", "lora", "--torch_dtype",
                            "float32", "--num_generations", "4", "--per_device_train_batch_size", "4",
                            "--max_steps", "6", "--save_steps", "3"],
       "A reward function from --external_plugins that never returns from its 4th call: the run hangs in step 4, "
       "right after checkpoint-3 was saved (the last line is `Saving model checkpoint to .../checkpoint-3`)",
       {"expect_category": "hang-mid-training", "expect_rules": ["GD321"], "forbid_rules": ["GD320"]},
       needs=("base",), plugin="hanging_reward.py", plugin_fmt=(("ok_calls", "3"),), hang_silence=45.0),
    _s("dataset-missing-solution-column", [*G[:G.index("--dataset")], "--dataset", "data/no_solution.jsonl",
                                           *G[G.index("--reward_funcs"):], "--model", "{BASE}", "--tuner_type", "lora",
                                           "--torch_dtype", "float32", "--num_generations", "4",
                                           "--per_device_train_batch_size", "4", "--max_steps", "4", "--save_steps", "2"],
       "--reward_funcs accuracy on a dataset whose answer column is `answer`, not `solution`",
       {"expect_category": "reward-function-error", "expect_rules": ["GD606"]}, needs=("base",)),
    # ---- flags
    _s("legacy-train-type-flag", [*G, "--model", "{BASE}", "--train_type", "full", "--torch_dtype", "float32",
                                  "--num_generations", "4", "--per_device_train_batch_size", "4", "--max_steps", "4",
                                  "--save_steps", "2"],
       "--train_type (ms-swift 3.x) on 4.x, where it is --tuner_type: remaining_argv",
       {"expect_category": "argument-error-other", "expect_rules": ["GD401"]}, needs=("base",)),
    _s("unknown-flag", [*G, "--model", "{TINY}", "--tuner_type", "lora", "--torch_dtype", "float32",
                        "--num_generations", "4", "--per_device_train_batch_size", "4", "--max_steps", "2",
                        "--reward_temperature", "0.5"],
       "A made-up flag (--reward_temperature): remaining_argv",
       {"expect_category": "argument-error-other", "expect_rules": ["GD401"]}),
    _s("probe-no-model-type", ["rlhf", "--rlhf_type", "grpo", "--model", "{TINY}", *NC, "--dataset", "data/train.jsonl",
                               "--reward_funcs", "accuracy", "format", "--tuner_type", "lora", "--torch_dtype", "float32",
                               "--max_completion_length", "16", "--num_generations", "4",
                               "--per_device_train_batch_size", "4", "--max_steps", "1", "--logging_steps", "1"],
       "A local model directory without --model_type: two model types match",
       {"expect_category": "dataset-or-template-error", "expect_rules": ["GD430"]}),
    _s("probe-no-template", ["rlhf", "--rlhf_type", "grpo", "--model", "{TINY}", "--model_type", "qwen2", *NC, "--dataset",
                             "data/train.jsonl", "--reward_funcs", "accuracy", "format", "--tuner_type", "lora",
                             "--torch_dtype", "float32", "--max_completion_length", "16", "--num_generations", "4",
                             "--per_device_train_batch_size", "4", "--max_steps", "1", "--logging_steps", "1"],
       "A local model directory without --template: several templates match",
       {"expect_category": "dataset-or-template-error", "expect_rules": ["GD431"]}),
]
BY_NAME = {s.name: s for s in SCENARIOS}
# what the live tests (pytest -m swift) re-run: fast, and each one's fix can be re-checked
LIVE = ["batch-div-train", "batch-div-eval-default", "ddp2-batch-div-child-failed", "num-generations-1",
        "full-from-merged-load-args-true", "reward-func-raises", "unknown-flag"]


# --------------------------------------------------------------------------- running swift


@dataclass
class Result:
    argv: list[str]                 # as stored: `swift ...` with relative paths
    env: dict[str, str]
    rc: int | None                  # None: stopped by us (hang)
    wall_s: float
    log: str                        # scrubbed
    out_dir: Path                   # the --output_dir (absolute)
    hung: bool = False

    @property
    def command_line(self) -> str:
        pre = "".join(f"{k}={v} " for k, v in self.env.items())
        return pre + "swift " + " ".join(shlex.quote(a) for a in self.argv)


class Scrubber:
    """Replace machine-specific paths with stable placeholders (longest first)."""

    def __init__(self, work: Path, py: str):
        venv = Path(py).resolve().parent.parent
        pairs = [(str(work.resolve()), "<work>"), (str(work), "<work>"), (str(venv), "<venv>"),
                 (str(Path(py).parent.parent), "<venv>"), (sys.base_prefix, "<python>"),
                 (os.path.realpath(sys.base_prefix), "<python>")]
        try:
            base = subprocess.run([py, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True,
                                  timeout=60).stdout.strip()
            if base:
                pairs.append((base, "<python>"))
        except (OSError, subprocess.TimeoutExpired):
            pass
        home = os.path.expanduser("~")
        if home and home != "/":
            pairs.append((home, "<home>"))
        seen, self.pairs = set(), []
        for a, b in sorted(pairs, key=lambda p: -len(p[0])):
            if a and a not in seen and a != "/":
                seen.add(a)
                self.pairs.append((a, b))
        self.tmp = re.compile(r"/tmp/[\w.\-]+")

    def __call__(self, text: str) -> str:
        for a, b in self.pairs:
            text = text.replace(a, b)
        return self.tmp.sub("<tmp>", text)


class Generator:
    def __init__(self, work: Path, py: str, *, log=print, sft_steps: int | None = None, tiny_base: bool = False):
        self.work = work.resolve()
        self.py = py
        self.swift = swift_cmd(py)
        self.log = log
        self.sft_steps = sft_steps      # None: one epoch (125 steps); the live tests use fewer
        self.tiny_base = tiny_base      # live tests: argument checks need no trained base, {BASE} = tiny model
        self.scrub = Scrubber(self.work, py)
        self.bases: dict[str, str] = {}
        self._versions: dict[str, str] | None = None
        self._reruns = 0

    @property
    def versions(self) -> dict[str, str]:
        if self._versions is None:
            self._versions = versions(self.py)
        return self._versions

    # ---- setup
    def build_tiny(self) -> None:
        if (self.work / "tiny-qwen2" / "model.safetensors").exists() and (self.work / "data" / "no_solution.jsonl").exists():
            return
        self.work.mkdir(parents=True, exist_ok=True)
        subprocess.run([self.py, str(TINY_SCRIPT), str(self.work)], check=True, capture_output=True, timeout=600)
        self.log(f"built tiny model and data in {self.work}")

    def _sft(self, name: str, tuner: str) -> str:
        dest = self.work / "bases" / name
        if (dest / ("adapter_model.safetensors" if tuner == "lora" else "model.safetensors")).exists():
            return f"bases/{name}"
        steps = ["--num_train_epochs", "1"] if self.sft_steps is None else ["--max_steps", str(self.sft_steps)]
        save = "125" if self.sft_steps is None else str(self.sft_steps)
        argv = ["sft", "--model", "tiny-qwen2", *MT, *NC, "--dataset", "data/sft.jsonl", "--tuner_type", tuner,
                "--torch_dtype", "float32", "--learning_rate", "3e-3", "--warmup_ratio", "0.05",
                "--per_device_train_batch_size", "16", *steps, "--save_steps", save, "--logging_steps", "25",
                "--max_length", "128", "--output_dir", f"runs/sft_{name}"]
        if tuner == "full":
            argv += ["--save_only_model", "true"]
        res = self.run(argv, {}, f"runs/sft_{name}", timeout=900)
        if res.rc != 0:
            raise RuntimeError(f"swift sft ({name}) failed, rc {res.rc}:\n{res.log[-3000:]}")
        ckpts = sorted((self.work / f"runs/sft_{name}").glob("v*/checkpoint-*"), key=lambda p: p.stat().st_mtime)
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(ckpts[-1], dest)
        return f"bases/{name}"

    def ensure(self, needs) -> None:
        self.build_tiny()
        self.bases["TINY"] = "tiny-qwen2"
        if "base" in needs:
            self.bases["BASE"] = "tiny-qwen2" if self.tiny_base else self._sft("full-sft", "full")
        if "lora" in needs or "merged" in needs:
            self.bases["LORA"] = self._sft("lora-sft", "lora")
        if "merged" in needs:
            merged = self.work / "bases" / "lora-sft-merged"
            if not (merged / "model.safetensors").exists():
                res = self.run(["export", "--adapters", "bases/lora-sft", "--merge_lora", "true"], {}, None, timeout=600)
                if res.rc != 0 or not (merged / "model.safetensors").exists():
                    raise RuntimeError(f"swift export --merge_lora failed, rc {res.rc}:\n{res.log[-3000:]}")
            self.bases["MERGED"] = "bases/lora-sft-merged"

    # ---- one swift process
    def run(self, argv: list[str], env: dict[str, str], out: str | None, *, timeout: float = 600.0,
            hang_silence: float | None = None, log_name: str | None = None) -> Result:
        logs = self.work / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / ((log_name or (Path(out).name if out else argv[0])) + ".log")
        full_env = dict(os.environ, **env)
        full_env.pop("GRPO_DOCTOR_SWIFT_PYTHON", None)
        full_env["PATH"] = str(Path(self.py).parent) + os.pathsep + full_env.get("PATH", "")
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        start = time.monotonic()
        hung = False
        with open(log_path, "wb") as f:
            proc = subprocess.Popen([*self.swift, *argv], cwd=self.work, env=full_env, stdout=f,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            size, last_change = 0, time.monotonic()
            while True:
                try:
                    rc = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                cur = log_path.stat().st_size
                if cur != size:
                    size, last_change = cur, now
                silent = now - last_change
                if (hang_silence is not None and size > 0 and silent >= hang_silence) or now - start > timeout:
                    hung = True
                    cut = size             # the log as it stood when the run stopped making progress
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    rc = None
                    f.flush()
                    os.truncate(log_path, cut)
                    break
        wall = time.monotonic() - start
        text = log_path.read_bytes().decode("utf-8", "replace")
        res = Result(list(argv), dict(env), rc, wall, self.scrub(text), self.work / out if out else self.work, hung)
        self.log(f"  {argv[0]} {out or ''}: rc {rc if rc is not None else 'stopped (hang)'}, {wall:.1f} s")
        return res

    def fill(self, sc: Scenario, out: str) -> list[str]:
        vals = dict(self.bases, OUT=out)
        argv = [a.format(**vals) if "{" in a else a for a in sc.argv]
        return [*argv, "--output_dir", out]

    def run_scenario(self, sc: Scenario, *, extra: list[str] | None = None, suffix: str = "") -> Result:
        self.ensure(sc.needs)
        if sc.plugin:
            (self.work / "plugins").mkdir(exist_ok=True)
            src = PLUGINS[sc.plugin]
            for k, v in sc.plugin_fmt:
                src = src.replace("{" + k + "}", v)
            (self.work / "plugins" / sc.plugin).write_text(src, encoding="utf-8")
        out = f"runs/{sc.name}{suffix}"
        if (self.work / out).exists():
            shutil.rmtree(self.work / out)
        argv = self.fill(sc, out)
        if extra:
            argv = apply_flags(argv, extra)
        env = dict(sc.env)
        if suffix and "MASTER_PORT" in env:   # a re-run must not wait for the last run's port
            self._reruns += 1
            env["MASTER_PORT"] = str(int(env["MASTER_PORT"]) + 100 + self._reruns)
        return self.run(argv, env, out, timeout=sc.timeout, hang_silence=sc.hang_silence,
                        log_name=f"{sc.name}{suffix}")


def apply_flags(argv: list[str], flags: list[str]) -> list[str]:
    """Set `--flag value` pairs in an argv, replacing a flag's existing values."""
    out = list(argv)
    i = 0
    while i < len(flags):
        flag, val = flags[i], flags[i + 1]
        i += 2
        if flag in out:
            j = out.index(flag) + 1
            k = j
            while k < len(out) and not out[k].startswith("--"):
                k += 1
            out[j:k] = [val]
        else:
            out += [flag, val]
    return out


# --------------------------------------------------------------------------- fixtures


def run_files(out_dir: Path) -> dict[str, Path]:
    """logging.jsonl, args.json and completions.jsonl of the newest v*/ folder of a run."""
    found: dict[str, Path] = {}
    vdirs = sorted((p for p in out_dir.glob("v*-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for v in vdirs[-1:]:
        for name in ("logging.jsonl", "args.json", "completions.jsonl"):
            if (v / name).is_file():
                found[name] = v / name
    return found


def tree_listing(out_dir: Path, work: Path) -> str:
    if not out_dir.exists():
        return f"(no output directory {out_dir.relative_to(work)} was created)\n"
    rows = []
    for p in sorted([out_dir, *out_dir.rglob("*")]):
        kind = "d" if p.is_dir() else "f"
        size = p.stat().st_size if p.is_file() else 0
        rows.append(f"{kind} {size:>10} {p.relative_to(work)}")
    return "\n".join(rows) + "\n"


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def provenance_text(sc: Scenario, res: Result, vers: dict[str, str], comments: list[str]) -> str:
    rc = "null" if res.rc is None else str(res.rc)
    swift_v = vers.get("ms-swift")
    table = ", ".join(f"{k.replace('-', '_')} = {_toml_str(val)}" for k, val in vers.items())
    lines = [
        f"source = {_toml_str(f'{GENERATOR} scenario {sc.name} (real swift run, ms-swift {swift_v}, CPU)')}",
        f"description = {_toml_str(sc.description)}",
        "invented = false",
        f"generator = {_toml_str(GENERATOR)}",
        f"scenario = {_toml_str(sc.name)}",
        f"versions = {{ {table} }}",
        f"exit_code = {'-9' if res.hung else rc}",
        f"wall_s = {res.wall_s:.1f}",
        'paths_replaced = "work dir -> <work>, venv -> <venv>, base interpreter -> <python>, home -> <home>, /tmp/* -> <tmp>"',
    ]
    if res.hung:
        lines.append(f'stopped = "by the generator after {sc.hang_silence:.0f} s without output (SIGKILL); '
                     f'log.txt is cut where the output stopped"')
    for k in ("expect_category", "expect_no_error", "expect_rules", "forbid_rules"):
        if k in sc.expect:
            val = sc.expect[k]
            lines.append(f"{k} = " + ("true" if val is True else json.dumps(val)))
    if sc.note:
        lines += [f"# {ln}" for ln in sc.note.splitlines()]
    lines += comments
    return "\n".join(lines) + "\n"


def write_fixture(gen: Generator, sc: Scenario, res: Result, dest_root: Path) -> Path:
    dest = dest_root / sc.fixture
    old_comments: list[str] = []
    if (dest / "provenance.toml").exists():
        own = {f"# {ln}" for ln in sc.note.splitlines()}    # kept: what a person wrote there by hand
        old_comments = [ln for ln in (dest / "provenance.toml").read_text(encoding="utf-8").splitlines()
                        if ln.startswith("#") and ln not in own]
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / "command.txt").write_text(res.command_line + "\n", encoding="utf-8")
    (dest / "log.txt").write_text(res.log, encoding="utf-8")
    for name, path in run_files(res.out_dir).items():
        if name == "completions.jsonl" and not sc.copy_completions:
            continue
        (dest / name).write_text(gen.scrub(path.read_text(encoding="utf-8", errors="replace")), encoding="utf-8")
    (dest / "tree.txt").write_text(gen.scrub(tree_listing(res.out_dir, gen.work)), encoding="utf-8")
    (dest / "provenance.toml").write_text(provenance_text(sc, res, gen.versions, old_comments), encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", help="names (default: all); see --list")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument("--swift-python", help="Python with ms-swift (default: $GRPO_DOCTOR_SWIFT_PYTHON, this one, or swift's)")
    ap.add_argument("--work", help="work dir for the model, data and runs (default: a new temp dir, kept)")
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "logs"), help="where fixtures go")
    a = ap.parse_args(argv)
    if a.list:
        for s in SCENARIOS:
            print(f"{s.name:42} {'live ' if s.name in LIVE else '     '}{s.description}")
        return 0
    unknown = [n for n in a.scenarios if n not in BY_NAME]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    py = swift_python(a.swift_python)
    if not py or not swift_ok(py):
        print("ms-swift is not importable: pip install -e '.[swift]' (torch first, see README) or pass --swift-python",
              file=sys.stderr)
        return 2
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="swiftgen-"))
    gen = Generator(work, py)
    print(f"work dir {gen.work}; ms-swift {gen.versions.get('ms-swift')}")
    chosen = [BY_NAME[n] for n in a.scenarios] if a.scenarios else SCENARIOS
    for sc in chosen:
        res = gen.run_scenario(sc)
        dest = write_fixture(gen, sc, res, Path(a.out))
        print(f"{sc.name}: exit {res.rc if not res.hung else 'hang'} -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
