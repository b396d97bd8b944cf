"""Follow a run directory while it grows: logging.jsonl rows as they are appended, args.json once, new
checkpoint-N folders (and when they are complete). Reads only sizes and text files; never unpickles.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from .. import lazyre
from ..sources import metrics as metrics_src
from ..sources.logtext import LineSplitter, decode
from ..sources.safeio import link_out, open_regular, walk

MAX_DEPTH = 3  # output_dir / v0-2026... / checkpoint-N
TAIL_READ = 1 << 20  # logging.jsonl bytes read at a time
_CKPT = lazyre.compile(r"^checkpoint-(\d+)$")


@dataclass
class Checkpoint:
    """A checkpoint folder watch saw appear in the run's output folder."""
    path: str
    step: int
    size: int = -1
    files: int = -1
    stable: int = 0        # scans in a row with the same size and file count
    checked: bool = False


def dir_size(path: str) -> tuple[int, int]:
    total = n = 0
    for dirpath, _dirs, files in walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
                n += 1
            except OSError:
                pass
    return total, n


OUT_OF_RUN = "a symlink out of the run directory, not followed"
FAST_AFTER = 64   # logging.jsonl records read with json before the faster decoder (as engine/columns.py's numpy)


@dataclass
class JsonlTail:
    """A logging.jsonl followed from the offset read so far."""
    path: str
    offset: int = 0
    splitter: LineSplitter = field(default_factory=lambda: LineSplitter(16 * 1024 * 1024))
    root: str | None = None  # the run folder: a link out of it is never read, even one made after the scan
    rows: int = 0            # records read so far

    def read(self) -> Iterator[tuple[int, dict]]:
        """The rows appended since the last call, read a piece at a time: a 100 MB logging.jsonl that appeared at once
        was read whole and took 656 MiB beside the training. Memory holds one piece and its rows."""
        try:
            f = open_regular(self.path, root=self.root)  # never blocks on a FIFO; reads up to the size now
        except OSError:
            return
        with f:
            try:
                f.seek(self.offset)
            except OSError:
                return
            while True:
                try:
                    data = f.read(TAIL_READ)
                except OSError:
                    return
                if not data:
                    return
                self.offset += len(data)
                for lineno, raw in self.splitter.feed(data):
                    # json for the first rows: importing msgspec or orjson (~10 ms) costs more than a short run's
                    # few rows save with it (the values are the same: parse_jsonl)
                    values = metrics_src.parse_jsonl(decode(raw), self.rows >= FAST_AFTER)
                    if values is not None:
                        self.rows += 1
                        yield lineno, values


def _maybe_link(e: os.DirEntry) -> bool:
    try:
        return e.is_symlink()
    except OSError:
        return True   # not known: realpath decides


class RunDirWatcher:
    def __init__(self, root: str, since: float):
        self.root = root
        self.since = since - 2.0  # files of this run are newer than this (mtime)
        self.jsonl: JsonlTail | None = None
        self.args_json: str | None = None
        self.checkpoints: dict[str, Checkpoint] = {}
        self.skipped: dict[str, str] = {}  # path -> why it is not read (a link out of the run folder), said once
        self.grew: Checkpoint | None = None  # set by settle()

    def _walk(self):
        stack = [(self.root, 0)]
        while stack:
            d, depth = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if _CKPT.match(e.name):
                            yield "ckpt", e
                        elif depth + 1 < MAX_DEPTH and not e.name.startswith((".", "runs", "images")):
                            stack.append((e.path, depth + 1))
                    elif e.name in ("logging.jsonl", "args.json"):
                        yield e.name, e
                except OSError:
                    continue

    def scan(self) -> tuple[str | None, str | None, list[Checkpoint]]:
        """(new logging.jsonl path, new args.json path, checkpoints first seen now)."""
        new_jsonl = new_args = None
        new_ckpts = []
        best_jsonl: tuple[float, str] | None = None
        for kind, e in self._walk():
            try:
                mtime = e.stat().st_mtime
            except OSError:
                continue
            # as analyze: a link out of the run folder is skipped, named, not followed. The walk enters real folders
            # only, so an entry that is no symlink itself is inside: no realpath for it (every old run's files of a
            # reused output folder, every 2 s)
            if kind != "ckpt" and _maybe_link(e) and link_out(e.path, self.root):
                self.skipped.setdefault(e.path, OUT_OF_RUN)
                continue
            if kind == "ckpt":
                if e.path not in self.checkpoints and mtime >= self.since:
                    c = Checkpoint(e.path, int(_CKPT.match(e.name).group(1)))
                    self.checkpoints[e.path] = c
                    new_ckpts.append(c)
            elif kind == "logging.jsonl" and mtime >= self.since:
                if best_jsonl is None or mtime > best_jsonl[0]:
                    best_jsonl = (mtime, e.path)
            elif kind == "args.json" and self.args_json is None and mtime >= self.since:
                self.args_json = new_args = e.path
        if best_jsonl and (self.jsonl is None or self.jsonl.path != best_jsonl[1]) and self.jsonl is None:
            self.jsonl = JsonlTail(best_jsonl[1], root=self.root)
            new_jsonl = best_jsonl[1]
        return new_jsonl, new_args, sorted(new_ckpts, key=lambda c: c.step)

    def settle(self) -> list[Checkpoint]:
        """Checkpoints whose size and file count stopped changing (two scans in a row): ready to check. Sets
        ``grew``: a checkpoint being written grew since the last scan (a long save is progress, not a hang)."""
        ready = []
        self.grew = None
        for c in self.checkpoints.values():
            if c.checked:
                continue
            size, n = dir_size(c.path)
            if (size, n) == (c.size, c.files) and n > 0:
                c.stable += 1
            else:
                if c.files >= 0 and (size, n) != (c.size, c.files):
                    self.grew = c
                c.stable = 0
            c.size, c.files = size, n
            if c.stable >= 2:
                c.checked = True
                ready.append(c)
        return ready

    def settle_all(self) -> list[Checkpoint]:
        """At the end of the run: every checkpoint not checked yet is as complete as it will get."""
        ready = []
        for c in self.checkpoints.values():
            if not c.checked:
                c.size, c.files = dir_size(c.path)
                c.checked = True
                ready.append(c)
        return ready

    def last_checkpoint_size(self) -> int:
        done = [c for c in self.checkpoints.values() if c.checked]
        if not done:
            return 0
        return max(done, key=lambda c: c.step).size


def read_args_json(path: str, root: str | None = None, skipped: dict[str, str] | None = None) -> dict | None:
    """The run's args.json as a dict, or None; one too costly to decode (30 MiB of `{}`: 818 MiB peak beside the
    training) is not read, and why goes to ``skipped`` (said once by the analyser)."""
    from ..sources.jsoncost import too_costly
    try:
        with open_regular(path, root=root) as f:
            raw = f.read(32 * 1024 * 1024)
        costly = too_costly(raw)
        if costly is not None:
            if skipped is not None:
                skipped[path] = costly
            return None
        obj = json.loads(decode(raw))
    except (OSError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def output_dir_of(argv: list[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--output_dir" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--output_dir="):
            return a.split("=", 1)[1]
    return None


def node_identity(env: dict[str, str] | os._Environ) -> tuple[int | None, str]:
    host = _hostname()
    for k in ("NODE_RANK", "SLURM_NODEID", "GROUP_RANK", "RANK"):
        v = env.get(k)
        if v is not None and v.strip().isdigit():
            return int(v), host
    return None, host


def _hostname() -> str:
    """gethostname(2), which on POSIX is uname(2)'s nodename: without importing socket (~3 ms of every start)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return uname().nodename
    import socket
    return socket.gethostname()


def console_name(node_rank: int | None, kind: str) -> str:
    suffix = f".node{node_rank}" if node_rank is not None else ""
    return {"console": f"grpo-doctor-console{suffix}.log", "report": f"grpo-doctor-report{suffix}.json",
            "hang": f"grpo-doctor-hang{suffix}"}[kind]


def file_stamp(path: str) -> tuple[int, int, int] | None:
    """(inode, mtime, size) of a file, None when there is none: a report written by tmp + rename has a new inode, so
    an unchanged stamp means it was not written."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def default_run_dir(argv: list[str]) -> str:
    """Where watch writes when --run-dir is not given: the command's --output_dir, else ./output (said at launch)."""
    return output_dir_of(argv) or "output"


# an archive number has at most 9 digits: a planted NAME.<231 digits> would make the next name too long for the file
# system (and refuse the launch); such names are left alone
_ARCHIVE = lazyre.compile(r"\.(\d{1,9})$")


def archive_previous(paths: list[str], keep: int = 0) -> list[str]:
    """Move each existing file of ``paths`` (a previous launch's console log and report) to NAME.N, N the next free
    number for that name, so that every launch's files stay; with ``keep`` > 0 only the newest ``keep`` archives of
    each name are kept (the user asked for rotation). Returns the archived paths."""
    moved = []
    for p in paths:
        if not os.path.lexists(p):
            continue
        d, base = os.path.split(p)
        try:
            nums = sorted(int(m.group(1)) for n in os.listdir(d or ".") if n.startswith(base + ".")
                          for m in [_ARCHIVE.search(n[len(base):])] if m and n[len(base):] == m.group(0))
        except OSError:
            nums = []
        n = (nums[-1] if nums else 0) + 1
        while os.path.lexists(f"{p}.{n}"):  # never overwrite (a NAME.N the listing did not show, e.g. a race)
            n += 1
        os.replace(p, f"{p}.{n}")
        moved.append(f"{p}.{n}")
        if keep > 0:
            for old in (nums + [n])[:-keep]:
                try:
                    os.unlink(f"{p}.{old}")
                except OSError:
                    pass
    return moved
