"""The fleet hooks without a cluster: the job read from a hook's environment (the variables Slurm 22.05 really gave
an epilog, see tools/slurm-single-node.sh's notes) and from ``scontrol show job -o`` text; the run folder found; the
record written atomically and never a failing hook; the bounds on time and log size; and ``fleet report``.
The same hooks on a real Slurm: tests/test_fleet_slurm.py."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from doctor.fleet import record as record_mod
from doctor.fleet.diagnose import Limits, _identity, run_analysis
from doctor.fleet.locate import locate, output_dirs_named
from doctor.fleet.slurm import SlurmJob, expand_pattern, final_state, gpus_of, parse_show_job, read_job
from doctor.fleet.store import load
from doctor.fleet.summary import summarize

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
BATCH_DIV = FIXTURES / "real-batch-div-grad-accum" / "log.txt"
NO_SOLUTION = FIXTURES / "real-dataset-missing-solution-column" / "log.txt"
SCHEMA = ROOT / "doctor" / "data" / "fleet-record-1.json"

# the environment EpilogSlurmctld received for a failed job (slurm-wlm 22.05.8), with the output pattern raw
EPILOG_ENV = {
    "SLURM_CLUSTER_NAME": "single", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_PARTITION": "debug", "SLURM_JOBID": "7",
    "SLURM_JOB_ID": "7", "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_CPUS_PER_NODE": "1", "SLURM_JOB_STDIN": "/dev/null",
    "SLURM_JOB_DERIVED_EC": "0", "SLURM_JOB_EXIT_CODE": "256", "SLURM_JOB_UID": "0", "SLURM_JOB_USER": "root",
    "SLURM_JOB_EXIT_CODE2": "1:0", "SLURM_JOB_GID": "0", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
    "SLURM_JOB_NAME": "train", "SLURM_JOB_GROUP": "root", "SLURM_JOB_ACCOUNT": "(null)", "SLURM_JOB_NODELIST": "vm",
}


def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]]
                                                        if os.environ.get("PYTHONPATH") else [])), **(env or {})}
    return subprocess.run([sys.executable, "-m", "doctor.cli", *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def hook_env(tmp: Path, log_text: str, job: str = "7", **extra: str) -> dict:
    """An epilog's environment for a job whose output is ``log_text``, where scontrol cannot be found (the hook
    then works from the environment alone)."""
    jobs = tmp / "jobs"
    jobs.mkdir(exist_ok=True)
    (jobs / f"train-{job}.out").write_text(log_text)
    nobin = tmp / "nobin"
    nobin.mkdir(exist_ok=True)
    return {**EPILOG_ENV, "SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_JOB_WORK_DIR": str(jobs),
            "SLURM_JOB_STDOUT": "%x-%j.out", "PATH": str(nobin), **extra}


def valid(rec: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(rec, json.loads(SCHEMA.read_text()))


# ------------------------------------------------------------------------------------------------ the job
def test_show_job_line_of_an_array_task_with_spaces_in_values():
    text = ("JobId=11 ArrayJobId=10 ArrayTaskId=1 JobName=grpo run UserId=alice(1001) GroupId=ml(2000) "
            "JobState=COMPLETING Reason=TimeLimit ExitCode=0:15 RunTime=01:02:03 Partition=h100 NodeList=gpu[01-02] "
            "NumNodes=2 AllocTRES=cpu=64,mem=512G,node=2,billing=64,gres/gpu=16 Command=/home/alice/train.sh --x 1 "
            "WorkDir=/home/alice StdErr=/home/alice/e.txt StdIn=/dev/null StdOut=/home/alice/o-11.txt\n"
            "JobId=10 ArrayJobId=10 ArrayTaskId=0 JobName=other JobState=FAILED\n")
    f = parse_show_job(text, "11")
    assert f["JobName"] == "grpo run" and f["Command"] == "/home/alice/train.sh --x 1"
    assert f["AllocTRES"] == "cpu=64,mem=512G,node=2,billing=64,gres/gpu=16"
    assert parse_show_job(text, "10")["JobName"] == "other"
    assert parse_show_job(text, "10_1")["JobId"] == "11"     # an array task as users name it
    assert parse_show_job(text, "12") == {}


def test_output_patterns_expand_like_slurm():
    job = SlurmJob("11", array_job_id="10", array_task_id="3", name="grpo", user="alice", nodes="gpu[01-02]",
                   work_dir="/home/alice")
    assert expand_pattern("%x-%j.out", job) == "/home/alice/grpo-11.out"
    assert expand_pattern("/logs/%A_%a-%u-%N.txt", job) == "/logs/10_3-alice-gpu.txt"
    assert expand_pattern("%5j%%.log", job) == "/home/alice/00011%.log"


@pytest.mark.parametrize("state,reason,code,sig,want", [
    ("COMPLETING", "NonZeroExitCode", 1, 0, "FAILED"),      # an epilog: still completing
    ("COMPLETING", "TimeLimit", 0, 15, "TIMEOUT"),          # exit 0 in the env, the reason tells
    ("COMPLETING", "None", 0, 15, "CANCELLED"),
    ("COMPLETING", "None", 0, 0, "COMPLETED"),
    ("TIMEOUT", "TimeLimit", 0, 15, "TIMEOUT"),             # a follow-up job: the final state
    ("OUT_OF_MEMORY", "OutOfMemory", 0, 125, "OUT_OF_MEMORY"),
    ("NODE_FAIL", "NodeDown", 1, 0, "NODE_FAIL"),
])
def test_final_state(state, reason, code, sig, want):
    assert final_state(state, reason, code, sig) == want


def test_gpus_from_tres():
    assert gpus_of("cpu=16,mem=64G,node=2,billing=16,gres/gpu=16") == 16
    assert gpus_of("cpu=16,node=1,gres/gpu:h100=4,gres/gpu:a100=2") == 6
    assert gpus_of("cpu=1,node=1,billing=1") == 0 and gpus_of(None) is None


def test_job_from_an_epilog_environment_alone(tmp_path):
    env = hook_env(tmp_path, "x")
    job = read_job(None, env)
    assert job.job_id == "7" and job.name == "train" and job.user == "root" and job.partition == "debug"
    assert job.state == "FAILED" and job.exit_code == 1 and job.cluster == "single"
    assert job.stdout == str(tmp_path / "jobs" / "train-7.out")   # the raw pattern, expanded here
    assert job.notes == ["scontrol not found"]


# ------------------------------------------------------------------------------------------------ the run folder
def test_output_dir_named_in_script_and_newest_run_folder(tmp_path):
    assert output_dirs_named("swift rlhf --output_dir out/grpo --x 1\noutput_dir: '/abs/y'\nargs(output_dir=\"z\")") \
        == ["out/grpo", "/abs/y", "z"]
    assert output_dirs_named("--output_dir $OUT") == []
    out = tmp_path / "out" / "grpo"
    for i, name in enumerate(["v0-20250101-120000", "v1-20250102-120000"]):
        (out / name).mkdir(parents=True)
        (out / name / "logging.jsonl").write_text("")
        os.utime(out / name, (1000 + i, 1000 + i))
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nswift rlhf --rlhf_type grpo --output_dir out/grpo\n")
    log = tmp_path / "o.out"
    log.write_text("hello\n")
    found = locate(str(log), str(log), str(tmp_path), str(script))
    assert found.paths == [str(log), str(out / "v1-20250102-120000")]
    assert found.output_dir == str(out / "v1-20250102-120000")
    assert locate(str(tmp_path / "gone.out"), None, None, None).notes == [f"no output file at {tmp_path / 'gone.out'}"]


# ------------------------------------------------------------------------------------------------ the hook
def test_epilog_hook_writes_a_valid_record(tmp_path):
    store = tmp_path / "store"
    p = cli("fleet", "slurm-epilog", "--store", str(store), env=hook_env(tmp_path, BATCH_DIV.read_text()))
    assert p.returncode == 0, p.stderr
    assert "job 7 FAILED: batch-divisibility" in p.stderr
    rec = json.loads((store / "single-7.json").read_text())
    valid(rec)
    assert rec["primary"]["rule_id"] == "GD101" and rec["action"] == "relaunch"
    assert rec["analysis"]["status"] == "ok" and rec["analysis"]["notes"] == ["scontrol not found"]
    assert json.loads(Path(rec["report"]).read_text())["schema_version"] == 1
    assert sorted(os.listdir(store)) == ["reports", "single-7.json"]   # no temporary file left


def test_successful_job_is_not_recorded_unless_all(tmp_path):
    env = hook_env(tmp_path, "done\n", SLURM_JOB_EXIT_CODE="0", SLURM_JOB_EXIT_CODE2="0:0")
    assert cli("fleet", "slurm-epilog", "--store", str(tmp_path / "s"), env=env).returncode == 0
    assert not (tmp_path / "s").exists() or not list((tmp_path / "s").glob("*.json"))
    assert cli("fleet", "slurm-epilog", "--store", str(tmp_path / "s"), "--all", env=env).returncode == 0
    assert json.loads((tmp_path / "s" / "single-7.json").read_text())["job"]["state"] == "COMPLETED"


@pytest.mark.parametrize("case", ["store-is-a-file", "no-store", "bad-config", "no-job-id", "bad-job-id"])
def test_hook_never_fails(tmp_path, case):
    env = hook_env(tmp_path, BATCH_DIV.read_text())
    (tmp_path / "file").write_text("")
    (tmp_path / "bad.toml").write_text("stor = 1\n")
    args = {"store-is-a-file": ["slurm-epilog", "--store", str(tmp_path / "file")],
            "no-store": ["slurm-epilog", "--config", str(tmp_path / "none.toml")],
            "bad-config": ["slurm-epilog", "--config", str(tmp_path / "bad.toml")],
            "no-job-id": ["slurm-epilog", "--store", str(tmp_path / "s")],
            "bad-job-id": ["slurm-job", "12;rm", "--store", str(tmp_path / "s")]}[case]
    if case == "no-job-id":
        env = {k: v for k, v in env.items() if k not in ("SLURM_JOB_ID", "SLURM_JOBID")}
    p = cli("fleet", *args, env=env)
    assert p.returncode == 0
    assert p.stderr.startswith("grpo-doctor fleet: ") and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_config_file_gives_the_store(tmp_path):
    (tmp_path / "fleet.toml").write_text(f'store = "{tmp_path / "s"}"\ntimeout = 60\n')
    p = cli("fleet", "slurm-epilog", "--config", str(tmp_path / "fleet.toml"),
            env=hook_env(tmp_path, NO_SOLUTION.read_text()))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "s" / "single-7.json").read_text())["primary"]["category"] == "reward-function-error"


def test_time_limit_gives_up_cleanly(tmp_path):
    p = cli("fleet", "slurm-epilog", "--store", str(tmp_path / "s"), "--timeout", "0.05",
            env=hook_env(tmp_path, BATCH_DIV.read_text()))
    assert p.returncode == 0
    rec = json.loads((tmp_path / "s" / "single-7.json").read_text())
    valid(rec)
    assert rec["analysis"]["status"] == "timeout" and rec["primary"] is None
    assert rec["job"]["state"] == "FAILED"   # how the job ended is still recorded


def _big_log(path: Path, filler: str, mb: int = 100) -> None:
    with open(path, "w") as f:
        f.write(filler * ((mb << 20) // len(filler)))
        f.write(BATCH_DIV.read_text())


@pytest.mark.parametrize("filler", [
    "plain filler line with nothing the rules look for in it at all\n",
    # lines dense in the rules' words: each is parsed in Python, so the log is read in part
    "[INFO:swift] rollout worker 3: generated 64 completions, mean length 412.5 tokens, queue depth 2\n",
], ids=["plain", "dense"])
def test_hook_on_a_100mb_log_takes_seconds(tmp_path, filler):
    env = hook_env(tmp_path, "")
    _big_log(tmp_path / "jobs" / "train-7.out", filler)
    t0 = time.monotonic()
    p = cli("fleet", "slurm-epilog", "--store", str(tmp_path / "s"), env=env)
    took = time.monotonic() - t0
    print(f"hook on a 100 MB log ({filler[:20]!r}...): {took:.2f} s", file=sys.stderr)
    assert p.returncode == 0
    rec = json.loads((tmp_path / "s" / "single-7.json").read_text())
    assert rec["primary"]["rule_id"] == "GD101", rec["analysis"]
    assert "last 14 MiB of 100 MiB" in rec["primary"]["evidence"]["path"]
    assert took < 30   # the default time limit; a few seconds on an idle core


def test_analysis_runs_as_the_jobs_user(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only a root hook switches to the job's user")
    assert _identity(65534, 65534)["user"] == 65534 and _identity(0, 0) == {} and _identity(None, None) == {}
    try:
        probe = subprocess.run([sys.executable, "-c", "import doctor"], user=65534, group=65534, extra_groups=[],
                               capture_output=True, env={"PYTHONPATH": str(ROOT)}, cwd="/").returncode
    except PermissionError:
        probe = 126
    if probe != 0:
        pytest.skip(f"nobody cannot run this interpreter ({sys.executable}): the switch is checked on a machine "
                    "where it can")
    secret = tmp_path / "secret.log"
    secret.write_text(BATCH_DIV.read_text())
    secret.chmod(0o600)
    out = run_analysis([str(secret)], Limits(), uid=65534, gid=65534)
    assert out.status == "error" and "permission denied" in (out.error or "") and out.as_user == 65534
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    assert run_analysis([str(secret)], Limits(), uid=65534, gid=65534).status == "ok"


def _write_slowly(store: Path, seconds: float) -> subprocess.Popen:
    """A hook whose record write stalls between writing the temporary file and renaming it."""
    code = ("import os, sys, time\n"
            "real = os.replace\n"
            "def slow(a, b):\n"
            f"    time.sleep({seconds})\n"
            "    real(a, b)\n"
            "os.replace = slow\n"
            "from doctor.fleet import record\n"
            f"rec = {{'record_schema': 1, 'job': {{'id': '9', 'cluster': 'c', 'state': 'FAILED'}}}}\n"
            f"record.write({str(store)!r}, rec, {{'findings': []}})\n")
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_hook_killed_mid_write_leaves_no_partial_record(tmp_path):
    store = tmp_path / "s"
    proc = _write_slowly(store, 30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (store.exists() and any(".tmp" in n for n in os.listdir(store))):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the report got its name, the record did not: only its temporary file is there, which no *.json glob takes
    assert not (store / "c-9.json").exists()
    assert [n for n in os.listdir(store) if n.endswith(".json")] == []
    records, problems = load(str(store))
    assert records == [] and problems == []


def test_hooks_killed_at_random_leave_whole_records_or_none(tmp_path):
    rnd = random.Random(7)
    env = hook_env(tmp_path, BATCH_DIV.read_text())
    for i in range(6):
        store = tmp_path / f"s{i}"
        e = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        proc = subprocess.Popen([sys.executable, "-m", "doctor.cli", "fleet", "slurm-epilog", "--store", str(store)],
                                env=e, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.3, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name in (os.listdir(store) if store.exists() else []):
            if name.endswith(".json"):
                valid(json.loads((store / name).read_text()))


# ------------------------------------------------------------------------------------------------ the report
def _rec(job: str, cat: str | None, rule: str | None, user: str, part: str, gpus: int, secs: int, state="FAILED",
         when: datetime | None = None) -> dict:
    primary = None if cat is None else {"rule_id": rule, "category": cat, "severity": "error", "confidence": "certain",
                                        "title": f"title of {rule}", "action": "relaunch",
                                        "evidence": {"path": "o.out", "line": 3, "text": f"<b>{rule}</b> error"}}
    job_d = {k: None for k in record_mod._JOB_KEYS if k != "job_id"}
    job_d.update(id=job, user=user, partition=part, gpus=gpus, run_seconds=secs, state=state, cluster="c", name="n")
    return {"record_schema": 1, "tool": {"name": "grpo-doctor", "version": "0"}, "source": "slurm-epilog",
            "recorded_at": (when or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ"), "job": job_d,
            "gpu_hours": gpus * secs / 3600, "framework": None, "primary": primary, "others": [],
            "action": "relaunch" if primary else None, "report": None,
            "analysis": {"status": "ok", "seconds": 1.0, "error": None, "inputs": [], "output_dir": None, "notes": []}}


@pytest.fixture
def store(tmp_path):
    s = tmp_path / "store"
    s.mkdir()
    old = datetime.now(timezone.utc) - timedelta(days=30)
    recs = [_rec("1", "batch-divisibility", "GD101", "alice", "h100", 8, 3600),
            _rec("2", "batch-divisibility", "GD101", "alice", "h100", 16, 1800),
            _rec("3", "reward-function-error", "GD606", "bob", "a100", 4, 900),
            _rec("4", None, None, "bob", "h100", 8, 7200, state="TIMEOUT"),
            _rec("5", "batch-divisibility", "GD101", "carol", "h100", 8, 3600, when=old)]
    for r in recs:
        valid(r)
        (s / f"c-{r['job']['id']}.json").write_text(json.dumps(r))
    (s / "c-6.json.tmp123.abcd").write_text('{"record_sch')     # a hook killed mid-write
    (s / "junk.json").write_text("not json")
    (s / "reports").mkdir()
    return s


def test_summary_counts_categories_gpu_hours_users(store):
    recs, problems = load(str(store), timedelta(days=7))
    assert problems == ["junk.json: not JSON (Expecting value)"]
    doc = summarize(recs, like="1")
    assert doc["jobs"] == 4
    cats = {c["category"]: (c["jobs"], c["gpu_hours"]) for c in doc["by_category"]}
    assert cats == {"batch-divisibility": (2, 16.0), "reward-function-error": (1, 1.0),
                    "(no finding: TIMEOUT)": (1, 16.0)}
    assert doc["gpu_hours_lost"] == 33.0
    assert doc["top_recurring"][0]["rule_id"] == "GD101" and doc["top_recurring"][0]["jobs"] == 2
    assert doc["users"] == [{"user": "bob", "jobs": 2, "gpu_hours": 17.0},     # a tie in jobs: GPU-hours decide
                            {"user": "alice", "jobs": 2, "gpu_hours": 16.0}]
    assert doc["partitions"][0]["partition"] == "h100" and doc["partitions"][0]["jobs"] == 3
    assert [j["job"] for j in doc["like"]["jobs"]] == ["2"]
    assert len(load(str(store))[0]) == 5


def test_report_command_formats(store, tmp_path):
    p = cli("fleet", "report", str(store), "--since", "7d", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert {c["category"]: c["jobs"] for c in json.loads(p.stdout)["by_category"]}["batch-divisibility"] == 2
    t = cli("fleet", "report", str(store), "--since", "7d", "--like", "3")
    assert t.returncode == 0 and "4 failed jobs, 33 GPU-hours lost" in t.stdout
    assert "GD101 x2: job" in t.stdout and "Jobs that failed like job 3:" in t.stdout
    h = cli("fleet", "report", str(store), "--format", "html", "-o", str(tmp_path / "f.html"))
    assert h.returncode == 0
    page = (tmp_path / "f.html").read_text()
    assert "&lt;b&gt;GD101&lt;/b&gt;" in page and "<b>GD101</b>" not in page   # record text is escaped
    assert "default-src 'none'" in page and "<script" not in page


@pytest.mark.parametrize("args,msg", [
    (["/nonexistent/store"], "no such directory"),
    (["STORE", "--since", "a week"], "--since 'a week'"),
    (["STORE", "--format", "pdf"], "pdf"),
])
def test_report_bad_input_is_one_line_exit_2(store, args, msg):
    p = cli("fleet", "report", *[str(store) if a == "STORE" else a for a in args])
    assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr


CHROMIUM = __import__("shutil").which("chromium") or __import__("shutil").which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_report_page_in_chromium(store, tmp_path):
    from test_html import _chromium, page_requests
    out = tmp_path / "fleet.html"
    assert cli("fleet", "report", str(store), "--format", "html", "-o", str(out)).returncode == 0
    net = tmp_path / "net.json"
    p = _chromium([f"--log-net-log={net}", "--dump-dom", out.as_uri()], tmp_path)
    dom = p.stdout
    assert "<b>5</b> failed jobs" in dom and "batch-divisibility" in dom and "GD606" in dom
    assert not [ln for ln in p.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not page_requests(net.read_text(errors="replace")), "the page requested something"
    shot = tmp_path / "fleet.png"
    _chromium(["--window-size=1200,1400", f"--screenshot={shot}", out.as_uri()], tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_readme_duckdb_query_reads_the_store(store):
    """The README's DuckDB query, as printed there, on a store with a broken file and a temporary one."""
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install duckdb): the README's query "
                                 "is checked where it is")
    readme = (ROOT / "README.md").read_text()
    sql = readme.split("duckdb <<'SQL'\n", 1)[1].split("\nSQL\n", 1)[0]
    assert "read_json('/shared/grpo-doctor-fleet/*.json'" in sql
    rows = duckdb.sql(sql.replace("/shared/grpo-doctor-fleet", str(store)).rstrip(";")).fetchall()
    assert sorted(rows) == [("(no finding: TIMEOUT)", 1, 16.0), ("batch-divisibility", 2, 16.0),
                            ("reward-function-error", 1, 1.0)]


def test_compact_folds_old_records_into_parquet_and_report_counts_them_once(store, tmp_path):
    pytest.importorskip("duckdb", reason="fleet compact needs DuckDB (pip install 'grpo-doctor[fleet]')")
    before = json.loads(cli("fleet", "report", str(store), "--format", "json").stdout)
    p = cli("fleet", "compact", str(store), "--older-than", "7d")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("folded 1 records into ") and not (store / "c-5.json").exists()
    parquet = list((store / "parquet").glob("*.parquet"))
    assert len(parquet) == 1
    # a compaction that died after writing the Parquet file: the record is both a file and folded, counted once
    (store / "c-5.json").write_text(json.dumps(_rec("5", "batch-divisibility", "GD101", "carol", "h100", 8, 3600,
                                                    when=datetime.now(timezone.utc) - timedelta(days=30))))
    after = json.loads(cli("fleet", "report", str(store), "--format", "json").stdout)
    for key in ("jobs", "by_category", "gpu_hours_lost", "users"):
        assert after[key] == before[key], key
    assert cli("fleet", "compact", str(store), "--older-than", "90d").stdout.startswith("nothing older")
    assert cli("fleet", "compact", str(tmp_path / "none")).returncode == 2
