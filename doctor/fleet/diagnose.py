"""Run the analysis of a finished job with bounds: a child process (doctor/fleet/child.py) as the job's user, killed
with its process group past a time limit, with its address space capped. The hook itself never analyses in-process:
whatever the analysis does, the hook still writes its record and exits 0."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from .slurm import SYSTEM_PATH

STDERR_KEPT = 2000   # characters of the child's standard error kept in the record when it fails


@dataclass
class Limits:
    seconds: float = 30.0               # an epilog holds the job in COMPLETING while it runs
    memory_mb: int = 4096               # address space of the analysis
    log_bytes: int = 16 << 20           # past this a log is read in part: its head and its end (doctor/fleet/child.py)


@dataclass
class Outcome:
    status: str                         # ok | timeout | error | no-input
    seconds: float
    report: dict | None = None
    error: str | None = None
    as_user: int | None = field(default=None)   # the uid the analysis ran as


def _limit_memory(mb: int):
    def apply() -> None:   # in the child, before exec: a runaway analysis fails there, not in the hook
        n = mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
    return apply


def _identity(uid: int | None, gid: int | None) -> dict:
    """subprocess arguments that make the child the job's user: only when the hook is root and the job is not
    (a follow-up job already is the user; a SlurmUser hook cannot switch and reads as itself)."""
    if os.geteuid() != 0 or uid is None or uid == 0:
        return {}
    import pwd
    out: dict = {"user": uid, "group": gid if gid is not None else uid}
    try:
        name = pwd.getpwuid(uid).pw_name
        out["extra_groups"] = os.getgrouplist(name, out["group"])
    except KeyError:   # no passwd entry on this host: its own ids only
        out["extra_groups"] = []
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # the scanner's own children too
    except OSError:
        proc.kill()
    proc.communicate()


def run_analysis(paths: list[str], limits: Limits, uid: int | None = None, gid: int | None = None) -> Outcome:
    t0 = time.monotonic()
    if not paths:
        return Outcome("no-input", 0.0, error="no log or output folder found")
    env = {k: v for k, v in os.environ.items()}
    env.setdefault("PATH", SYSTEM_PATH)
    env.setdefault("LANG", "C.UTF-8")
    # the child runs the same code as this hook, wherever the hook's interpreter would find another copy
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    ident = _identity(uid, gid)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "doctor.fleet.child", str(limits.log_bytes), *paths],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                                cwd="/", start_new_session=True, preexec_fn=_limit_memory(limits.memory_mb), **ident)
    except (OSError, subprocess.SubprocessError) as e:
        return Outcome("error", time.monotonic() - t0, error=f"cannot start the analysis: {e}")
    try:
        out, err = proc.communicate(timeout=limits.seconds)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return Outcome("timeout", time.monotonic() - t0, error=f"analysis stopped after {limits.seconds:g} s",
                       as_user=ident.get("user"))
    except BaseException:   # the hook itself was told to stop: no analysis is left running behind it
        _kill_group(proc)
        raise
    took = time.monotonic() - t0
    text = err.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        why = text.splitlines()[-1] if text else f"exit status {proc.returncode}"
        if proc.returncode < 0:
            why = f"killed by signal {-proc.returncode} (memory limit {limits.memory_mb} MB?); {why}"
        return Outcome("error", took, error=why[-STDERR_KEPT:], as_user=ident.get("user"))
    try:
        return Outcome("ok", took, report=json.loads(out), as_user=ident.get("user"))
    except ValueError as e:
        return Outcome("error", took, error=f"the analysis printed no JSON report ({e})", as_user=ident.get("user"))
