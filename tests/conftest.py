from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
# verbatim copies of the shared real-swift captures that unit tests cut at fixed lines (see its README)
REAL_SWIFT = ROOT / "fixtures" / "real-swift"

os.environ.setdefault("NO_COLOR", "1")
# the user's own ~/.config/grpo-doctor/config.toml (doctor/settings.py) must not shape the suite's reports; an empty
# folder outside the tree (Chromium, started by the HTML tests, writes its own settings under XDG_CONFIG_HOME)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="grpo-doctor-tests-config-")
# the caches a run writes (doctor/cachefiles.py) go to this session's own folder, not the user's ~/.cache: set before
# any test module is collected (some load the catalog at import) and inherited by the subprocesses tests start
SESSION_CACHE = tempfile.mkdtemp(prefix="grpo-doctor-tests-cache-")
os.environ["XDG_CACHE_HOME"] = SESSION_CACHE
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_unconfigure(config) -> None:
    shutil.rmtree(SESSION_CACHE, ignore_errors=True)


def drain_pty(master: int) -> bytes:
    """Everything written to a pseudo-terminal until its other side closes (Linux ends the read with EIO)."""
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


# ---- feeding text through the real engine (one set of helpers for every rule test) ----

def lines_of(text: str, path: str = "log.txt"):
    """The LogLines the real reader makes of ``text`` (as if it were the file ``path``)."""
    import io

    from doctor.sources.logtext import LineReader
    return LineReader(path, [0]).lines(io.BytesIO(text.encode()))


def feed_text(session, text: str, path: str = "log.txt") -> None:
    for line in lines_of(text, path):
        session.feed_line(line)


def run_text(text: str = "", *, command: str | None = None, rules=None, path: str = "log.txt"):
    """The findings of a session over ``text`` (and a launch ``command``), with the whole catalog or the rules
    given (ids or RuleMeta)."""
    from doctor.engine import Session
    from doctor.registry import find_rule, load_catalog
    if rules is None:
        metas = load_catalog()
    else:
        metas = [find_rule(r) if isinstance(r, str) else r for r in rules]
    s = Session(metas)
    if command:
        s.run.add_command(command)
    feed_text(s, text, path)
    return s.finish()


def fires(rule, text: str, path: str = "<example>") -> bool:
    """Does the rule (id or RuleMeta) fire on this text, fed alone through the real engine?"""
    rid = rule if isinstance(rule, str) else rule.id
    return any(f.rule_id == rid for f in run_text(text, rules=[rule], path=path))


def line_and_scan(data: bytes, tmp_path, **opts):
    """The same bytes through the line-by-line path and the chunk scanner (``opts``: its options), each into a
    new Session: (line session, scanned session, line counter, scan counter, the scanner's statistics)."""
    import io

    from doctor.engine import Session
    from doctor.sources import scan
    from doctor.sources.logtext import LineReader

    p = tmp_path / "log.txt"
    p.write_bytes(data)
    a, ca = Session(), [0]
    a.begin_log("log.txt")
    for line in LineReader("log.txt", ca).lines(io.BytesIO(data)):
        a.feed_line(line)
    b, cb = Session(), [0]
    with open(p, "rb") as f:
        stats = scan.scan_file(b, "log.txt", f, cb, **opts)
    return a, b, ca, cb, stats


def known_thread(thread: str, typ: str | None, message: str, resolution: str = "", category: str = "other",
                 versions: str = "", confidence: str = "unresolved", title: str = "t") -> dict:
    """One thread of the known-issues index, as tools/known_issues writes it."""
    return {"thread": thread, "title": title, "state": "closed", "category": category, "versions": versions,
            "signatures": [{"type": typ, "message": message}], "resolution": resolution, "confidence": confidence}


@pytest.fixture
def index_of(monkeypatch):
    """Use these threads as the whole known-issues index for the test."""
    from doctor import known
    from doctor.known import index as kindex

    def use(*threads: dict) -> None:
        monkeypatch.setattr(kindex, "_index", kindex.Index({"meta": {}, "threads": list(threads)}))
        known._lookup.cache_clear()
    yield use
    known._lookup.cache_clear()



@pytest.fixture(autouse=True)
def _word_reading(request, monkeypatch):
    """The category-from-words post-pass (doctor/classify/category_words.py) is off in-process unless a test module
    sets ``WORD_READING = True``: the other tests are about what a rule or reading says itself, and its model has
    read every fixture (tests/test_category_words.py tests it; the golden reports are taken with it)."""
    if not getattr(request.module, "WORD_READING", False):
        monkeypatch.setattr("doctor.classify.category_words.closest", lambda texts: None)
