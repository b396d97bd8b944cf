"""``fleet compact``: fold the store's older records into one Parquet file, for long histories (hundreds of
thousands of small files read slowly from a shared file system).

DuckDB writes the file (``pip install 'grpo-doctor[fleet]'``): one 25 MB wheel without dependencies, and the same
engine the README's query uses to read the store; pyarrow would do the writing but is larger and brings nothing for
the query. The Parquet file has fixed columns, the same in every file whatever the records hold: the fields a query
filters on (job, user, partition, state, category, rule, GPU-hours...) and ``record``, the record's whole JSON, from
which ``fleet report`` rebuilds it. Only records older than ``--older-than`` are folded: a newer one may still be
replaced (an epilog and a follow-up job write the same job's record).

Crash safety: the Parquet file is written under a temporary name and renamed into place before any record is
removed; a compaction that dies between the two leaves records both in Parquet and as files, which store.load counts
once (the newest of each job)."""
from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timedelta, timezone

from .store import StoreError, load

PARQUET_DIR = "parquet"
COLUMNS = (("record_schema", "INTEGER"), ("recorded_at", "VARCHAR"), ("source", "VARCHAR"), ("cluster", "VARCHAR"),
           ("job_id", "VARCHAR"), ("array_job_id", "VARCHAR"), ("name", "VARCHAR"), ("user", "VARCHAR"),
           ("partition", "VARCHAR"), ("state", "VARCHAR"), ("exit_code", "INTEGER"), ("gpus", "INTEGER"),
           ("run_seconds", "BIGINT"), ("gpu_hours", "DOUBLE"), ("rule_id", "VARCHAR"), ("category", "VARCHAR"),
           ("action", "VARCHAR"), ("record", "VARCHAR"))


def duckdb_module():
    try:
        import duckdb
    except ImportError:
        raise StoreError("Parquet needs DuckDB: pip install 'grpo-doctor[fleet]' (or pip install duckdb)")
    return duckdb


def _row(rec: dict) -> tuple:
    job, prim = rec.get("job") or {}, rec.get("primary") or {}
    whole = {k: v for k, v in rec.items() if k != "_file"}
    return (rec.get("record_schema"), rec.get("recorded_at"), rec.get("source"), job.get("cluster"),
            None if job.get("id") is None else str(job.get("id")), job.get("array_job_id"), job.get("name"),
            job.get("user"), job.get("partition"), job.get("state"), job.get("exit_code"), job.get("gpus"),
            job.get("run_seconds"), rec.get("gpu_hours"), prim.get("rule_id"), prim.get("category"),
            rec.get("action"), json.dumps(whole, ensure_ascii=False))


def compact(store: str, older_than: timedelta, now: datetime | None = None) -> tuple[int, str | None]:
    """Fold the records older than ``older_than`` into STORE/parquet/records-<time>-<random>.parquet and remove
    their files; the number folded and the Parquet file (None when there was nothing to fold)."""
    duckdb = duckdb_module()
    now = now or datetime.now(timezone.utc)
    records, _ = load(store, include_parquet=False)
    cutoff = (now - older_than).strftime("%Y-%m-%dT%H:%M:%SZ")
    old = [r for r in records if str(r.get("recorded_at")) < cutoff]
    if not old:
        return 0, None
    out_dir = os.path.join(store, PARQUET_DIR)
    os.makedirs(out_dir, exist_ok=True)
    name = f"records-{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}.parquet"
    final, tmp = os.path.join(out_dir, name), os.path.join(out_dir, f".{name}.tmp")
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE r ({', '.join(f'{c} {t}' for c, t in COLUMNS)})")
        con.executemany(f"INSERT INTO r VALUES ({', '.join('?' for _ in COLUMNS)})", [_row(r) for r in old])
        con.execute("COPY r TO ? (FORMAT parquet, COMPRESSION zstd)", [tmp])
    finally:
        con.close()
    os.replace(tmp, final)
    for r in old:
        try:
            os.unlink(os.path.join(store, r["_file"]))
        except OSError:
            pass   # already gone (another compaction): the Parquet copy is counted once anyway
    return len(old), final


def parquet_records(store: str) -> list[dict]:
    """The records folded into STORE/parquet/*.parquet, rebuilt from their ``record`` column."""
    d = os.path.join(store, PARQUET_DIR)
    files = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".parquet") and not n.startswith(".")) \
        if os.path.isdir(d) else []
    if not files:
        return []
    duckdb = duckdb_module()
    con = duckdb.connect()
    try:
        rows = con.execute("SELECT record FROM read_parquet(?)", [files]).fetchall()
    finally:
        con.close()
    return [json.loads(r[0]) for r in rows]
