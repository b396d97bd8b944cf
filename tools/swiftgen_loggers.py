"""Real ms-swift GRPO runs that log to TensorBoard and wandb (offline), stored as fixtures/loggers/<case>/.

Each case is a `swift rlhf --rlhf_type grpo` run on CPU (tools/swiftgen.py's tiny model, data and SFT base) with
`--report_to tensorboard wandb`, WANDB_MODE=offline and WANDB_DIR=<the run's output dir>, so the run directory holds
what a user's does: the console log, logging.jsonl, args.json, `v*/runs/events.out.tfevents.*` and
`wandb/offline-run-*/` (only files/output.log, wandb-summary.json, wandb-metadata.json and config.yaml are
copied: the binary run-*.wandb log is not, and neither are wandb's own debug logs). Machine paths, the host
and user names become placeholders, as in tools/swiftgen.py.

    python tools/swiftgen_loggers.py [--work DIR] [CASE ...]      # needs ms-swift, tensorboard and wandb

Cases: zero-reward (random-init model: every reward 0, GD610), reward-raises (a reward function that raises:
GD606, the traceback is in the console and in wandb's output.log), healthy (LoRA on the SFT base; not stored).
"""
from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from swiftgen import MT, NC, PLUGINS, Generator, swift_ok, swift_python, versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMON = ["rlhf", "--rlhf_type", "grpo", *MT, *NC, "--dataset", "data/train.jsonl", "--tuner_type", "lora",
          "--torch_dtype", "float32", "--max_completion_length", "16", "--num_generations", "4",
          "--per_device_train_batch_size", "4", "--logging_steps", "1", "--save_steps", "100",
          "--report_to", "tensorboard", "wandb"]
CASES = {
    "zero-reward": ([*COMMON, "--model", "{TINY}", "--reward_funcs", "accuracy", "format", "--max_steps", "6"], (),
                    "random-init model: every completion scores 0 (reward and reward_std 0 at every step)"),
    "reward-raises": ([*COMMON, "--model", "{TINY}", "--reward_funcs", "strict_length", "format",
                       "--external_plugins", "plugins/raising_reward.py", "--max_steps", "6"], (),
                      "a user reward function raises ValueError at the first step"),
    # a healthy run needs the SFT base (tools/swiftgen.py trains it: ~125 CPU steps); the healthy HTML test uses
    # fixtures/logs/real-grpo-lora-healthy instead
    "healthy": ([*COMMON, "--model", "{BASE}", "--reward_funcs", "accuracy", "format", "--learning_rate", "1e-4",
                 "--max_steps", "6"], ("base",), "healthy LoRA GRPO on the SFT base, 6 steps"),
}
WANDB_FILES = ("output.log", "wandb-summary.json", "wandb-metadata.json", "config.yaml")


def scrubber(gen: Generator):
    host, user = socket.gethostname(), getpass.getuser()

    def scrub(text: str) -> str:
        text = gen.scrub(text)
        if host:
            text = text.replace(host, "<host>")
        if user and len(user) > 2:
            text = re.sub(rf"\b{re.escape(user)}\b", "<user>", text)
        return text
    return scrub


def run_case(gen: Generator, name: str, dest_root: Path) -> Path:
    argv, needs, what = CASES[name]
    gen.ensure(needs)
    if "--external_plugins" in argv:
        (gen.work / "plugins").mkdir(exist_ok=True)
        (gen.work / "plugins" / "raising_reward.py").write_text(PLUGINS["raising_reward.py"], encoding="utf-8")
    out = f"runs/loggers-{name}"
    if (gen.work / out).exists():
        shutil.rmtree(gen.work / out)
    (gen.work / out).mkdir(parents=True)
    filled = [a.format(**gen.bases) if "{" in a else a for a in argv] + ["--output_dir", out]
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(gen.work / out), "WANDB_SILENT": "true"}
    res = gen.run(filled, env, out, log_name=f"loggers-{name}")
    scrub = scrubber(gen)
    dest = dest_root / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    run_dir = gen.work / out
    (dest / "log.txt").write_text(scrub(res.log), encoding="utf-8")
    (dest / "command.txt").write_text("WANDB_MODE=offline swift " + " ".join(filled) + "\n", encoding="utf-8")
    copied = []
    for v in sorted(run_dir.glob("v*-*")):
        for fname in ("logging.jsonl", "args.json"):
            if (v / fname).is_file():
                (dest / fname).write_text(scrub((v / fname).read_text(encoding="utf-8")), encoding="utf-8")
                copied.append(fname)
        for ev in sorted(v.glob("runs/**/events.out.tfevents.*")):
            target = dest / "runs" / re.sub(r"tfevents\.(\d+)\..*", r"tfevents.\1.host", ev.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ev, target)
            copied.append(f"runs/{target.name} ({ev.stat().st_size} bytes)")
    for wrun in sorted((run_dir / "wandb").glob("*run-*")):
        if not wrun.is_dir() or wrun.is_symlink():
            continue
        for fname in WANDB_FILES:
            src = wrun / "files" / fname
            if src.is_file():
                target = dest / "wandb" / wrun.name / "files" / fname
                target.parent.mkdir(parents=True, exist_ok=True)
                text = scrub(src.read_text(encoding="utf-8", errors="replace"))
                if fname == "wandb-metadata.json":
                    text = json.dumps(_trim_meta(json.loads(text)), indent=2) + "\n"
                target.write_text(text, encoding="utf-8")
                copied.append(f"wandb/{wrun.name}/files/{fname}")
    vers = versions(gen.py)
    try:
        import wandb  # noqa: PLC0415
        vers["wandb"] = wandb.__version__
    except ImportError:
        pass
    prov = [f'source = "tools/swiftgen_loggers.py case {name} (real swift run, ms-swift {vers.get("ms-swift")}, CPU)"',
            f"description = {json.dumps(what)}", "invented = false",
            "versions = { " + ", ".join(f'{k.replace("-", "_")} = {json.dumps(v)}' for k, v in vers.items()) + " }",
            f"exit_code = {res.rc}", f"wall_s = {res.wall_s:.1f}",
            'paths_replaced = "work dir -> <work>, venv -> <venv>, home -> <home>, /tmp/* -> <tmp>, host -> <host>, '
            'user -> <user>"',
            "# copied: " + ", ".join(copied),
            "# not copied: the checkpoint weights, wandb's binary run-*.wandb and its logs/debug*.log"]
    (dest / "provenance.toml").write_text("\n".join(prov) + "\n", encoding="utf-8")
    return dest


def _trim_meta(meta: dict) -> dict:
    """wandb-metadata.json without what identifies the machine beyond what the tests read."""
    keep = ("os", "python", "program", "codePath", "args", "host", "executable", "cpu_count", "gpu", "gpu_count",
            "gpu_nvidia", "startedAt", "heartbeatAt")
    return {k: meta[k] for k in keep if k in meta}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help=f"default: zero-reward reward-raises; any of {', '.join(CASES)}")
    ap.add_argument("--work", help="work dir (default: a new temp dir, kept)")
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "loggers"))
    a = ap.parse_args(argv)
    py = swift_python(None)
    if not py or not swift_ok(py):
        print("ms-swift is not importable", file=sys.stderr)
        return 2
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="swiftgen-loggers-"))
    gen = Generator(work, py)
    os.environ.setdefault("WANDB_MODE", "offline")
    for name in a.cases or ["zero-reward", "reward-raises"]:
        print(name, "->", run_case(gen, name, Path(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
