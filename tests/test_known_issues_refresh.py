"""tools/refresh_known_issues.py on recorded GitHub REST responses (fixtures/known-issues/api/): parsing into
draft rows, pagination by Link header, incremental `since`, rate limits (wait, never spin), held-out skipping,
and build validation. No network: the HTTP getter is replaced by the recordings."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "fixtures" / "known-issues" / "api"
sys.path.insert(0, str(ROOT / "tools"))
import known_issues_parse as parse  # noqa: E402
import refresh_known_issues as tool  # noqa: E402

REPO = "example-org/grpo-demo"


def _rec(name: str) -> tuple[int, dict, bytes]:
    return 200, json.loads((API / f"{name}.headers.json").read_text()), (API / f"{name}.json").read_bytes()


class Recorded:
    """Serves the recordings by URL; remembers the URLs asked for."""

    def __init__(self, extra: list | None = None):
        self.urls: list[str] = []
        self.queue = list(extra or [])

    def __call__(self, url: str, headers: dict) -> tuple[int, dict, bytes]:
        self.urls.append(url)
        assert headers["Accept"] == "application/vnd.github+json"
        if self.queue:
            return self.queue.pop(0)
        if "/issues/101/comments" in url:
            return _rec("comments-101")
        if "page=2" in url:
            return _rec("issues-page2")
        if f"/repos/{REPO}/issues?" in url:
            return _rec("issues-page1")
        raise AssertionError(f"unexpected URL {url}")


def test_draft_reads_signature_versions_and_confirmation():
    issue = json.loads((API / "issues-page1.json").read_text())[0]
    comments = json.loads((API / "comments-101.json").read_text())
    row = parse.draft(issue, comments)
    assert row["thread"] == f"{REPO}#101" and row["state"] == "closed" and row["review"] == "pending"
    assert row["signatures"][0]["type"] == "ValueError"
    assert row["signatures"][0]["message"].startswith("The global train batch size (3 x 1) must be evenly divisible")
    assert row["versions"] == "ms-swift 3.8.1, trl 0.20.0, vllm 0.10.1"
    assert row["category"] == "batch-divisibility"
    assert row["confidence"] == "confirmed"   # the reporter says it works after a maintainer's answer
    assert row["resolution"] == ""            # written by a person, never copied
    assert parse.confidence(issue, comments[:1]) == "maintainer"
    assert parse.confidence(issue, []) == "unresolved"


def test_pull_requests_and_threads_without_logs_give_no_row():
    page1 = json.loads((API / "issues-page1.json").read_text())
    page2 = json.loads((API / "issues-page2.json").read_text())
    assert parse.draft(page1[1], []) is None          # a pull request
    assert parse.draft(page2[0], []) is None          # a question without any log


def test_vllm_worker_prefixed_error_is_read():
    issue = json.loads((API / "issues-page2.json").read_text())[1]
    row = parse.draft(issue, [])
    assert row["signatures"][0]["type"] == "torch.OutOfMemoryError"
    assert row["category"] in ("cuda-oom", "vllm-oom-or-kv-cache")


def test_fetch_pages_since_and_skips(monkeypatch):
    get = Recorded()
    slept: list[float] = []
    client = tool.Client("t0ken", get=get, sleep=slept.append, clock=lambda: 1772553000.0)
    rows, newest = tool.fetch(client, REPO, "2026-03-01T00:00:00Z", heldout=set())
    assert [r["thread"] for r in rows] == [f"{REPO}#101", f"{REPO}#104"]
    assert newest == "2026-03-06T11:20:00Z"
    assert "since=2026-03-01T00:00:00Z" in get.urls[0] and any("page=2" in u for u in get.urls)
    # comments-101 came back with X-RateLimit-Remaining 0: the client waited for the reset before going on
    assert slept and slept[0] == pytest.approx(1772553600 - 1772553000 + 1)


def test_heldout_thread_is_never_fetched_or_written():
    get = Recorded()
    held = {hashlib.sha256(f"{REPO}#101".lower().encode()).hexdigest()}
    client = tool.Client(None, get=get, sleep=lambda s: None, clock=lambda: 0.0)
    rows, _ = tool.fetch(client, REPO, None, heldout=held)
    assert [r["thread"] for r in rows] == [f"{REPO}#104"]
    assert not any("/issues/101/comments" in u for u in get.urls)


def test_rate_limited_response_waits_then_retries():
    limited = (403, json.loads((API / "rate-limited.headers.json").read_text()), (API / "rate-limited.json").read_bytes())
    get = Recorded(extra=[limited])
    slept: list[float] = []
    client = tool.Client(None, get=get, sleep=slept.append, clock=lambda: 1772553590.0, max_wait=30)
    data, _ = client.get(f"https://api.github.com/repos/{REPO}/issues?state=all")
    assert isinstance(data, list) and len(get.urls) == 2
    assert slept == [11.0]


def test_retry_after_is_honoured_and_other_errors_raise():
    get = Recorded(extra=[(429, {"Retry-After": "7"}, b"{}"), (500, {}, b"oops")])
    slept: list[float] = []
    client = tool.Client(None, get=get, sleep=slept.append)
    with pytest.raises(RuntimeError, match="HTTP 500"):
        client.get("https://api.github.com/x")
    assert slept == [7.0]


def test_next_link():
    h = json.loads((API / "issues-page1.headers.json").read_text())
    assert "page=2" in tool.next_link(h["Link"])
    assert tool.next_link(json.loads((API / "issues-page2.headers.json").read_text())["Link"]) == ""


def _write(src: Path, rows: list[dict]) -> None:
    (src / "meta.json").write_text(json.dumps({"built": "2026-03-07", "source": "test"}))
    (src / "batch-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


GOOD = {"thread": "x/y#5", "title": "t", "state": "open", "category": "cuda-oom", "versions": "",
        "signatures": [{"type": "RuntimeError", "message": "CUDA out of memory"}], "resolution": "",
        "confidence": "unresolved"}


def test_build_validates_and_skips_pending(tmp_path):
    _write(tmp_path, [GOOD, dict(GOOD, thread="x/y#6", review="pending")])
    doc = tool.build(src=tmp_path, out=tmp_path / "o.gz", heldout=set(), categories={"cuda-oom"})
    assert [t["thread"] for t in doc["threads"]] == ["x/y#5"] and doc["meta"]["built"] == "2026-03-07"
    _write(tmp_path, [dict(GOOD, confidence="maintainer")])
    with pytest.raises(ValueError, match="resolved without a resolution"):
        tool.build(src=tmp_path, out=tmp_path / "o.gz", heldout=set(), categories={"cuda-oom"})
    _write(tmp_path, [GOOD])
    with pytest.raises(ValueError, match="held-out"):
        tool.build(src=tmp_path, out=tmp_path / "o.gz", heldout={hashlib.sha256(b"x/y#5").hexdigest()})
