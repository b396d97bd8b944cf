"""What `watch` does to or about the live process tree: dump stacks (py-spy), record process states and
a GPU snapshot, name where the run stopped and which rank is the outlier, stop the process group.

Actions are separate from findings: nothing here decides that a run hangs (doctor/live/watchdogs.py
does) and no rule calls anything here.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..checks._units import gib
from ..checks.hang._progress import FRAME_CLASSES, PYSPY_FRAME
from ..checks.hang._progress import PYSPY_THREAD as _THREAD
from ..signals import Gpu

if TYPE_CHECKING:
    import psutil

PYSPY_TIMEOUT = 30.0
# doctor/checks/hang/_progress.py frame classes -> the names watch reports
WHERE = {
    "vllm-generate": ("rollout-generation", "in rollout generation (vLLM generate)"),
    "weight-sync": ("weight-sync", "syncing weights to vLLM"),
    "reward": ("reward-function", "inside a reward function"),
    "collective": ("nccl-collective", "waiting in an NCCL / distributed collective (all_reduce, broadcast, barrier)"),
    "dataloader": ("data-loading", "waiting for data loading (the dataloader)"),
    "checkpoint": ("checkpoint-save", "saving a checkpoint"),
}


@dataclass
class ProcInfo:
    """A process of the watched run's tree, as /proc shows it."""
    pid: int
    ppid: int
    name: str
    cmd: str
    status: str
    rank: int | None
    cpu_s: float
    rss: int
    threads: int
    python: bool


@dataclass
class Stack:
    """The Python stacks of one process of the run, as py-spy dumped them."""
    pid: int
    rank: int | None
    text: str                      # py-spy dump output
    threads: list[tuple[str, str, list[tuple[str, str, int]]]] = field(default_factory=list)  # name, state, frames
    where: str | None = None       # a key of WHERE or None
    top: str = ""                  # innermost frames of the main (or busiest) thread

    @property
    def label(self) -> str:
        return f"rank {self.rank} pid {self.pid}" if self.rank is not None else f"pid {self.pid}"

    @property
    def launcher(self) -> bool:
        """A launcher (swift CLI, torchrun) waiting for its children: not where a run stops."""
        return self.where is None and ("subprocess.py" in self.top.split(" <- ")[0] or "elastic" in self.top
                                       or "torchrun" in self.top)


def _rank_of(p: psutil.Process) -> int | None:
    import psutil
    try:
        env = p.environ()
    except (psutil.Error, OSError):
        return None
    for k in ("RANK", "LOCAL_RANK"):
        v = env.get(k)
        if v is not None and v.lstrip("-").isdigit():
            return int(v)
    return None


def _is_python(p: psutil.Process) -> bool:
    import psutil
    try:
        exe = os.path.basename(p.exe() or "")
    except (psutil.Error, OSError):
        exe = ""
    try:
        name = p.name()
    except (psutil.Error, OSError):
        name = ""
    return exe.startswith("python") or name.startswith("python") or name.startswith("pt_main_thread")


def process_tree(root_pid: int) -> list[ProcInfo]:
    import psutil  # here: only a hang report reads the process tree, and watch pays every import at its start
    try:
        root = psutil.Process(root_pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for p in procs:
        try:
            with p.oneshot():
                ct = p.cpu_times()
                cmd = " ".join(p.cmdline())[:300]
                out.append(ProcInfo(p.pid, p.ppid(), p.name(), cmd, p.status(), _rank_of(p), ct.user + ct.system,
                                    p.memory_info().rss, p.num_threads(), _is_python(p)))
        except (psutil.Error, OSError):
            continue
    return out


def pyspy_path() -> str | None:
    import shutil  # with bz2 and lzma, ~6 M instructions: a hang's stacks only, not every start of watch
    return shutil.which("py-spy")


def parse_dump(text: str, pid: int | None = None) -> list[tuple[str, str, list[tuple[str, str, int]]]]:
    threads: list[tuple[str, str, list[tuple[str, str, int]]]] = []
    for line in text.splitlines():
        t = _THREAD.match(line)
        if t:
            name = t.group("name") or ("MainThread" if pid is not None and t.group("tid") == str(pid) else
                                       f"thread {t.group('tid')}")
            threads.append((name, t.group("state"), []))
            continue
        f = PYSPY_FRAME.match(line)
        if f and threads:
            threads[-1][2].append((f.group("func"), f.group("file"), int(f.group("line"))))
    return threads


def classify(frames: list[tuple[str, str, int]]) -> str | None:
    """Where a stack (innermost frame first) is: the innermost frame that belongs to a known class wins;
    idle waits (queues, locks) count only when nothing more specific is on the stack."""
    idle = None
    for func, path, _ in frames:
        hay = f"{path} {func} ("
        for name, keys in FRAME_CLASSES:
            if any(k in hay for k in keys):
                if name == "queue-wait":
                    idle = idle or name
                    break
                return name
    return idle


def _focus(threads):
    main = [t for t in threads if t[0] == "MainThread"]
    busy = [t for t in threads if t[1] != "idle"]
    return (main or busy or threads or [None])[0]


def dump_stacks(procs: list[ProcInfo], timeout: float = PYSPY_TIMEOUT) -> tuple[list[Stack], list[str]]:
    """py-spy dump of every Python process. Returns the stacks and what could not be captured."""
    missing: list[str] = []
    exe = pyspy_path()
    pys = [p for p in procs if p.python]
    if exe is None:
        return [], ["Python stacks: py-spy is not installed (pip install py-spy, or pip install 'grpo-doctor[live]')"]
    stacks = []
    for p in pys:
        try:
            r = subprocess.run([exe, "dump", "--pid", str(p.pid)], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            missing.append(f"py-spy dump of pid {p.pid} timed out after {timeout:.0f} s")
            continue
        except OSError as e:
            missing.append(f"py-spy could not run ({e.strerror})")
            break
        text = r.stdout.decode("utf-8", "replace")
        if r.returncode != 0 or "Thread" not in text:
            err = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
            missing.append(f"py-spy dump of pid {p.pid} failed: {err[:200]}"
                           + (" (ptrace is not permitted: run as root, with CAP_SYS_PTRACE, or set "
                              "kernel.yama.ptrace_scope=0)" if "ermission" in err or "ptrace" in err.lower() else ""))
            continue
        # name the main thread where py-spy could not (`Thread 123 (idle)`), so that readers of the stacks file
        # (GD320/GD321 in a later `analyze`) see it as py-spy prints it elsewhere
        text = re.sub(rf"(?m)^(\s*Thread {p.pid} \([^)]*\))\s*$", r'\1: "MainThread"', text)
        threads = parse_dump(text, p.pid)
        focus = _focus(threads)
        where = None
        top = ""
        if focus is not None:
            frames = focus[2]
            where = classify(frames)
            top = " <- ".join(f"{fn} ({os.path.basename(fp)}:{ln})" for fn, fp, ln in frames[:3])
        stacks.append(Stack(p.pid, p.rank, text, threads, where, top))
    # the interesting processes first (a reader of the stacks file, GD320/GD321 included, looks at the first ones)
    stacks.sort(key=lambda s: (s.launcher, s.where is None, s.rank if s.rank is not None else 1 << 20))
    return stacks, missing


def outlier(stacks: list[Stack]) -> str | None:
    """The rank whose stack differs from all the others' (one rank in the reward function while the rest
    wait in a collective), if there is exactly one such rank."""
    ranked = {s.rank: s for s in stacks if s.rank is not None}
    if len(ranked) < 2:
        return None
    counts = Counter(s.where for s in ranked.values())
    if len(counts) < 2:
        return None
    (common, n), = counts.most_common(1)
    odd = [s for s in ranked.values() if s.where != common]
    if len(odd) != 1 or n < len(ranked) - 1:
        return None
    o = odd[0]
    what = WHERE.get(o.where or "", (None, "somewhere else"))[1]
    others = ", ".join(str(r) for r in sorted(ranked) if r != o.rank)
    common_text = WHERE.get(common or "", (None, "elsewhere"))[1]
    return f"Rank {o.rank} is the outlier: it is {what} ({o.top}) while ranks {others} are {common_text}"


def where_stopped(stacks: list[Stack]) -> tuple[str | None, str]:
    """(key, text) of where the run stopped according to the stacks: the outlier's place if one rank differs,
    else the most common specific place."""
    if not stacks:
        return None, ""
    ranked = [s for s in stacks if s.rank is not None] or stacks
    out = outlier(stacks)
    if out:
        odd = Counter(s.where for s in ranked).most_common()[-1][0]
        key = odd
    else:
        specific = [s.where for s in ranked if s.where and s.where != "queue-wait"]
        if not specific:
            specific = [s.where for s in stacks if s.where and s.where != "queue-wait"]
        if not specific:
            return None, ""
        key = Counter(specific).most_common(1)[0][0]
    name, text = WHERE.get(key, (None, ""))
    tops = [s.top for s in stacks if s.where == key and s.top]
    if tops:
        text += f": {tops[0]}"
    return name, text


def proc_text(procs: list[ProcInfo]) -> str:
    rows = []
    for p in procs:
        rows.append(f"pid {p.pid} ppid {p.ppid} {p.status:9} rank {p.rank if p.rank is not None else '-':>2} "
                    f"cpu {p.cpu_s:8.1f} s rss {gib(p.rss)} threads {p.threads:3} {p.name}: {p.cmd}")
    return "\n".join(rows)


def gpu_text(gpus: list[Gpu] | None) -> str:
    if gpus is None:
        return "no GPU snapshot (no NVIDIA driver / NVML on this machine)"
    return "\n".join(f"GPU {g.index}: util {g.util if g.util is not None else '?'}% memory {gib(g.mem_used)} of "
                     f"{gib(g.mem_total)}" for g in gpus) or "no GPUs visible"


def signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_group(pgid: int) -> bool:
    """First step of a stop: SIGTERM to the whole group (the caller sends SIGKILL after the grace period)."""
    return signal_group(pgid, signal.SIGTERM)
