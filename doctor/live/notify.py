"""Alerts of `watch --notify URL` / `--notify-cmd CMD`: the first error finding, a hang, and the end of the run with
its verdict.

URL gets an HTTP POST of ``{"text": ...}`` (the JSON that Slack's and most chat tools' incoming webhooks accept);
CMD runs with the report path as its last argument (and GRPO_DOCTOR_EVENT, GRPO_DOCTOR_TEXT in its environment).
Each alert is sent from a thread of its own with bounded retries; an alert that fails is said once on stderr and
never affects the run or watch's exit status.
"""
from __future__ import annotations

import http.client
import json
import os
import shlex
import subprocess
import threading
import time
import urllib.error
import urllib.request

from ..render.safe import clean
from .say import say

TRIES = 3
TIMEOUT = 10.0
CMD_TIMEOUT = 60.0


def slack_escape(text: str) -> str:
    """Slack's three control characters in message text (&, <, >); control characters are dropped by clean."""
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Notifier:
    def __init__(self, url: str | None, cmd: str | None, backoff: float = 1.0):
        self.url = url
        self.cmd = cmd
        self.backoff = backoff
        self.threads: list[tuple[str, threading.Thread]] = []
        self.sent: list[str] = []      # events sent (tests, report)
        self.failed: list[str] = []
        self.lock = threading.Lock()

    def alert(self, event: str, text: str, report_path: str | None) -> None:
        t = threading.Thread(target=self._send, args=(event, text, report_path), name=f"grpo-doctor-alert-{event}",
                             daemon=True)
        self.threads.append((event, t))
        t.start()

    def wait(self, timeout: float = 30.0, stop: threading.Event | None = None) -> list[str]:
        """At the end of the run: give pending alerts a bounded time to go out; ``stop`` (set by a SIGINT/SIGTERM to
        watch after the run ended) ends the wait at once. Each alert still out is said as not delivered (its
        thread is a daemon: it dies with watch). Returns those events."""
        end = time.monotonic() + timeout
        for _event, t in self.threads:
            # in slices: the user's Ctrl-C or kill must end watch now, not after the webhook's timeouts
            while t.is_alive() and not (stop is not None and stop.is_set()) and time.monotonic() < end:
                t.join(min(0.1, max(0.0, end - time.monotonic())))
        pending = [event for event, t in self.threads if t.is_alive()]
        why = "watch was told to stop" if stop is not None and stop.is_set() else f"no answer within {timeout:g} s"
        for event in pending:
            say(f"--notify: the {event} alert was not delivered ({why}); the run's status is not affected")
        return pending

    def _send(self, event: str, text: str, report_path: str | None) -> None:
        ok = True
        try:
            if self.url:
                ok = self._post(text) and ok
            if self.cmd:
                ok = self._run(event, text, report_path) and ok
        except Exception as e:  # noqa: BLE001 - an alert thread never dies with a traceback on the terminal
            say(f"--notify: the {event} alert could not be sent ({type(e).__name__}); the run is not affected")
            ok = False
        with self.lock:
            (self.sent if ok else self.failed).append(event)

    def _post(self, text: str) -> bool:
        body = json.dumps({"text": slack_escape(text)}).encode()
        err = ""
        for i in range(TRIES):
            req = urllib.request.Request(self.url or "", data=body, headers={"Content-Type": "application/json"},
                                         method="POST")
            try:
                with urllib.request.urlopen(req, timeout=TIMEOUT) as r:  # noqa: S310 - the user's own URL
                    if 200 <= r.status < 300:
                        return True
                    err = f"HTTP {r.status}"
            except urllib.error.HTTPError as e:
                err = f"HTTP {e.code}"
                if 400 <= e.code < 500 and e.code != 429:
                    break  # the webhook refuses this message: retrying will not help
            except http.client.HTTPException as e:
                # not an HTTP answer (BadStatusLine, LineTooLong...): its text would carry the server's raw bytes
                err = f"the endpoint did not answer HTTP ({type(e).__name__})"
            except (urllib.error.URLError, OSError, ValueError) as e:
                err = str(getattr(e, "reason", None) or e)
            if i + 1 < TRIES:
                time.sleep(self.backoff * (2 ** i))
        say(f"--notify: the alert could not be sent ({err[:160]}); the run is not affected")
        return False

    def _run(self, event: str, text: str, report_path: str | None) -> bool:
        try:
            argv = shlex.split(self.cmd or "") + ([report_path] if report_path else [])
            env = {**os.environ, "GRPO_DOCTOR_EVENT": event, "GRPO_DOCTOR_TEXT": clean(text)[:4000]}
            r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=CMD_TIMEOUT, check=False)
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            say(f"--notify-cmd: could not run it ({getattr(e, 'strerror', None) or e}); the run is not affected")
            return False
        if r.returncode != 0:
            say(f"--notify-cmd exited with status {r.returncode}; the run is not affected")
            return False
        return True
