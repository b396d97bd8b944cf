"""A finished Slurm job as a hook sees it: the hook's environment first, then ``scontrol show job -o``.

Why both: an epilog's environment has no PATH or HOME, its ``SLURM_JOB_STDOUT`` is the raw ``--output`` pattern
(``%x-%j.out``), and its exit code is 0 for a timeout or a cancel alike; scontrol has the expanded paths, the
state and the reason. scontrol may be missing or fail (a controller-side hook without a readable slurm.conf): the
environment alone still gives a record, with the pattern expanded here.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

from .. import lazyre

# where scontrol is looked for when the hook's environment has no PATH (Slurm gives hooks none)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SCONTROL_TIMEOUT_S = 10.0
FINAL_STATES = ("FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "COMPLETED", "BOOT_FAIL",
                "DEADLINE", "PREEMPTED")
# a job still COMPLETING while its epilogs run: the reason tells how it ended
_REASON_STATE = {"TimeLimit": "TIMEOUT", "NonZeroExitCode": "FAILED", "OutOfMemory": "OUT_OF_MEMORY",
                 "NodeDown": "NODE_FAIL", "NodeFail": "NODE_FAIL", "BootFail": "BOOT_FAIL", "DeadLine": "DEADLINE"}
_KEY = lazyre.compile(r"(?:^|\s)([A-Za-z][\w:/.-]*)=")
_PATTERN = lazyre.compile(r"%(\d*)([AajJNnstux%])")


@dataclass
class SlurmJob:
    job_id: str
    array_job_id: str | None = None
    array_task_id: str | None = None
    name: str | None = None
    user: str | None = None
    uid: int | None = None
    gid: int | None = None
    partition: str | None = None
    account: str | None = None
    cluster: str | None = None
    nodes: str | None = None            # the node list as Slurm writes it ("gpu[01-04]")
    num_nodes: int | None = None
    gpus: int | None = None             # GPUs of the whole job (all nodes), from its TRES
    submit: str | None = None
    start: str | None = None
    end: str | None = None
    run_seconds: int | None = None
    state: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    work_dir: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    command: str | None = None           # the batch script's path
    comment: str | None = None
    notes: list[str] = field(default_factory=list)   # what could not be learned, and why


def parse_show_job(text: str, job_id: str) -> dict[str, str]:
    """``scontrol show job -o`` as a dict, from the line whose JobId is ``job_id`` (an array's master id lists
    every task), or whose ArrayJobId_ArrayTaskId is (``123_4``, as users name an array task). Values may hold
    spaces (a Command with arguments): a value runs to the next `` Key=``."""
    for line in text.splitlines():
        keys = list(_KEY.finditer(line))
        fields = {}
        for k, nxt in zip(keys, keys[1:] + [None]):
            fields[k.group(1)] = line[k.end():nxt.start() if nxt else len(line)].strip()
        if fields.get("JobId") == job_id or f"{fields.get('ArrayJobId')}_{fields.get('ArrayTaskId')}" == job_id:
            return fields
    return {}


def scontrol_show(job_id: str, env: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """The job's fields and None, or {} and why not."""
    run_env = dict(env)
    run_env["PATH"] = env.get("PATH") or SYSTEM_PATH
    try:
        p = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True,
                           env=run_env, timeout=SCONTROL_TIMEOUT_S, errors="replace")
    except FileNotFoundError:
        return {}, "scontrol not found"
    except subprocess.TimeoutExpired:
        return {}, f"scontrol did not answer in {SCONTROL_TIMEOUT_S:g}s"
    except OSError as e:
        return {}, f"scontrol: {e.strerror}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {}, f"scontrol exit {p.returncode}: {last[:200]}"
    fields = parse_show_job(p.stdout, job_id)
    return (fields, None) if fields else ({}, f"scontrol has no job {job_id} (gone after MinJobAge?)")


def _null(v: str | None) -> str | None:
    return None if v in (None, "", "(null)", "None", "Unknown", "N/A") else v


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _name_id(v: str | None) -> tuple[str | None, int | None]:
    """``root(0)`` -> ("root", 0)."""
    m = re.fullmatch(r"(.*)\((\d+)\)", v or "")
    return (m.group(1) or None, int(m.group(2))) if m else (_null(v), None)


def _exit_pair(v: str | None) -> tuple[int | None, int | None]:
    """``1:0`` -> (1, 0): exit code and signal."""
    a, _, b = (v or "").partition(":")
    return _int(a), _int(b)


def gpus_of(tres: str | None) -> int | None:
    """``cpu=16,mem=64G,node=2,billing=16,gres/gpu=16`` -> 16 (``gres/gpu:h100=8`` counted too)."""
    if not tres:
        return None
    counts = {}
    for part in tres.split(","):
        k, _, v = part.partition("=")
        counts[k] = _int(v) or 0
    if "gres/gpu" in counts:
        return counts["gres/gpu"]
    return sum(n for k, n in counts.items() if k.startswith("gres/gpu:"))


def _duration(v: str | None) -> int | None:
    """``1-02:03:04`` / ``02:03:04`` / ``03:04`` -> seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", v or "")
    if not m:
        return None
    d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def final_state(state: str | None, reason: str | None, exit_code: int | None, signal: int | None) -> str | None:
    """The job's ending. During an epilog the job is still COMPLETING: its reason and exit code tell the ending
    (a timeout and a cancel both have exit code 0 in the hook's environment; scontrol has the reason)."""
    st = (state or "").split()[0] if state else ""
    if st in FINAL_STATES:
        return st
    if reason in _REASON_STATE:
        return _REASON_STATE[reason]
    if exit_code:
        return "FAILED"
    if signal:
        return "CANCELLED"
    if exit_code == 0:
        return "COMPLETED"
    return st or None


def expand_pattern(pattern: str, job: SlurmJob) -> str:
    """An ``--output`` pattern with Slurm's replacements (``%j``, ``%A_%a``, ``%x``, ``%u``, ``%N``, zero padding
    like ``%4j``), joined to the working directory when relative."""
    first_node = re.split(r"[\[,]", job.nodes or "")[0] or "node"
    values = {"A": job.array_job_id or job.job_id, "a": job.array_task_id or "4294967294", "j": job.job_id,
              "J": job.job_id, "N": first_node, "n": "0", "s": "batch", "t": "0", "u": job.user or "",
              "x": job.name or ""}

    def one(m: re.Match) -> str:
        if m.group(2) == "%":
            return "%"
        v = values[m.group(2)]
        return v.zfill(int(m.group(1))) if m.group(1) and v.isdigit() else v
    out = _PATTERN.sub(one, pattern)
    if not os.path.isabs(out) and job.work_dir:
        out = os.path.join(job.work_dir, out)
    return out


def read_job(job_id: str | None, env: dict[str, str], use_scontrol: bool = True) -> SlurmJob:
    """The job from the environment (``SLURM_*``) and scontrol; scontrol's values win (they are expanded and final)."""
    jid = job_id or env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
    job = SlurmJob(job_id=jid)
    job.cluster = _null(env.get("SLURM_CLUSTER_NAME"))   # a follow-up job runs on the failed job's cluster
    ec, sig = _exit_pair(env.get("SLURM_JOB_EXIT_CODE2"))
    job.array_job_id = _null(env.get("SLURM_ARRAY_JOB_ID")) if not job_id else None
    job.array_task_id = _null(env.get("SLURM_ARRAY_TASK_ID")) if not job_id else None
    if not job_id:   # the hook's own job: its environment describes it (a follow-up job's describes itself)
        job.name, job.user = _null(env.get("SLURM_JOB_NAME")), _null(env.get("SLURM_JOB_USER"))
        job.uid, job.gid = _int(env.get("SLURM_JOB_UID")), _int(env.get("SLURM_JOB_GID"))
        job.partition, job.account = _null(env.get("SLURM_JOB_PARTITION")), _null(env.get("SLURM_JOB_ACCOUNT"))
        job.nodes = _null(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST"))
        job.num_nodes = _int(env.get("SLURM_JOB_NUM_NODES"))
        job.work_dir = _null(env.get("SLURM_JOB_WORK_DIR"))
        job.comment = _null(env.get("SLURM_JOB_COMMENT"))
        job.exit_code, job.signal = ec, sig
        for key, attr in (("SLURM_JOB_STDOUT", "stdout"), ("SLURM_JOB_STDERR", "stderr")):
            if env.get(key):   # the raw pattern here: expanded below, once the name and ids are known
                setattr(job, attr, env[key])
    fields: dict[str, str] = {}
    if use_scontrol and jid:
        fields, why = scontrol_show(jid, env)
        if why:
            job.notes.append(why)
    if fields:
        _from_scontrol(job, fields)
    if job.stdout is None and jid:   # Slurm's default output name
        job.stdout = "slurm-%A_%a.out" if job.array_task_id else "slurm-%j.out"
    job.stdout = expand_pattern(job.stdout, job) if job.stdout else None
    job.stderr = expand_pattern(job.stderr, job) if job.stderr else None
    job.state = final_state(job.state, job.reason, job.exit_code, job.signal)
    return job


def _from_scontrol(job: SlurmJob, f: dict[str, str]) -> None:
    job.job_id = f.get("JobId") or job.job_id   # an array task named 123_4 has a job id of its own
    job.name = _null(f.get("JobName")) or job.name
    user, uid = _name_id(f.get("UserId"))
    group, gid = _name_id(f.get("GroupId"))
    job.user, job.uid = user or job.user, uid if uid is not None else job.uid
    job.gid = gid if gid is not None else job.gid
    job.array_job_id = _null(f.get("ArrayJobId")) or job.array_job_id
    job.array_task_id = _null(f.get("ArrayTaskId")) or job.array_task_id
    job.partition = _null(f.get("Partition")) or job.partition
    job.account = _null(f.get("Account")) or job.account
    job.nodes = _null(f.get("NodeList")) or job.nodes
    job.num_nodes = _int(f.get("NumNodes")) or job.num_nodes
    job.gpus = gpus_of(f.get("AllocTRES") or f.get("TRES"))
    job.submit, job.start, job.end = _null(f.get("SubmitTime")), _null(f.get("StartTime")), _null(f.get("EndTime"))
    job.run_seconds = _duration(f.get("RunTime"))
    job.state, job.reason = _null(f.get("JobState")), _null(f.get("Reason"))
    if f.get("ExitCode"):
        job.exit_code, job.signal = _exit_pair(f.get("ExitCode"))
    job.work_dir = _null(f.get("WorkDir")) or job.work_dir
    job.stdout = _null(f.get("StdOut")) or job.stdout
    job.stderr = _null(f.get("StdErr")) or job.stderr
    job.command = _null(f.get("Command"))
    job.comment = _null(f.get("Comment")) or job.comment
