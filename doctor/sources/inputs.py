"""Find the inputs in what the user pointed at, and stream each into a Session.

A run directory as ms-swift writes it (any nesting), console logs saved by hand (``*.log``,
``nohup.out``, ``*.txt``, one per node or rank), a single file, or ``-`` for standard input.
Nothing is executed or unpickled: ``*.pt``/``*.bin``/``*.pth`` are never opened here.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..model import InputInfo
from . import metrics as metrics_src
from .logtext import LineReader, decode, physical_lines
from ..signals import Completions, GpuSnapshot, Metrics, Where

LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout", ".stderr", ".md"}
LOG_NAMES = {"nohup.out", "stdout", "stderr", "log", "console", "output"}
SKIP_DIRS = {"images", "runs", ".git", "__pycache__", "node_modules", ".ipynb_checkpoints", "global_step"}
SKIP_NAMES = {"README.md", "label.json", "tree.txt", "meta.txt", "requirements.txt", "LICENSE", "CHANGELOG.md"}
MAX_SMALL = 32 * 1024 * 1024  # args.json / command.txt larger than this are not configuration files


class InputError(Exception):
    """One line for the user: the file and what to do. Exit code 2."""


@dataclass(frozen=True)
class Input:
    path: Path | None   # None: standard input
    display: str
    kind: str           # log | metrics | completions | args | command

    def info(self) -> InputInfo:
        return InputInfo(self.display, self.kind)


_ORDER = {"args": 0, "command": 1, "log": 2, "metrics": 3, "completions": 4, "gpu": 5, "report": 6}
GPU_MAX = 1024 * 1024  # an nvidia-smi snapshot is small (-q of 8 GPUs ~ 200 KB); a larger file is a log
_LOG_MARKS = ("Traceback", "[INFO:swift]", "[WARNING:swift]", "run sh:", "Train:", "[rank0]", "swift rlhf", "torchrun",
              "'loss':", '"loss":', "it/s]", "s/it]", "INFO", "Error:")


def classify(path: Path) -> str | None:
    name = path.name
    low = name.lower()
    if low == "logging.jsonl":
        return "metrics"
    if low == "completions.jsonl":
        return "completions"
    if low == "args.json":
        return "args"
    if low.startswith("grpo-doctor-report") and low.endswith(".json"):
        return "report"
    if low in ("command.txt", "cmd.txt") or low.endswith(".sh"):
        return "command"
    if low.endswith(".csv") and ("gpu" in low or "smi" in low or "nvidia" in low or "apps" in low):
        return "log"  # sniffed below: a --query-gpu / --query-compute-apps CSV becomes kind "gpu"
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
    from .gpu import sniff  # noqa: PLC0415
    if sniff(head.decode("utf-8", errors="replace")) in (None, "nvml-json"):
        return False
    try:
        with open(path, "rb") as f:
            text = f.read(GPU_MAX).decode("utf-8", errors="replace")
    except OSError:
        return False
    return not any(w in text for w in _LOG_MARKS)


def _check_readable(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            f.read(1)
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or run as its owner") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror}); check the path") from None


def _explicit_file(path: Path, display: str) -> Input:
    _check_readable(path)
    kind = classify(path) or "log"
    if path.suffix.lower() == ".json" and kind == "log":
        from .reports import is_report
        try:
            with open(path, "rb") as f:
                obj = json.loads(decode(f.read(MAX_SMALL)))
            if is_report(obj):
                kind = "report"
        except (OSError, ValueError):
            pass
    st = path.stat()
    if st.st_size == 0 and stat.S_ISREG(st.st_mode):
        raise InputError(f"{display}: the file is empty; pass the console log of the run (or - and paste it)")
    with open(path, "rb") as f:
        head = f.read(8192)
    if looks_binary(head):
        raise InputError(f"{display}: looks like a binary file, not a log; pass the console log, logging.jsonl "
                         "or the run directory")
    if kind == "log" and gpu_kind(path, head, st.st_size):
        kind = "gpu"
    return Input(path, display, kind)


def discover(paths: list[str]) -> list[Input]:
    found: list[Input] = []
    stdin_used = False
    for p in paths:
        if p == "-":
            if stdin_used:
                raise InputError("-: standard input can be given only once")
            stdin_used = True
            found.append(Input(None, "<stdin>", "log"))
            continue
        path = Path(p)
        if not path.exists() and not path.is_symlink():
            raise InputError(f"{p}: no such file or directory; pass a run directory, a log file, or - for stdin")
        if path.is_dir():
            found.extend(_walk(path, p))
        else:
            found.append(_explicit_file(path, p))
    found.sort(key=lambda i: _ORDER.get(i.kind, 9))
    return found


def _walk(root: Path, display_root: str) -> list[Input]:
    if not os.access(root, os.R_OK | os.X_OK):
        raise InputError(f"{display_root}: permission denied; make the directory readable")
    out: list[Input] = []
    args_files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=None):
        d = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if n not in SKIP_DIRS and not n.startswith("checkpoint-")
                             and not n.startswith("global_step") and not n.startswith("."))
        for name in sorted(filenames):
            fp = d / name
            kind = classify(fp)
            if kind is None:
                continue
            try:
                st = fp.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            if not os.access(fp, os.R_OK):
                continue
            if kind in ("args", "command", "report") and st.st_size > MAX_SMALL:
                continue
            if kind == "log":
                try:
                    with open(fp, "rb") as f:
                        head = f.read(8192)
                except OSError:
                    continue
                if looks_binary(head):
                    continue
                if gpu_kind(fp, head, st.st_size):
                    kind = "gpu"
            if kind == "args":
                args_files.append(fp)
                continue
            out.append(Input(fp, _display(fp, root, display_root), kind))
    if args_files:
        # the run-level args.json wins over copies deeper down; among equals, the newest run (last sorted)
        best = sorted(args_files, key=lambda p: (len(p.relative_to(root).parts), str(p)))
        shallow = [p for p in best if len(p.relative_to(root).parts) == len(best[0].relative_to(root).parts)]
        chosen = shallow[-1]
        out.append(Input(chosen, _display(chosen, root, display_root), "args"))
    if not out and not run_checkpoints([display_root], root):
        raise InputError(f"{display_root}: no log, logging.jsonl, completions.jsonl or args.json found here; "
                         "pass the run's output directory or a saved console log")
    return out


def run_checkpoints(paths: list[str], root: Path | None = None) -> list[tuple[Path, str]]:
    """checkpoint-N/ folders under the run directories given (and any given directory that is itself a
    checkpoint), with their display paths. Their facts feed the checkpoint rules; their files are not logs."""
    from .checkpoint import find_checkpoints, is_checkpoint_dir
    out: list[tuple[Path, str]] = []
    for p in paths:
        path = root if root is not None else Path(p)
        if p == "-" or not path.is_dir():
            continue
        if is_checkpoint_dir(path) and path.name.startswith("checkpoint-"):
            out.append((path, p))
            continue
        for c in find_checkpoints(path):
            out.append((c, str(Path(p) / c.relative_to(path))))
    return out


def _display(fp: Path, root: Path, display_root: str) -> str:
    rel = fp.relative_to(root)
    return str(Path(display_root) / rel)


def open_input(inp: Input) -> BinaryIO:
    if inp.path is None:
        return sys.stdin.buffer
    try:
        return open(inp.path, "rb")
    except PermissionError:
        raise InputError(f"{inp.display}: permission denied; make the file readable") from None
    except OSError as e:
        raise InputError(f"{inp.display}: cannot read ({e.strerror})") from None


def read_small(inp: Input) -> str:
    with open_input(inp) as f:
        data = f.read(MAX_SMALL + 1)
    return decode(data[:MAX_SMALL])


def feed_input(inp: Input, session, counter: list[int], scan_options: dict | None = None) -> None:
    """Stream one input into the session. A log file goes through the chunk scanner (``scan_options``:
    its keyword arguments, or ``{"lines": True}`` for the line-by-line path); standard input line by line."""
    if inp.kind == "args":
        text = read_small(inp)
        try:
            obj = json.loads(text)
        except ValueError:
            return  # a broken args.json inside a run dir: the logs still count
        if isinstance(obj, dict):
            session.run.add_args_json(obj)
        return
    if inp.kind == "command":
        session.run.add_command(read_small(inp), "command")
        return
    if inp.kind == "report":
        return  # merged by doctor.analyze
    if inp.kind == "gpu":
        from .gpu import SnapshotError, parse_text  # noqa: PLC0415
        try:
            samples = parse_text(read_small(inp), inp.display)
        except SnapshotError:
            return  # sniffed as nvidia-smi but unreadable: nothing to say about GPUs
        counter[0] += 1
        session.emit(GpuSnapshot(inp.display, samples, counter[0]))
        return
    stream = open_input(inp)
    try:
        if inp.kind == "log":
            from . import scan  # the chunk scanner and its matchers: only when a log is read

            opts = dict(scan_options or {})
            if inp.path is not None and not opts.pop("lines", False) and scan.usable(session, stream):
                scan.scan_file(session, inp.display, stream, counter, **opts)
            else:
                session.begin_log(inp.display)
                for line in LineReader(inp.display, counter).lines(stream):
                    session.feed_line(line)
        elif inp.kind == "metrics":
            for lineno, data in physical_lines(stream):
                values = metrics_src.parse_jsonl(decode(data))
                if values is None:
                    continue
                counter[0] += 1
                session.emit(Metrics(values, Where(inp.display, lineno), counter[0], "jsonl"))
        elif inp.kind == "completions":
            for lineno, data in physical_lines(stream, max_line=16 * 1024 * 1024):
                try:
                    row = json.loads(decode(data))
                except ValueError:
                    continue
                if isinstance(row, dict):
                    counter[0] += 1
                    session.emit(Completions(row, Where(inp.display, lineno)))
    except PermissionError:
        raise InputError(f"{inp.display}: permission denied while reading") from None
    except OSError as e:
        raise InputError(f"{inp.display}: read failed ({e.strerror})") from None
    finally:
        if inp.path is not None:
            stream.close()
