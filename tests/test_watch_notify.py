"""Issue 20 point 4: alerts to a real HTTP server on 127.0.0.1 (the {"text": ...} webhook format), a command run
with the report path, bounded retries, and an alert failure that never affects the run."""
from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from conftest import FIXTURES
from watchutil import run_watch

from doctor.live.watchdogs import Limits

CRASH_LOG = FIXTURES / "real-batch-div-train" / "log.txt"
HANG_LOG = FIXTURES / "real-hang-cut-after-step-3" / "log.txt"


@pytest.fixture
def hook():
    """A webhook on loopback: records every POST body; answers with the statuses in ``hook.statuses`` (then 200)."""
    bodies: list[dict] = []
    statuses: list[int] = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            n = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(n)
            code = statuses.pop(0) if statuses else 200
            if code == 200:
                bodies.append(json.loads(raw))
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):
            pass
    srv = HTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.bodies, srv.statuses = bodies, statuses
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/hook"
    yield srv
    srv.shutdown()
    srv.server_close()


def test_error_and_end_alerts_posted(tmp_path, hook):
    hook.statuses.extend([500])  # the first POST fails once: retried
    r = run_watch(tmp_path, ["--stderr-log", str(CRASH_LOG), "--pause", "3", "--then", "exit:1"], poll=0.2,
                  eval_interval=0.5, notify_url=hook.url, notify_backoff=0.1)
    assert r.code == 1
    texts = [b["text"] for b in hook.bodies]
    assert any("error GD101" in t for t in texts), texts
    end = [t for t in texts if "exit status 1" in t]
    assert end and "verdict: relaunch" in end[0]
    assert all(set(b) == {"text"} for b in hook.bodies)


def test_hang_alert_and_notify_cmd_gets_the_report(tmp_path, hook):
    out = tmp_path / "cmd.txt"
    cmd = f"{sys.executable} -c \"import os, sys; open({str(out)!r}, 'a').write(os.environ['GRPO_DOCTOR_EVENT'] + ' ' + sys.argv[1] + chr(10))\""
    r = run_watch(tmp_path, ["--log", str(HANG_LOG), "--then", "hang"], limits=Limits(steady=1.0, startup=60.0),
                  on_hang="stop", grace=1.0, poll=0.2, notify_url=hook.url, notify_cmd=cmd)
    assert any("no progress for" in b["text"] for b in hook.bodies)
    lines = out.read_text().splitlines()
    assert any(ln.startswith("hang ") for ln in lines) and any(ln.startswith("end ") for ln in lines)
    assert all(ln.split(" ", 1)[1] == r.watch.report_path for ln in lines)


def test_alert_failure_never_affects_the_run(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    r = run_watch(tmp_path, ["--stderr-log", str(CRASH_LOG), "--then", "exit:1"], notify_url=f"http://127.0.0.1:{port}/x",
                  notify_backoff=0.05, notify_cmd="/nonexistent/notify-cmd")
    assert r.code == 1
    assert r.report["findings"][0]["rule_id"] == "GD101"
    assert b"the alert could not be sent" in r.doc and b"--notify-cmd: could not run it" in r.doc
