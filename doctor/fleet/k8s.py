"""Kubernetes: the failed training container's log as the kubelet keeps it (``/var/log/pods/<namespace>_<pod>_<uid>/
<container>/<restart>.log``, CRI format) or as a shared volume holds it (the trainer tees its output there), made
into the same record as a Slurm job's.

CRI lines are ``<RFC 3339 time> <stdout|stderr> <P|F> <text>``: ``P`` is a part of a line the runtime cut (16 KiB),
continued by the next line of the same stream, ``F`` ends it. The analysis needs the lines as the program printed
them, so they are rejoined into a plain copy first."""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from .. import lazyre

_CRI = lazyre.compile(rb"^(\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([PF]) ?(.*)$", re.S)
_POD_DIR = lazyre.compile(r"(?P<ns>[^_/]+)_(?P<pod>[^_/]+)_(?P<uid>[0-9a-f-]{8,})$")
_RESTART_LOG = lazyre.compile(r"(\d+)\.log$")


@dataclass
class PodJob:
    """What a record's ``job`` holds, for a pod (the fields a Slurm job has and a pod does not stay None)."""
    job_id: str
    name: str | None = None
    user: str | None = None           # the namespace: who owns the job on a shared cluster
    partition: str | None = None
    cluster: str | None = None
    nodes: str | None = None
    num_nodes: int | None = 1
    gpus: int | None = None
    start: str | None = None
    end: str | None = None
    run_seconds: int | None = None
    state: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    stdout: str | None = None
    notes: list[str] = field(default_factory=list)


def is_cri(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    return bool(_CRI.match(first.rstrip(b"\n")))


def decri(src: str, dst: str) -> tuple[str | None, str | None]:
    """Write the program's own lines of the CRI log ``src`` to ``dst``; the first and last timestamps."""
    first = last = None
    pending: dict[bytes, list[bytes]] = {}
    with open(src, "rb") as f, open(dst, "wb") as out:
        for raw in f:
            m = _CRI.match(raw.rstrip(b"\n"))
            if not m:   # not CRI (a truncated line, another writer): kept as it is
                out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                continue
            ts, stream, tag, text = m.groups()
            first = first or ts.decode()
            last = ts.decode()
            if tag == b"P":
                pending.setdefault(stream, []).append(text)
                continue
            out.write(b"".join(pending.pop(stream, [])) + text + b"\n")
        for parts in pending.values():   # a cut line the container never finished
            out.write(b"".join(parts) + b"\n")
    return first, last


def pod_log(path: str) -> tuple[str, dict[str, str]]:
    """The log file for ``path`` (a file, or a container's folder of ``<restart>.log`` files: the newest restart,
    the one that failed) and what its kubelet path tells: namespace, pod, uid, container."""
    if os.path.isdir(path):
        logs = [e for e in os.scandir(path) if _RESTART_LOG.fullmatch(e.name) and e.is_file()]
        if not logs:
            raise FileNotFoundError(2, "no <restart>.log file in the folder", path)
        path = max(logs, key=lambda e: int(_RESTART_LOG.fullmatch(e.name).group(1))).path  # type: ignore[union-attr]
    facts: dict[str, str] = {}
    container_dir = os.path.dirname(os.path.abspath(path))
    m = _POD_DIR.match(os.path.basename(os.path.dirname(container_dir)))
    if m:
        facts = {"namespace": m.group("ns"), "pod": m.group("pod"), "uid": m.group("uid"),
                 "container": os.path.basename(container_dir)}
    return path, facts


def wait_for(path: str, seconds: float, poll: float = 0.5) -> bool:
    """True once ``path`` exists (the trainer writes its exit code there last); False past ``seconds``."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True


def read_exit(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read(64).strip())
    except (OSError, ValueError):
        return None


def pod_job(env: dict[str, str], facts: dict[str, str], exit_code: int | None, log: str) -> PodJob:
    """The pod from the Downward API's variables (POD_NAME, POD_NAMESPACE, NODE_NAME, JOB_NAME, GPUS) and the log's
    kubelet path; the exit code 137 is the kernel's OOM kill or a SIGKILL, which the container's reason tells apart
    (not visible here: recorded as the code)."""
    pod = env.get("POD_NAME") or facts.get("pod") or "unknown-pod"
    ns = env.get("POD_NAMESPACE") or facts.get("namespace")
    job = PodJob(job_id=f"{ns}.{pod}" if ns else pod, name=env.get("JOB_NAME") or facts.get("container"), user=ns,
                 partition=env.get("NODE_POOL"), cluster=env.get("CLUSTER_NAME") or "k8s", nodes=env.get("NODE_NAME"),
                 exit_code=exit_code, stdout=log)
    try:
        job.gpus = int(env["GPUS"]) if env.get("GPUS") else None
    except ValueError:
        job.notes.append(f"GPUS={env['GPUS']!r} is not a number")
    job.state = "UNKNOWN" if exit_code is None else ("COMPLETED" if exit_code == 0 else "FAILED")
    if exit_code == 137:
        job.reason = "exit 137: killed (the kernel's OOM killer or a SIGKILL; the pod status says which)"
    return job


def seconds_between(first: str | None, last: str | None) -> int | None:
    """Seconds between two CRI timestamps (nanoseconds cut to microseconds)."""
    from datetime import datetime

    def parse(ts: str) -> datetime:
        ts = re.sub(r"(\.\d{6})\d+", r"\1", ts).replace("Z", "+00:00")
        return datetime.fromisoformat(ts)
    try:
        return int((parse(last) - parse(first)).total_seconds()) if first and last else None
    except ValueError:
        return None
