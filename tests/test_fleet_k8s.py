"""Kubernetes without a cluster (no fake API server): the commands of the shipped manifests (deploy/k8s/) run as
written, on the files a pod really leaves: the kubelet's ``/var/log/pods/<namespace>_<pod>_<uid>/<container>/
<restart>.log`` in CRI format (lines cut by the runtime into ``P`` parts), and the trainer's tee'd log and exit-code
file on a shared volume. The logs are real GRPO failure logs from fixtures/."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doctor.fleet.k8s import decri

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "k8s"
BATCH_DIV = ROOT / "fixtures" / "logs" / "real-batch-div-grad-accum" / "log.txt"
NO_SOLUTION = ROOT / "fixtures" / "logs" / "real-dataset-missing-solution-column" / "log.txt"
SCHEMA = ROOT / "doctor" / "data" / "fleet-record-1.json"
POD_DIR = "ml_grpo-train-x7k2p_0b7e6c1a-1111-2222-3333-444455556666"


def cri(text: str, t0: float = 1764320000.0, cut: int = 120) -> str:
    """``text`` as the container runtime writes it: a timestamp, the stream and P/F per line, lines longer than
    ``cut`` split into partial lines (the runtime cuts at 16 KiB; smaller here so that the cut is exercised)."""
    out = []
    for i, line in enumerate(text.splitlines()):
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + i)) + ".123456789Z"
        stream = "stderr" if "Error" in line or "Traceback" in line else "stdout"
        parts = [line[k:k + cut] for k in range(0, len(line), cut)] or [""]
        out += [f"{ts} {stream} {'F' if k == len(parts) - 1 else 'P'} {p}" for k, p in enumerate(parts)]
    return "\n".join(out) + "\n"


def container(manifest: str, name: str) -> dict:
    doc = yaml.safe_load((DEPLOY / manifest).read_text())
    return next(c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def run_doctor(argv: list[str], env: dict | None = None, **kw) -> subprocess.Popen:
    assert argv[0] == "grpo-doctor"
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "doctor.cli", *argv[1:]], env=e, stderr=subprocess.PIPE,
                            text=True, **kw)


def valid(rec: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(rec, json.loads(SCHEMA.read_text()))


def test_decri_rejoins_partial_lines_per_stream(tmp_path):
    src = tmp_path / "0.log"
    src.write_text("2025-01-01T00:00:00.1Z stdout P abc\n2025-01-01T00:00:00.2Z stderr F err line\n"
                   "2025-01-01T00:00:01.3Z stdout F def\nnot cri\n2025-01-01T00:00:09.9Z stdout P cut\n")
    first, last = decri(str(src), str(tmp_path / "o"))
    assert (tmp_path / "o").read_text() == "err line\nabcdef\nnot cri\ncut\n"
    assert (first, last) == ("2025-01-01T00:00:00.1Z", "2025-01-01T00:00:09.9Z")


def test_followup_job_on_the_kubelets_log_layout(tmp_path):
    pods = tmp_path / "var" / "log" / "pods"
    logs = pods / POD_DIR / "trainer"
    logs.mkdir(parents=True)
    (logs / "0.log").write_text(cri(BATCH_DIV.read_text()))      # an earlier restart, another failure
    (logs / "1.log").write_text(cri(NO_SOLUTION.read_text(), t0=1764330000.0))   # the failure that ended the pod
    store = tmp_path / "store"
    argv = [a.replace("/var/log/pods", str(pods)).replace("NAMESPACE_POD_UID", POD_DIR).replace("EXIT_CODE", "1")
            .replace("/store", str(store)) for a in container("grpo-doctor-followup-job.yaml", "grpo-doctor")["command"]]
    p = run_doctor(argv, {"GPUS": "8"})
    assert p.wait(120) == 0, p.stderr.read()
    rec = json.loads((store / "k8s-ml.grpo-train-x7k2p.json").read_text())
    valid(rec)
    assert rec["source"] == "k8s-sidecar" and rec["job"]["user"] == "ml" and rec["job"]["name"] == "trainer"
    assert rec["job"]["state"] == "FAILED" and rec["job"]["exit_code"] == 1
    assert rec["primary"]["category"] == "reward-function-error"
    assert rec["primary"]["evidence"]["path"] == str(logs / "1.log")   # the pod's log, not the plain copy
    assert "missing 1 required positional argument: 'solution'" in rec["primary"]["evidence"]["text"]
    lines = len(NO_SOLUTION.read_text().splitlines())
    assert rec["job"]["run_seconds"] == lines - 1 and rec["gpu_hours"] == round(8 * (lines - 1) / 3600, 4)


def _trainer_script(shared: Path, train: str) -> str:
    script = container("grpo-job-with-doctor-sidecar.yaml", "trainer")["args"][0]
    first = next(ln for ln in script.splitlines() if ln.startswith("swift rlhf"))
    return script.replace(first[:first.index(" 2>&1")], train).replace("/shared", str(shared))


@pytest.mark.parametrize("code", [1, 0])
def test_sidecar_pod_as_the_manifest_writes_it(tmp_path, code):
    shared, store = tmp_path / "shared", tmp_path / "store"
    shared.mkdir()
    argv = [a.replace("/shared", str(shared)).replace("/store", str(store))
            for a in container("grpo-job-with-doctor-sidecar.yaml", "grpo-doctor")["command"]]
    # the two containers start together: the sidecar first waits for the trainer's exit code
    side = run_doctor(argv, {"POD_NAME": "grpo-train-x7k2p", "POD_NAMESPACE": "ml", "NODE_NAME": "gpu-node-3",
                             "JOB_NAME": "grpo-train", "GPUS": "8"})
    time.sleep(0.5)
    train = f"bash -c 'cat {BATCH_DIV}; exit {code}'"
    t = subprocess.run(["/bin/bash", "-c", _trainer_script(shared, train)], capture_output=True, text=True,
                       timeout=60)
    assert t.returncode == code                    # the pod fails (or not) with the trainer's own code
    assert "must be evenly divisible" in t.stdout  # and its output still reaches the container log
    assert side.wait(120) == 0, side.stderr.read()
    recs = list(store.glob("*.json")) if store.exists() else []
    if code == 0:
        assert recs == []
        return
    rec = json.loads((store / "k8s-ml.grpo-train-x7k2p.json").read_text())
    valid(rec)
    assert rec["job"]["nodes"] == "gpu-node-3" and rec["job"]["name"] == "grpo-train" and rec["job"]["gpus"] == 8
    assert rec["primary"]["category"] == "batch-divisibility"
    assert rec["primary"]["evidence"]["path"] == str(shared / "train.log")


def test_sidecar_without_exit_file_records_unknown(tmp_path):
    (tmp_path / "train.log").write_text(BATCH_DIV.read_text())
    p = run_doctor(["grpo-doctor", "fleet", "k8s-sidecar", "--log", str(tmp_path / "train.log"), "--exit-file",
                    str(tmp_path / "never"), "--wait", "0.2", "--store", str(tmp_path / "s")], {"POD_NAME": "p"})
    assert p.wait(120) == 0
    assert "no exit code" in p.stderr.read()
    rec = json.loads((tmp_path / "s" / "k8s-p.json").read_text())
    assert rec["job"]["state"] == "UNKNOWN" and rec["primary"]["rule_id"] == "GD101"
