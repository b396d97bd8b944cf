"""What is left when the command's leader exits: processes of the run's group that still run (by pid, and what
watch did to them), and what the kernel log says about a process killed with SIGKILL (the OOM killer)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import lazyre
from .say import say

if TYPE_CHECKING:
    import psutil

_OOM = lazyre.compile(r"Out of memory|oom-kill|Killed process|Memory cgroup out of memory|oom_reaper", re.I)


def group_members(pgid: int) -> list[psutil.Process]:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:   # nobody left in the group (the usual end): no need to read every process
        return []
    except OSError:
        pass
    import psutil  # here: a run that leaves nothing behind never needs it, and watch pays every import
    out = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (OSError, psutil.Error):
            continue
    return out


def describe(p: psutil.Process) -> str:
    import psutil  # (already loaded by whoever holds a Process; the module-level name is for type checking only)
    try:
        cmd = " ".join(p.cmdline())[:160] or p.name()
    except (psutil.Error, OSError):
        cmd = "?"
    return f"pid {p.pid} ({cmd})"


def stop_survivors(pgid: int, grace: float, wait: Callable[[float], None] = time.sleep) -> list[dict]:
    """Processes of the run's group still alive after the leader exited: said by pid, sent SIGTERM, and SIGKILL
    after ``grace`` seconds. Returns one record per process: pid, command, what happened to it."""
    alive = group_members(pgid)
    if not alive:
        return []
    import psutil
    records = {p.pid: {"pid": p.pid, "command": describe(p), "outcome": "running"} for p in alive}
    say(f"{len(alive)} process(es) of the run's process group still run after the command exited: "
        + ", ".join(r["command"] for r in records.values()) + f"; sending SIGTERM (SIGKILL after {grace:g} s)")
    for p in alive:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            records[p.pid]["outcome"] = "ended before SIGTERM"
    _gone, rest = psutil.wait_procs(alive, timeout=max(grace, 0.1))
    for p in _gone:
        records[p.pid]["outcome"] = records[p.pid]["outcome"].replace("running", "ended after SIGTERM")
    for p in rest:
        try:
            p.kill()
            records[p.pid]["outcome"] = "killed with SIGKILL"
        except psutil.Error:
            records[p.pid]["outcome"] = "ended after SIGTERM"
    psutil.wait_procs(rest, timeout=5)
    for r in records.values():
        say(f"  {r['command']}: {r['outcome']}")
    return list(records.values())


def kernel_oom_lines(pids: set[int], since_wall: float, limit: int = 20) -> tuple[list[str], str | None]:
    """Kernel log lines about OOM kills since the run started, those naming one of ``pids`` first. Returns the
    lines and, when the kernel log could not be read, why (dmesg needs root or kernel.dmesg_restrict=0)."""
    tried = []
    for cmd in (["dmesg", "--ctime", "--nopager"], ["journalctl", "-k", "--no-pager", "-q", "-o", "short-iso",
                                                     "--since", f"@{int(since_wall) - 5}"]):
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append(f"{cmd[0]}: {getattr(e, 'strerror', None) or e}")
            continue
        if r.returncode != 0:
            err = r.stderr.decode("utf-8", "replace").strip().splitlines()
            tried.append(f"{cmd[0]}: {(err or ['exit ' + str(r.returncode)])[-1][:120]}")
            continue
        hits = [ln for ln in r.stdout.decode("utf-8", "replace").splitlines() if _OOM.search(ln)]
        mine = [ln for ln in hits if any(re.search(rf"\b(?:process |pid=){p}\b", ln) for p in pids)]
        return (mine if cmd[0] == "dmesg" else mine or hits)[:limit], None  # dmesg: no time filter
    return [], "; ".join(tried) or "no kernel log reader"
