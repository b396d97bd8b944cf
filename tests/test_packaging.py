"""Packaging: SPDX licence with its text, URLs, classifiers, a changelog, one version (0.2.0) tagged v0.2.0 for
pre-commit's `rev:`, nvidia-ml-py (not the deprecated pynvml shim), and a base install slim enough for the
check-ckpt pre-commit hook (no numpy: the hook checks headers, the optional extra adds the library check)."""
from __future__ import annotations

import os
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from conftest import ROOT

import doctor

PY = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PY["project"]
DEPS = [d.split(";")[0].strip() for d in PROJECT["dependencies"]]
NAMES = {d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower() for d in DEPS}


def test_spdx_license_and_its_text():
    assert PROJECT["license"] == "Apache-2.0"
    assert any(r.replace(" ", "").startswith("setuptools>=77") for r in PY["build-system"]["requires"])
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert PROJECT.get("license-files") == ["LICENSE"]


def test_urls_classifiers_changelog():
    assert {"Homepage", "Changelog", "Issues"} <= set(PROJECT["urls"])
    cls = PROJECT["classifiers"]
    assert any(c.startswith("Programming Language :: Python :: 3") for c in cls)
    assert not any(c.startswith("License ::") for c in cls)  # PEP 639: the SPDX expression replaces them
    log = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{doctor.__version__}]" in log and "## [0.1.0]" in log


def test_one_version():
    # the README's pre-commit rev is checked by tests/test_papercuts.py (no release tag is published: a commit)
    assert PROJECT["version"] == doctor.__version__ == "0.2.0"


def test_nvml_dependency_is_nvidia_ml_py():
    assert "nvidia-ml-py" in NAMES and "pynvml" not in NAMES


def test_base_dependencies_are_slim_for_the_hook():
    assert not {"numpy", "safetensors", "torch"} & NAMES, NAMES
    assert {"numpy", "safetensors"} <= {d.split(">")[0].lower() for d in PROJECT["optional-dependencies"]["full"]}


BLOCK = "import sys; sys.modules['numpy'] = None; sys.modules['safetensors'] = None; "


def _run_blocked(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    code = BLOCK + "sys.argv = ['grpo-doctor', *sys.argv[1:]]; from doctor.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})


def test_check_ckpt_without_numpy_or_safetensors():
    bad = ROOT / "fixtures" / "ckpt" / "edge-truncated-safetensors"
    p = _run_blocked("check-ckpt", str(bad), "--format", "json")
    assert p.returncode == 1, p.stderr
    assert b"GD802" in p.stdout and b"truncated" in p.stdout
    good = ROOT / "fixtures" / "ckpt" / "real-lora-healthy"
    assert _run_blocked("check-ckpt", str(good)).returncode == 0


def test_scan_child_counts_lines_without_numpy(tmp_path):
    # the scanning child of big logs counts newlines; without numpy it must still count them (not die and leave
    # the parent to read the whole file again)
    log = tmp_path / "big.log"
    log.write_bytes(b"[INFO:swift] filler line\n" * 200_000 + b"no newline at the end")
    code = BLOCK + f"""
import mmap
from doctor.sources.scanchild import MappedScan
with open({str(log)!r}, "rb") as fh:
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    sc = MappedScan(mm, mm.size(), None, None, 1 << 20, 0)
    sc.STEP = 1 << 16
    print(sc._count(0, mm.size()), sc._count(10, 1000))
    sc.close()
"""
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [b"200000", str(log.read_bytes()[10:1000].count(b"\n")).encode()]
