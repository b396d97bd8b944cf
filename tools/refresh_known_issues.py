"""Rebuild or extend the known-issues index (doctor/data/known_issues.json.gz). For maintainers.

    python tools/refresh_known_issues.py build [--heldout FILE]
        Compile the reviewed entries (tools/known_issues/*.jsonl, written and paraphrased by people) into the
        shipped index: validated, one row per thread (a later file wins), sorted, each signature with its exact key
        and word list precomputed (so loading it costs no regex work), gzip without a timestamp, so the same
        entries give a byte-identical file. The build date and sources come from tools/known_issues/meta.json.
    python tools/refresh_known_issues.py fetch REPO [REPO...] [--since ISO] [--out FILE]
        Pull issues updated since the last fetch (per repository, kept in tools/known_issues/state.json) from
        GitHub's REST API (token from $GITHUB_TOKEN; rate limits respected: waits for X-RateLimit-Reset or
        Retry-After) and write draft rows with "review": "pending" to FILE (default tools/known_issues/drafts.jsonl).
        A maintainer reads each thread, writes the resolution in their own words, checks the category, removes
        the "review" key and moves the row into a batch file; build ignores rows still pending.

Threads listed (as sha256 of the lowercase id) in the held-out file are never written, by either command.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from known_issues_parse import draft, is_grpo  # noqa: E402

ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from doctor.known.normalise import signature, words  # noqa: E402

SRC = HERE / "known_issues"
OUT = ROOT / "doctor" / "data" / "known_issues.json.gz"
API = "https://api.github.com"
REQUIRED = ("thread", "title", "state", "category", "versions", "signatures", "resolution", "confidence")
CONFIDENCES = ("confirmed", "maintainer", "unresolved")


def heldout_hashes(path: Path | None) -> set[str]:
    if path is None:
        for cand in (ROOT.parent / "shared" / "heldout-threads.sha256", ROOT / "fixtures" / "known-issues" /
                     "heldout-threads.sha256"):
            if cand.is_file():
                path = cand
                break
    return set(path.read_text().split()) if path is not None and path.is_file() else set()


def is_heldout(thread: str, hashes: set[str]) -> bool:
    return hashlib.sha256(thread.lower().encode()).hexdigest() in hashes


def validate(row: dict[str, Any], categories: set[str] | None = None) -> list[str]:
    errs = [f"missing {k}" for k in REQUIRED if k not in row]
    if errs:
        return errs
    if "#" not in row["thread"] or not row["thread"].split("#", 1)[1].isdigit():
        errs.append("thread is not owner/repo#N")
    if row["confidence"] not in CONFIDENCES:
        errs.append(f"confidence {row['confidence']!r}")
    if categories is not None and row["category"] not in categories:
        errs.append(f"category {row['category']!r}")
    if not row["signatures"] or not all(s.get("message") for s in row["signatures"]):
        errs.append("no signature")
    if row["confidence"] != "unresolved" and not row["resolution"]:
        errs.append("resolved without a resolution")
    return errs


def load_rows(src: Path = SRC) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for f in sorted(src.glob("*.jsonl")):
        if f.name.startswith("drafts"):
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                if row.get("review") == "pending":
                    continue
                row["_where"] = f"{f.name}:{n}"
                rows[row["thread"]] = row
    return list(rows.values())


def build(src: Path = SRC, out: Path = OUT, heldout: set[str] | None = None,
          categories: set[str] | None = None) -> dict[str, Any]:
    """Write the index; returns its document. Raises ValueError on an invalid or held-out row."""
    meta = json.loads((src / "meta.json").read_text(encoding="utf-8"))
    threads = []
    for row in load_rows(src):
        where = row.pop("_where")
        errs = validate(row, categories)
        if errs:
            raise ValueError(f"{where}: {row.get('thread')}: {'; '.join(errs)}")
        if heldout and is_heldout(row["thread"], heldout):
            raise ValueError(f"{where}: a held-out thread may not be shipped")
        entry = {k: row[k] for k in REQUIRED}
        entry["signatures"] = [dict(sig, key=signature(sig.get("type"), sig["message"]), words=words(sig["message"]))
                               for sig in row["signatures"]]
        threads.append(entry)
    threads.sort(key=lambda r: (r["thread"].split("#")[0].lower(), int(r["thread"].split("#")[1])))
    doc = {"meta": {**meta, "format": 1, "threads": len(threads)}, "threads": threads}
    raw = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    out.write_bytes(buf.getvalue())
    return doc


# ------------------------------------------------------------------------------------------------------ fetch

Getter = Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes]]


def urllib_get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers or {}), e.read() or b""


class Client:
    """GitHub REST with rate limits respected; ``get`` and ``sleep`` are injectable (tests use recordings)."""

    def __init__(self, token: str | None = None, get: Getter = urllib_get,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                 max_wait: float = 3600.0):
        self.headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                        "User-Agent": "grpo-doctor-refresh-known-issues"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._get, self.sleep, self.clock, self.max_wait = get, sleep, clock, max_wait

    def get(self, url: str) -> tuple[Any, dict[str, str]]:
        for _ in range(5):
            status, headers, body = self._get(url, self.headers)
            h = {k.lower(): v for k, v in headers.items()}
            if status == 200:
                if h.get("x-ratelimit-remaining") == "0":  # the next call would be refused: wait now
                    self._wait(h)
                return json.loads(body.decode("utf-8")), h
            if status in (403, 429) and ("retry-after" in h or h.get("x-ratelimit-remaining") == "0"):
                self._wait(h)
                continue
            raise RuntimeError(f"GET {url}: HTTP {status}")
        raise RuntimeError(f"GET {url}: still rate limited after 5 tries")

    def _wait(self, h: dict[str, str]) -> None:
        if "retry-after" in h:
            delay = float(h["retry-after"])
        else:
            delay = float(h.get("x-ratelimit-reset", self.clock() + 60)) - self.clock() + 1
        self.sleep(min(max(delay, 1.0), self.max_wait))

    def pages(self, url: str):
        while url:
            data, h = self.get(url)
            yield from data
            url = next_link(h.get("link", ""))


def next_link(link: str) -> str:
    for part in link.split(","):
        if 'rel="next"' in part:
            return part.split(";", 1)[0].strip().strip("<>")
    return ""


def fetch(client: Client, repo: str, since: str | None, heldout: set[str]) -> tuple[list[dict[str, Any]], str]:
    """Draft rows for the GRPO-related issues of ``repo`` updated since ``since``; and the newest updated_at."""
    url = f"{API}/repos/{repo}/issues?state=all&sort=updated&direction=asc&per_page=100"
    if since:
        url += f"&since={since}"
    rows, newest = [], since or ""
    for issue in client.pages(url):
        newest = max(newest, issue.get("updated_at", ""))
        if "pull_request" in issue or not is_grpo(issue):
            continue
        tid = f"{repo}#{issue['number']}"
        if is_heldout(tid, heldout):
            continue
        comments = list(client.pages(issue["comments_url"] + "?per_page=100")) if issue.get("comments") else []
        row = draft(issue, comments)
        if row is not None:
            rows.append(row)
    return rows, newest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--heldout", type=Path)
    f = sub.add_parser("fetch")
    f.add_argument("repos", nargs="+")
    f.add_argument("--since")
    f.add_argument("--out", type=Path, default=SRC / "drafts.jsonl")
    f.add_argument("--heldout", type=Path)
    a = ap.parse_args(argv)
    held = heldout_hashes(a.heldout)
    if a.cmd == "build":
        from doctor.registry import CATEGORIES
        doc = build(heldout=held, categories=set(CATEGORIES))
        print(f"{OUT}: {doc['meta']['threads']} threads")
        return 0
    state_path = SRC / "state.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    client = Client(os.environ.get("GITHUB_TOKEN"))
    with a.out.open("a", encoding="utf-8") as out:
        for repo in a.repos:
            rows, newest = fetch(client, repo, a.since or state.get(repo), held)
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            state[repo] = newest
            print(f"{repo}: {len(rows)} draft rows, updated through {newest}")
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
