"""Issue 18 points 6 and 8: watch with hostile arguments and under a terminal."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_non_utf8_argument_and_run_dir_keep_status_and_report(tmp_path):
    run_dir = os.path.join(os.fsencode(tmp_path), b"run\xff")
    child = b"import sys; sys.exit(3)"
    argv = [os.fsencode(sys.executable), b"-m", b"doctor.cli", b"watch", b"--no-preflight", b"--gpu-interval", b"0",
            b"--run-dir", run_dir, b"--", os.fsencode(sys.executable), b"-c", child, b"arg\xfe\xff"]
    p = subprocess.run(argv, capture_output=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, timeout=120,
                       check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 3, err  # the child's own status, not 2 ("internal error in watch")
    assert "internal error" not in err and "Traceback" not in err
    names = os.listdir(run_dir)
    assert not [n for n in names if b".tmp" in n], names
    report = [n for n in names if n.startswith(b"grpo-doctor-report") and n.endswith(b".json")]
    assert report, names
    with open(os.path.join(run_dir, report[0]), "rb") as f:
        doc = json.loads(f.read())
    assert any("run\\xff" in i["path"] for i in doc["inputs"]), doc["inputs"]
