"""What a file in a run directory is, from its name and first bytes: log, metrics, args, command, gpu snapshot,
a report of grpo-doctor watch, or nothing to read (binary, images, weights)."""
from __future__ import annotations

import re
from pathlib import Path

from .. import lazyre
from .compressed import suffix_codec
from .safeio import open_regular

LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout", ".stderr", ".md"}
LOG_NAMES = {"nohup.out", "stdout", "stderr", "log", "console", "output"}
SKIP_DIRS = {"images", "runs", ".git", "__pycache__", "node_modules", ".ipynb_checkpoints", "global_step"}
SKIP_NAMES = {"README.md", "label.json", "tree.txt", "meta.txt", "requirements.txt", "LICENSE", "CHANGELOG.md"}
DOC_STEMS = ("readme", "changelog", "license", "licence", "contributing", "code_of_conduct", "authors", "copying")
# the kinds of the run's own loggers' files (read by sources/loggers.py, imported only when a run has them)
LOGGER_KINDS = ("tensorboard", "wandb-summary", "wandb-meta", "wandb-config", "trainer-state")
TRAINER_STATE = "trainer_state.json"   # transformers' TrainerState: its log_history is read as metric rows
GPU_MAX = 1024 * 1024  # an nvidia-smi snapshot is small (-q of 8 GPUs ~ 200 KB); a larger file is a log
_LOG_MARKS = ("Traceback", "[INFO:swift]", "[WARNING:swift]", "run sh:", "Train:", "[rank0]", "swift rlhf", "torchrun",
              "'loss':", '"loss":', "it/s]", "s/it]", "INFO", "Error:")


def classify(path: Path) -> str | None:
    name = path.name
    low = name.lower()
    packed = suffix_codec(name)
    if packed is not None:   # train.log.gz, logging.jsonl.gz: what the name without the suffix is (sources/compressed.py)
        inner = classify(path.with_name(packed[1]))
        return inner if inner in ("log", "metrics", "completions") else None
    if low == "logging.jsonl":
        return "metrics"
    if low == "completions.jsonl":
        return "completions"
    if low == "args.json":
        return "args"
    if low == TRAINER_STATE:
        return "trainer-state"
    if low.startswith("grpo-doctor-report") and low.endswith(".json"):
        return "report"
    if low in ("command.txt", "cmd.txt") or low.endswith(".sh"):
        return "command"
    if low.endswith(".csv") and ("gpu" in low or "smi" in low or "nvidia" in low or "apps" in low):
        return "log"  # sniffed below: a --query-gpu / --query-compute-apps CSV becomes kind "gpu"
    if low.startswith(DOC_STEMS):  # a folder's documentation (README.txt, readme.md, LICENSE): never its log
        return None
    if name in SKIP_NAMES or low.endswith((".safetensors", ".pt", ".pth", ".bin", ".png", ".jpg", ".json", ".jsonl",
                                           ".pkl", ".npy", ".gz", ".zip", ".tar", ".py", ".yaml", ".yml", ".toml")):
        return None
    if path.suffix.lower() in LOG_SUFFIXES or low in LOG_NAMES or low.startswith(("nohup", "log", "stdout", "stderr")):
        return "log"
    return None


def looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if head.startswith((b"\x89PNG", b"PK\x03\x04", b"\x1f\x8b", b"\x80\x02", b"\x80\x04", b"\x7fELF")):
        return True
    nul = head.count(b"\x00")
    if nul > len(head) // 4:
        # UTF-16 text is full of NULs too; treat it as binary rather than guess
        return True
    ctrl = sum(1 for b in head if b < 9 or 13 < b < 32 and b != 27)
    return ctrl > len(head) // 10


def gpu_kind(path: Path, head: bytes, size: int) -> bool:
    """A saved nvidia-smi output (table, -q, query CSV): sniffed from its first bytes, and nothing in the file that
    belongs to a console log (a log that printed nvidia-smi before training stays a log)."""
    if size > GPU_MAX:
        return False
    from .gpu import sniff
    decoded = head.decode("utf-8", errors="replace")
    sniffed = sniff(decoded)
    if sniffed is None:
        return False
    if sniffed == "table" and not _table_opens(decoded):
        return False  # an issue's words above a pasted table (its title, a template's questions): a paste to read
    try:
        with open_regular(path) as f:
            text = f.read(GPU_MAX).decode("utf-8", errors="replace")
    except OSError:
        return False
    return not any(w in text for w in _LOG_MARKS)


# what nvidia-smi prints above its table: the date line, a GPU it lost ("Unable to determine the device handle for
# GPU1: 0000:34:00.0: Unknown Error"), and a shell prompt or `watch` header that ran it
_ABOVE_TABLE = lazyre.compile(r"^\s*(?:\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4}|\S*[$#>]\s*(?:watch\s.*)?nvidia-smi\b.*|"
                              r"Every [\d.]+s: .*|Unable to determine the device handle for GPU\d+: .*)?\s*$")


def _table_opens(head: str) -> bool:
    """Only what nvidia-smi and the shell print comes before the table's first border or header."""
    for line in head.splitlines():
        if line.lstrip().startswith(("+--", "| NVIDIA-SMI")):
            return True
        if not _ABOVE_TABLE.match(line):
            return False
    return True


_ANSI = lazyre.compile(r"\x1b\[[0-9;]*m")
_DMON = lazyre.compile(r"\A\s*#\s*gpu\s+(pid\s+type|pwr|sm|fb|mem|gtemp)\b[^\n]*\n\s*#\s*Idx\b", re.IGNORECASE)
_TOPO = lazyre.compile(r"\A\s*GPU0[ \t]+(?:GPU1|NIC0|CPU Affinity)\b.*\n(?:.*\n){0,3}?GPU0[ \t]+X[ \t]")
_SMI_ERROR = lazyre.compile(r"\A\s*(Field \"[^\"\n]*\" is not a valid field to query|Invalid combination of input arguments)")


def nvidia_smi_other(head: bytes) -> str | None:
    """'dmon', 'pmon', 'topo' or 'error' when the first bytes are an nvidia-smi output that holds no GPU snapshot
    this tool reads (``nvidia-smi dmon``/``pmon``/``topo -m``, or nvidia-smi's own error); None otherwise."""
    text = _ANSI.sub("", head.decode("utf-8", errors="replace").replace("\r\n", "\n"))
    m = _DMON.match(text)
    if m:
        return "pmon" if m.group(1).lower().startswith("pid") else "dmon"
    if _TOPO.search(text):
        return "topo"
    if _SMI_ERROR.match(text):
        return "error"
    return None


# ------------------------------------------------------------------------ the run's own loggers (see sources/loggers.py)
WANDB_BINARY_NOTE = "wandb's binary run log (protobuf records): not read; files/output.log and wandb-summary.json are"


def wandb_kind(rel: Path) -> tuple[str | None, str]:
    """(kind, note) of a file inside a wandb/ folder (``rel``: its path from the run directory), or (None, '') for
    one that is not an input. kind "copy-log" is a console copy; "skipped" comes with its note."""
    parts = rel.parts
    try:
        i = parts.index("wandb")
    except ValueError:
        return None, ""
    inner = parts[i + 1:]
    if len(inner) < 2 or not inner[0].startswith(("run-", "offline-run-")):
        return None, ""
    name = inner[-1]
    if name.endswith(".wandb"):
        return "skipped", WANDB_BINARY_NOTE
    if len(inner) != 3 or inner[1] != "files":
        return None, ""
    return {"output.log": "copy-log", "wandb-summary.json": "wandb-summary", "wandb-metadata.json": "wandb-meta",
            "config.yaml": "wandb-config"}.get(name), ""


def logger_kind(rel: Path) -> tuple[str | None, str]:
    """(kind, note) of a file of the run's loggers (``rel``: from the run directory), (None, '') for any other."""
    if is_event_file(rel.name):
        return "tensorboard", ""
    if is_swanlab_console(rel):
        return "copy-log", ""
    return wandb_kind(rel) if "wandb" in rel.parts else (None, "")


def is_swanlab_console(rel: Path) -> bool:
    return "swanlog" in rel.parts and rel.parent.name == "console" and rel.suffix == ".log"


def is_event_file(name: str) -> bool:
    return name.startswith("events.out.tfevents.")
