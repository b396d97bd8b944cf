"""Parsing of GitHub REST API responses into draft known-issues entries (pure functions, no network).

Used by tools/refresh_known_issues.py; tested on recorded responses in fixtures/known-issues/api/.
A draft carries what can be read mechanically (thread id, title, state, error signatures from the posted logs,
versions, a guessed category, how sure) and ``"review": "pending"``: the resolution is written by a maintainer
in their own words after reading the thread, and only reviewed rows go into the shipped index.
"""
from __future__ import annotations

import re
from typing import Any

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_EXC = re.compile(r"^(?:\[rank\d+\]:\s*)?(?:\([^)]*pid=\d+\)\s*)?(?:ERROR [\d-]+ [\d:.]+ \[[\w./-]+:\d+\]\s*)?"
                  r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Timeout)|AssertionError)"
                  r":\s*(\S.{5,400})$")
_LOGLINE = re.compile(r"(Watchdog caught collective operation timeout.*|The client socket has timed out.*"
                      r"|No training was carried out.*|Input prompt \(\d+ tokens\) is too long.*"
                      r"|Engine core proc \S+ died unexpectedly.*)")
_VERSION = re.compile(r"\b(ms-swift|swift|trl|vllm|deepspeed|transformers|torch|peft|accelerate)\s*(?:==|:|\s)\s*"
                      r"v?(\d+\.\d+(?:\.\d+)?(?:\.?(?:post|dev|rc)\d*)?)", re.IGNORECASE)
MAINTAINER = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
_THANKS = re.compile(r"\b(solved|works now|it works|fixed|resolved|thank(s| you))\b|解决|可以了|好了|谢谢", re.IGNORECASE)
CATEGORY_WORDS = [  # first match wins: specific before generic
    ("vllm-oom-or-kv-cache", ("kv cache", "gpu_memory_utilization", "_initialize_kv_caches", "cumem")),
    ("cuda-oom", ("out of memory", "outofmemoryerror")),
    ("batch-divisibility", ("evenly divisible", "num_generations", "is invalid for input of size")),
    ("nccl-timeout", ("watchdog caught collective", "nccl timeout", "collective operation timeout")),
    ("hang-at-start", ("socket has timed out", "tcpstore", "init_communicator")),
    ("device-mismatch", ("same device",)),
    ("deepspeed-config-error", ("deepspeed", "zero3", "zero_stage")),
    ("vllm-version-incompatible", ("vllm version", "unexpected keyword argument", "no module named 'vllm")),
    ("import-or-dependency-error", ("importerror", "modulenotfounderror", "cannot import name", "has no attribute")),
    ("loss-nan-or-inf", ("nan", "inf")),
    ("reward-function-error", ("reward_func", "reward function")),
    ("dataset-or-template-error", ("keyerror", "dataset", "template")),
]


def thread_id(issue: dict[str, Any]) -> str:
    """'owner/repo#N' from an issue object (its html_url or repository_url)."""
    m = re.search(r"github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)", issue.get("html_url", ""))
    if m:
        return f"{m.group(1)}#{m.group(2)}"
    repo = issue.get("repository_url", "").split("/repos/", 1)[-1]
    return f"{repo}#{issue['number']}"


def signatures(text: str, limit: int = 3) -> list[dict[str, Any]]:
    """Exception lines and key log lines from the code blocks of a post (the last ones first: a traceback ends
    with its cause)."""
    blocks = _FENCE.findall(text) or [text]
    found: list[dict[str, Any]] = []
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            m = _EXC.match(line)
            sig = {"type": m.group(1), "message": m.group(2).strip()} if m else None
            if sig is None:
                lm = _LOGLINE.search(line)
                sig = {"type": None, "message": lm.group(1).strip()} if lm else None
            if sig is not None and sig not in found:
                found.append(sig)
    return list(reversed(found))[:limit]


def versions(text: str) -> str:
    """'ms-swift 3.8.1, trl 0.20.0, vllm 0.10.1' from what a post states (first value per package)."""
    seen: dict[str, str] = {}
    for m in _VERSION.finditer(text):
        name = m.group(1).lower()
        name = "ms-swift" if name == "swift" else name
        seen.setdefault(name, m.group(2))
    order = ["ms-swift", "trl", "vllm", "deepspeed", "transformers", "torch", "peft", "accelerate"]
    return ", ".join(f"{n} {seen[n]}" for n in order if n in seen)


def category(text: str) -> str:
    low = text.lower()
    for cat, words in CATEGORY_WORDS:
        if any(w in low for w in words):
            return cat
    return "other"


def confidence(issue: dict[str, Any], comments: list[dict[str, Any]]) -> str:
    """confirmed: the reporter thanks or says it works after someone answered; maintainer: a maintainer answered
    (or a pull request closed it); unresolved otherwise."""
    author = (issue.get("user") or {}).get("login")
    answered = False
    maintainer = False
    for c in comments:
        who = (c.get("user") or {}).get("login")
        if who != author:
            answered = True
            maintainer = maintainer or c.get("author_association") in MAINTAINER
        elif answered and _THANKS.search(c.get("body") or ""):
            return "confirmed"
    return "maintainer" if maintainer else "unresolved"


def draft(issue: dict[str, Any], comments: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A draft entry from an issue and its comments; None for a pull request or a thread without any log."""
    if "pull_request" in issue:
        return None
    posts = [issue.get("body") or ""] + [c.get("body") or "" for c in comments]
    sigs: list[dict[str, Any]] = []
    for post in posts:
        for s in signatures(post):
            if s not in sigs:
                sigs.append(s)
    if not sigs:
        return None
    text = issue.get("title", "") + "\n" + "\n".join(posts)
    return {"thread": thread_id(issue), "title": issue.get("title", ""), "state": issue.get("state", "open"),
            "category": category(issue.get("title", "") + "\n" + " ".join(s["message"] for s in sigs[:2])),
            "versions": versions(text), "signatures": sigs[:3], "resolution": "",
            "confidence": confidence(issue, comments), "updated_at": issue.get("updated_at", ""),
            "review": "pending"}


def is_grpo(issue: dict[str, Any], words: tuple[str, ...] = ("grpo", "rlhf", "vllm", "rollout", "reward")) -> bool:
    text = (issue.get("title", "") + " " + (issue.get("body") or "")[:5000]).lower()
    return any(w in text for w in words)
