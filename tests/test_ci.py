"""Set-up: the README points pip at PyTorch's CPU wheel index (a plain `pip install torch` pulls the CUDA build,
several GB); .ci/run fails when a CUDA wheel got installed anyway and states how long the tests took."""
from __future__ import annotations

import subprocess

from conftest import ROOT

CHECK = ROOT / ".ci" / "no-cuda-wheels"


def test_readme_installs_the_cpu_torch_wheel():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    test_cmd = next(line for line in readme.splitlines() if "python -m pytest" in line and "pip install" in line)
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in test_cmd


def _check(tmp_path, freeze: str) -> subprocess.CompletedProcess:
    f = tmp_path / "freeze.txt"
    f.write_text(freeze)
    return subprocess.run(["bash", str(CHECK), str(f)], check=False, capture_output=True, text=True, timeout=60)


def test_cuda_wheels_fail_the_check(tmp_path):
    p = _check(tmp_path, "torch==2.13.0\nnvidia-cublas-cu12==12.8.4.1\nnvidia-ml-py==13.0\nnvidia-nccl-cu12==2.27\n")
    assert p.returncode == 1
    assert "nvidia-cublas-cu12" in p.stderr and "nvidia-nccl-cu12" in p.stderr and "nvidia-ml-py" not in p.stderr
    p = _check(tmp_path, "torch==2.13.0+cpu\nnvidia-ml-py==13.0\npsutil==7.0\n")  # NVML bindings are no CUDA wheel
    assert p.returncode == 0, p.stderr


def test_ci_runs_the_check_and_states_the_test_time():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".ci/no-cuda-wheels" in ci
    assert ci.index("no-cuda-wheels") < ci.index("python -m pytest")
    assert "tests took" in ci
