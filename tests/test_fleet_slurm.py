"""The fleet hooks on a real Slurm: munged, slurmctld and slurmd started by tools/slurm-single-node.sh (root; it
installs Debian's slurm-wlm with apt-get when missing), with ``EpilogSlurmctld`` pointed at a wrapper script that
runs ``grpo-doctor fleet slurm-epilog`` the way the README tells a cluster admin to. Jobs print real GRPO failure
logs from fixtures/ and exit 1, time out, or are cancelled; the tests read the records the hooks wrote.

The cluster is private to this session: its own directory, its own munge socket, two free ports, and no
/etc/slurm link (the wrapper and the tests pass SLURM_CONF), so it never meets another Slurm on the machine.
Skipped, with the reason, when it cannot start (not root, no slurm and no apt-get, apt or the daemons failing).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "slurm-single-node.sh"
FIXTURES = ROOT / "fixtures" / "logs"
BATCH_DIV = FIXTURES / "real-batch-div-grad-accum" / "log.txt"          # GD101 batch-divisibility
NO_SOLUTION = FIXTURES / "real-dataset-missing-solution-column" / "log.txt"   # GD606 reward-function-error
SCHEMA = ROOT / "doctor" / "data" / "fleet-record-1.json"
SYS_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    def __init__(self, base: Path, env: dict[str, str], store: Path):
        self.base, self.env, self.store = base, env, store
        self.jobs = base / "jobs"

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=60, check=check)

    def sbatch(self, name: str, body: str, *opts: str) -> str:
        script = self.jobs / f"{name}.sh"
        script.write_text("#!/bin/bash\n" + body)
        out = self.run("sbatch", "--parsable", "-J", name, "-o", str(self.jobs / "%x-%j.out"), "-D", str(self.jobs),
                       *opts, str(script))
        return out.stdout.strip().split(";")[0]

    def gone(self, job: str) -> bool:
        """Out of squeue: its epilogs, EpilogSlurmctld included, have finished (a job stays COMPLETING until)."""
        return not self.run("squeue", "-h", "-j", job, check=False).stdout.strip()

    def wait_gone(self, jobs: list[str], limit: float) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if all(self.gone(j) for j in jobs):
                return
            time.sleep(0.2)
        raise AssertionError(f"jobs still queued after {limit} s: {self.run('squeue', check=False).stdout}")


def _start_or_skip(base: Path, store: Path) -> Cluster:
    if os.geteuid() != 0:
        pytest.skip("the real-Slurm tests start slurmctld/slurmd/munged as root (tools/slurm-single-node.sh); "
                    "not root here")
    if not shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":" + SYS_PATH) and not shutil.which("apt-get"):
        pytest.skip("slurm-wlm is not installed and apt-get is not available to install it")
    conf = base / "sn" / "etc" / "slurm.conf"
    hook = base / "epilog"
    # what an admin writes (README "On a cluster"): hooks get an empty environment and Epilog= takes no arguments
    # (jobs named no-epilog-* stand for a cluster without the epilog: the follow-up-job set-up is timed alone)
    hook.write_text("#!/bin/sh\ncase \"$SLURM_JOB_NAME\" in no-epilog-*) exit 0;; esac\n"
                    f"exec /usr/bin/env SLURM_CONF={conf} PYTHONPATH={ROOT} {sys.executable} -m doctor.cli "
                    f"fleet slurm-epilog --store {store}\n")
    hook.chmod(0o755)
    ctld, slurmd = _free_ports(2)
    env = {**os.environ, "PATH": os.environ.get("PATH", "") + ":" + SYS_PATH, "SLURM_SN_DIR": str(base / "sn"),
           "SLURM_SN_EPILOG_SLURMCTLD": str(hook), "SLURM_SN_LINK_ETC": "0", "SLURM_SN_CPUS": "8",
           "SLURM_SN_CTLD_PORT": str(ctld), "SLURM_SN_SLURMD_PORT": str(slurmd), "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    p = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=120)
        pytest.skip(f"Slurm could not start: {p.stderr.strip().splitlines()[-1:] or p.returncode}")
    print(f"slurm started in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    env["SLURM_CONF"] = str(conf)
    c = Cluster(base, env, store)
    c.jobs.mkdir()
    return c


@pytest.fixture(scope="module")
def cluster():
    # a short path: munged's socket lives under it (unix socket paths are limited to 108 bytes)
    base = Path(tempfile.mkdtemp(prefix="gd-slurm-"))
    base.chmod(0o755)   # munged refuses a socket under a folder that others cannot traverse
    store = base / "store"
    try:
        c = _start_or_skip(base, store)
    except BaseException:   # a skip too: nothing of this session's cluster is left in /tmp
        shutil.rmtree(base, ignore_errors=True)
        raise
    # the TIMEOUT job takes 60-90 s to be killed (Slurm's time limit is in minutes, enforced every 30 s): it is
    # submitted first and checked last, while the other tests run
    c.timeout_job = c.sbatch("grpo-timeout", f"head -c 20000 {NO_SOLUTION}\nsleep 600\n", "--time=0:01")
    try:
        yield c
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=c.env, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


def _record(store: Path, job: str) -> dict:
    return json.loads((store / f"single-{job}.json").read_text())


def _valid(rec: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(rec, json.loads(SCHEMA.read_text()))


def _failing(log: Path) -> str:
    # the job's last act is to note when it ended (in its working folder, the jobs folder): the record's latency
    # is measured from there
    return f"cat {log}\ndate +%s.%N > \"$PWD/$SLURM_JOB_ID.end\"\nexit 1\n"


def test_epilog_records_a_failed_job_within_5s(cluster):
    job = cluster.sbatch("grpo-batch", _failing(BATCH_DIV))
    cluster.wait_gone([job], 60)
    rec_path = cluster.store / f"single-{job}.json"
    assert rec_path.exists(), sorted(os.listdir(cluster.store)) if cluster.store.exists() else "no store"
    ended = float((cluster.jobs / f"{job}.end").read_text())
    latency = rec_path.stat().st_mtime - ended
    print(f"record written {latency:.2f} s after the job's end", file=sys.stderr)
    assert latency < 5.0
    rec = _record(cluster.store, job)
    _valid(rec)
    assert rec["source"] == "slurm-epilog"
    assert rec["job"]["state"] == "FAILED" and rec["job"]["exit_code"] == 1
    assert rec["job"]["name"] == "grpo-batch" and rec["job"]["partition"] == "debug"
    assert rec["job"]["stdout"] == str(cluster.jobs / f"grpo-batch-{job}.out")   # the %x-%j pattern expanded
    assert rec["primary"]["category"] == "batch-divisibility" and rec["primary"]["rule_id"] == "GD101"
    assert "must be evenly divisible" in rec["primary"]["evidence"]["text"]
    assert rec["action"] == "relaunch"
    assert json.loads(Path(rec["report"]).read_text())["findings"][0]["rule_id"] == "GD101"


def test_successful_job_leaves_no_record(cluster):
    job = cluster.sbatch("grpo-ok", "echo fine\n")
    cluster.wait_gone([job], 60)
    assert not (cluster.store / f"single-{job}.json").exists()


def test_afternotok_follow_up_job_records_the_failed_job(cluster):
    store2 = cluster.base / "store-followup"
    job = cluster.sbatch("no-epilog-reward", _failing(NO_SOLUTION))
    follow = cluster.run("sbatch", "--parsable", "-J", "no-epilog-doctor", "-o", str(cluster.jobs / "doctor-%j.out"),
                         f"--dependency=afternotok:{job}", "--kill-on-invalid-dep=yes",  # a success: the follow-up goes
                         "--wrap", f"{sys.executable} -m doctor.cli fleet slurm-job {job} --store {store2}"
                         ).stdout.strip()
    cluster.wait_gone([job, follow], 60)
    rec_path = store2 / f"single-{job}.json"
    assert rec_path.exists(), (cluster.jobs / f"doctor-{follow}.out").read_text()
    latency = rec_path.stat().st_mtime - float((cluster.jobs / f"{job}.end").read_text())
    print(f"follow-up record written {latency:.2f} s after the job's end", file=sys.stderr)
    assert latency < 5.0
    rec = _record(store2, job)
    _valid(rec)
    assert rec["source"] == "slurm-job" and rec["job"]["state"] == "FAILED"
    assert rec["primary"]["category"] == "reward-function-error"


def test_twenty_failing_jobs_at_once_leave_twenty_valid_records(cluster):
    # a job array: every task is its own job with its own record, and the records carry the array ids
    body = ("if [ $((SLURM_ARRAY_TASK_ID % 2)) = 0 ]; then cat " + str(BATCH_DIV) + "; else cat " + str(NO_SOLUTION)
            + "; fi\nexit 1\n")
    master = cluster.sbatch("grpo-array", body, "--array=0-19")
    t0 = time.monotonic()
    deadline = t0 + 180
    while time.monotonic() < deadline and cluster.run("squeue", "-h", "-j", master, check=False).stdout.strip():
        time.sleep(0.5)
    print(f"20 jobs and their hooks done in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    recs = [json.loads(p.read_text()) for p in cluster.store.glob("single-*.json")]
    mine = [r for r in recs if r["job"]["array_job_id"] == master]
    assert len(mine) == 20, sorted(r["job"]["id"] for r in recs)
    for r in mine:
        _valid(r)
        task = int(r["job"]["array_task_id"])
        assert r["job"]["state"] == "FAILED"
        assert r["primary"]["category"] == ("batch-divisibility" if task % 2 == 0 else "reward-function-error")
    assert sorted(int(r["job"]["array_task_id"]) for r in mine) == list(range(20))
    # and the report counts them by category
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "fleet", "report", str(cluster.store), "--format",
                        "json"], capture_output=True, text=True, env=cluster.env, timeout=60)
    assert p.returncode == 0, p.stderr
    cats = {c["category"]: c["jobs"] for c in json.loads(p.stdout)["by_category"]}
    assert cats["batch-divisibility"] >= 10 and cats["reward-function-error"] >= 10


def test_cancelled_job_is_recorded_as_cancelled(cluster):
    job = cluster.sbatch("grpo-cancel", f"cat {BATCH_DIV}\nsleep 600\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "R" != cluster.run("squeue", "-h", "-o", "%t", "-j", job,
                                                             check=False).stdout.strip():
        time.sleep(0.2)
    time.sleep(0.5)
    cluster.run("scancel", job)
    cluster.wait_gone([job], 60)
    rec = _record(cluster.store, job)
    _valid(rec)
    # the hook's environment says exit 0 for a cancel: the state comes from scontrol
    assert rec["job"]["state"] == "CANCELLED"


def test_timeout_job_is_recorded_as_timeout(cluster):
    job = cluster.timeout_job
    cluster.wait_gone([job], 150)
    rec = _record(cluster.store, job)
    _valid(rec)
    assert rec["job"]["state"] == "TIMEOUT"   # exit code 0 in the hook's environment: scontrol's reason says it
    assert rec["job"]["reason"] == "TimeLimit"
    assert rec["analysis"]["status"] == "ok"
