"""The view across a store's records: failures by category, rule, state and day, GPU-hours lost, the recurring
failures with an example job each, the users and partitions most hit, and the jobs that failed like a given one."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

TOP = 10


def category_of(rec: dict) -> str:
    """The primary finding's category; a job that the analysis could not explain counts under its state, so that
    timeouts and cancels without a finding are still visible."""
    p = rec.get("primary") or {}
    return p.get("category") or f"(no finding: {(rec.get('job') or {}).get('state') or 'unknown'})"


def _hours(rec: dict) -> float:
    v = rec.get("gpu_hours")
    return float(v) if isinstance(v, (int, float)) else 0.0


def _example(rec: dict) -> dict:
    job = rec.get("job") or {}
    ev = ((rec.get("primary") or {}).get("evidence") or {})
    return {"job": job.get("id"), "name": job.get("name"), "user": job.get("user"), "state": job.get("state"),
            "recorded_at": rec.get("recorded_at"), "evidence": ev.get("text"), "record": rec.get("_file"),
            "report": rec.get("report")}


def _ranked(counts: Counter, hours: dict[str, float], key: str) -> list[dict]:
    return [{key: k, "jobs": n, "gpu_hours": round(hours.get(k, 0.0), 2)}
            for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], -hours.get(kv[0], 0.0), kv[0]))]


def summarize(records: list[dict], like: str | None = None) -> dict[str, Any]:
    """``records`` newest first (store.load). ``like``: a job id whose primary rule the other jobs are matched on."""
    cats: Counter = Counter()
    cat_hours: dict[str, float] = defaultdict(float)
    rules: Counter = Counter()
    rule_info: dict[str, dict] = {}
    states: Counter = Counter()
    users: Counter = Counter()
    user_hours: dict[str, float] = defaultdict(float)
    parts: Counter = Counter()
    part_hours: dict[str, float] = defaultdict(float)
    days: dict[str, Counter] = defaultdict(Counter)
    day_rules: dict[str, Counter] = defaultdict(Counter)
    for rec in records:
        job, prim, h = rec.get("job") or {}, rec.get("primary") or {}, _hours(rec)
        cat = category_of(rec)
        cats[cat] += 1
        cat_hours[cat] += h
        states[job.get("state") or "unknown"] += 1
        if prim.get("rule_id"):
            rules[prim["rule_id"]] += 1
            rule_info.setdefault(prim["rule_id"], {"title": prim.get("title"), "category": prim.get("category"),
                                                   "example": _example(rec)})   # newest first: the latest example
        u, p = job.get("user") or "unknown", job.get("partition") or "unknown"
        users[u] += 1
        user_hours[u] += h
        parts[p] += 1
        part_hours[p] += h
        day = str(rec.get("recorded_at") or "")[:10]
        days[day][cat] += 1
        if prim.get("rule_id"):
            day_rules[day][prim["rule_id"]] += 1
    out: dict[str, Any] = {
        "jobs": len(records),
        "gpu_hours_lost": round(sum(cat_hours.values()), 2),
        "by_category": _ranked(cats, cat_hours, "category"),
        "by_rule": [{"rule_id": r, "jobs": n, **{k: v for k, v in rule_info[r].items() if k != "example"}}
                    for r, n in rules.most_common()],
        "by_state": [{"state": s, "jobs": n} for s, n in states.most_common()],
        "by_day": [{"day": d, "jobs": sum(c.values()), "by_category": dict(c.most_common()),
                    "by_rule": dict(day_rules[d].most_common())} for d, c in sorted(days.items())],
        "top_recurring": [{"rule_id": r, "jobs": n, "title": rule_info[r]["title"],
                           "category": rule_info[r]["category"], "example": rule_info[r]["example"]}
                          for r, n in rules.most_common(TOP)],
        "users": _ranked(users, user_hours, "user")[:TOP],
        "partitions": _ranked(parts, part_hours, "partition")[:TOP],
    }
    if like is not None:
        out["like"] = like_job(records, like)
    return out


def like_job(records: list[dict], job_id: str) -> dict[str, Any]:
    """The jobs whose primary finding has the same rule as job ``job_id``'s (the same failure, other runs)."""
    target = next((r for r in records if str((r.get("job") or {}).get("id")) == job_id), None)
    if target is None:
        return {"job": job_id, "found": False, "jobs": []}
    rule = (target.get("primary") or {}).get("rule_id")
    same = [_example(r) for r in records if r is not target and rule is not None
            and (r.get("primary") or {}).get("rule_id") == rule]
    return {"job": job_id, "found": True, "rule_id": rule, "category": category_of(target), "jobs": same}
