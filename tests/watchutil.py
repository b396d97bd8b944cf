"""Helpers for the watch tests: run a real child under Watch with its output captured in files."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from doctor.live.supervisor import Watch, WatchOptions

CHILD = str(Path(__file__).resolve().parent / "children" / "child.py")


@dataclass
class Result:
    code: int
    out: bytes
    err: bytes     # the child's stderr, byte for byte
    doc: bytes     # the doctor's own messages (fd 2 of watch)
    watch: Watch
    report: dict


def run_watch(tmp: Path, child_args: list[str], argv: list[str] | None = None, **kw) -> Result:
    import json
    tmp.mkdir(parents=True, exist_ok=True)
    out_path, err_path, doc_path = tmp / "stdout.bin", tmp / "stderr.bin", tmp / "doctor.bin"
    with open(out_path, "wb") as out, open(err_path, "wb") as err, open(doc_path, "wb") as doc:
        opts = WatchOptions(run_dir=kw.pop("run_dir", str(tmp / "run")), preflight=kw.pop("preflight", False), gpu_interval=kw.pop("gpu_interval", 0),
                            out_fd=out.fileno(), err_fd=err.fileno(), **kw)
        w = Watch(argv or [sys.executable, CHILD, *child_args], opts)
        saved = os.dup(2)
        os.dup2(doc.fileno(), 2)  # doctor messages (our fd 2) apart from the child's stderr
        try:
            code = w.run()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    rep = json.loads(Path(w.report_path).read_text()) if os.path.exists(w.report_path) else {}
    return Result(code, out_path.read_bytes(), err_path.read_bytes(), doc_path.read_bytes(), w, rep)
