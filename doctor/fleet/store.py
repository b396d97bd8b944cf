"""Reading a fleet store: the ``*.json`` records at its top level (reports/ and temporary files are not records).

A record that cannot be read or is not a record is listed as a problem, never fatal: the store is written by many
hooks, possibly by other versions of grpo-doctor, and read while they write."""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

from .. import lazyre

MAX_RECORD_BYTES = 1 << 20
_SINCE = lazyre.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class StoreError(Exception):
    """One line for the user (exit 2)."""


def parse_since(text: str) -> timedelta:
    """``7d``, ``12h``, ``30m``, ``2w``, ``90s``."""
    m = _SINCE.fullmatch(text.strip().lower())
    if not m:
        raise StoreError(f"--since {text!r}: use a number and a unit, e.g. 7d, 12h, 30m, 2w")
    return timedelta(seconds=float(m.group(1)) * _UNIT[m.group(2)])


def recorded_at(rec: dict) -> datetime | None:
    try:
        return datetime.strptime(str(rec.get("recorded_at")), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def load(store: str, since: timedelta | None = None, now: datetime | None = None,
         include_parquet: bool = True) -> tuple[list[dict], list[str]]:
    """The records (newest first), one per job (the newest, should a job be both a file and in Parquet after an
    interrupted compaction), and the problems met (``name: why``)."""
    try:
        names = sorted(n for n in os.listdir(store) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        raise StoreError(f"{store}: no such directory; pass the directory the hooks write to (--store)")
    except NotADirectoryError:
        raise StoreError(f"{store}: not a directory; pass the directory the hooks write to (--store)")
    except PermissionError:
        raise StoreError(f"{store}: permission denied")
    cutoff = (now or datetime.now(timezone.utc)) - since if since is not None else None
    records, problems = [], []
    for name in names:
        path = os.path.join(store, name)
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_RECORD_BYTES + 1)
        except OSError as e:
            problems.append(f"{name}: {e.strerror}")
            continue
        if len(data) > MAX_RECORD_BYTES:
            problems.append(f"{name}: larger than {MAX_RECORD_BYTES >> 20} MiB, not a record")
            continue
        try:
            rec = json.loads(data)
        except json.JSONDecodeError as e:
            problems.append(f"{name}: not JSON ({e.msg})")
            continue
        except ValueError:   # bytes that are not UTF-8
            problems.append(f"{name}: not JSON (not UTF-8)")
            continue
        if not isinstance(rec, dict) or rec.get("record_schema") != 1 or not isinstance(rec.get("job"), dict):
            problems.append(f"{name}: not a grpo-doctor fleet record (record_schema 1)")
            continue
        rec["_file"] = name
        records.append(rec)
    if include_parquet:
        from .compact import parquet_records
        records += parquet_records(store)
    if cutoff is not None:
        records = [r for r in records if (recorded_at(r) or cutoff) > cutoff]
    records.sort(key=lambda r: str(r.get("recorded_at")), reverse=True)
    seen, unique = set(), []
    for r in records:
        job = r.get("job") or {}
        key = (job.get("cluster"), job.get("id")) if job.get("id") else ("", r.get("_file") or id(r))
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique, problems
