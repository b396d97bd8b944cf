"""The fleet report as text or as one self-contained HTML page (no script, no request: a Content-Security-Policy
forbids every load; every string from a record is escaped, records are written by hooks from job logs)."""
from __future__ import annotations

import html
from typing import Any

from ..render.safe import clean

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'"
_CSS = """body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1140px;
padding:16px 20px;color:#1b1b1b;background:#fff}h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;
border-bottom:1px solid #ddd}.meta{color:#555;font-size:12.5px}table{border-collapse:collapse;margin:6px 0}
td,th{border-bottom:1px solid #eee;padding:3px 10px;text-align:left;vertical-align:top}th{font-size:12.5px;color:#444}
td.n{text-align:right;font-variant-numeric:tabular-nums}.bar{display:inline-block;height:10px;background:#c62828;
vertical-align:middle}code{font-size:12px;background:#f6f6f6;padding:1px 3px;word-break:break-all}"""


def _e(v: Any) -> str:
    return html.escape(clean("" if v is None else v), quote=True)


def text(doc: dict) -> str:
    lines = [f"grpo-doctor fleet report: {doc['store']}" + (f" (since {doc['since']})" if doc.get("since") else ""),
             f"{doc['jobs']} failed jobs, {doc['gpu_hours_lost']:g} GPU-hours lost"]
    if not doc["jobs"]:
        lines.append("no records" + (" in that period" if doc.get("since") else ""))
    sections = (("By category", "by_category", "category"), ("Users most hit", "users", "user"),
                ("Partitions most hit", "partitions", "partition"))
    for title, key, name in sections[:1]:
        lines += ["", f"{title}:"] + [f"  {r['jobs']:>5}  {r['gpu_hours']:>9g} GPU-h  {clean(r[name])}"
                                      for r in doc[key]]
    if doc["by_rule"]:
        lines += ["", "By rule:"] + [f"  {r['jobs']:>5}  {r['rule_id']}  {clean(r['title'])}" for r in doc["by_rule"]]
    if len(doc["by_day"]) > 1:
        lines += ["", "By day:"] + [f"  {clean(d['day'])}  {d['jobs']:>5}  " + ", ".join(
            f"{clean(c)} {n}" for c, n in d["by_category"].items()) for d in doc["by_day"]]
    if doc["top_recurring"]:
        lines += ["", "Top recurring (latest example):"]
        for r in doc["top_recurring"]:
            ex = r["example"]
            lines.append(f"  {r['rule_id']} x{r['jobs']}: job {clean(ex['job'])} ({clean(ex['name'] or '-')}, "
                         f"{clean(ex['user'] or '-')})" + (f": {clean(ex['evidence'])[:160]}" if ex["evidence"] else ""))
    for title, key, name in sections[1:]:
        if doc[key]:
            lines += ["", f"{title}:"] + [f"  {r['jobs']:>5}  {r['gpu_hours']:>9g} GPU-h  {clean(r[name])}"
                                          for r in doc[key]]
    if doc.get("like"):
        lk = doc["like"]
        lines += ["", f"Jobs that failed like job {clean(lk['job'])}:"]
        if not lk["found"]:
            lines.append("  (no record of that job)")
        else:
            lines += [f"  job {clean(j['job'])} ({clean(j['name'] or '-')}, {clean(j['user'] or '-')}) "
                      f"{clean(j['recorded_at'])}" for j in lk["jobs"]] or ["  (none)"]
    if doc.get("problems"):
        lines += ["", f"{len(doc['problems'])} file(s) skipped:"] + [f"  {clean(p)}" for p in doc["problems"][:20]]
    return "\n".join(lines) + "\n"


def _table(rows: list[dict], cols: list[tuple[str, str]], bar: str | None = None) -> str:
    if not rows:
        return "<p class=meta>none</p>"
    top = max((r.get(bar) or 0 for r in rows), default=0) if bar else 0
    head = "".join(f"<th>{_e(t)}</th>" for _, t in cols) + ("<th></th>" if bar else "")
    body = []
    for r in rows:
        cells = "".join(f"<td class=n>{_e(r.get(k))}</td>" if isinstance(r.get(k), (int, float))
                        else f"<td>{_e(r.get(k))}</td>" for k, _ in cols)
        if bar:
            w = int(200 * (r.get(bar) or 0) / top) if top else 0
            cells += f'<td><span class=bar style="width:{w}px"></span></td>'
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def page(doc: dict) -> str:
    days = sorted({c for d in doc["by_day"] for c in d["by_category"]})
    by_day = [{"day": d["day"], "jobs": d["jobs"], **d["by_category"]} for d in doc["by_day"]]
    recurring = [{"rule_id": r["rule_id"], "jobs": r["jobs"], "title": r["title"], "job": r["example"]["job"],
                  "name": r["example"]["name"], "user": r["example"]["user"], "evidence": r["example"]["evidence"]}
                 for r in doc["top_recurring"]]
    parts = [f"<h1>grpo-doctor fleet report</h1><p class=meta>{_e(doc['store'])}"
             + (f" &middot; since {_e(doc['since'])}" if doc.get("since") else "") + "</p>",
             f"<p id=totals><b>{doc['jobs']}</b> failed jobs, <b>{doc['gpu_hours_lost']:g}</b> GPU-hours lost</p>",
             "<h2>By category</h2>", _table(doc["by_category"], [("category", "category"), ("jobs", "jobs"),
                                                                 ("gpu_hours", "GPU-hours")], bar="jobs"),
             "<h2>By rule</h2>", _table(doc["by_rule"], [("rule_id", "rule"), ("jobs", "jobs"), ("title", "title"),
                                                         ("category", "category")]),
             "<h2>Over time</h2>", _table(by_day, [("day", "day"), ("jobs", "jobs")] + [(c, c) for c in days]),
             "<h2>Top recurring failures</h2>", _table(recurring, [("rule_id", "rule"), ("jobs", "jobs"),
                                                                    ("title", "title"), ("job", "example job"),
                                                                    ("name", "name"), ("user", "user"),
                                                                    ("evidence", "evidence")]),
             "<h2>Users most hit</h2>", _table(doc["users"], [("user", "user"), ("jobs", "jobs"),
                                                              ("gpu_hours", "GPU-hours")], bar="jobs"),
             "<h2>Partitions most hit</h2>", _table(doc["partitions"], [("partition", "partition"), ("jobs", "jobs"),
                                                                        ("gpu_hours", "GPU-hours")], bar="jobs")]
    if doc.get("like"):
        lk = doc["like"]
        parts += [f"<h2>Jobs that failed like job {_e(lk['job'])}</h2>",
                  _table(lk["jobs"], [("job", "job"), ("name", "name"), ("user", "user"),
                                      ("recorded_at", "recorded")]) if lk["found"] else "<p>no record of that job</p>"]
    if doc.get("problems"):
        parts += ["<h2>Skipped files</h2><ul>"] + [f"<li>{_e(p)}</li>" for p in doc["problems"]] + ["</ul>"]
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            "<meta name=viewport content='width=device-width,initial-scale=1'><title>grpo-doctor fleet report</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")
