"""One reading of a database for ``andal status`` / ``top``, and its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg

from .. import statements as sql
from .base import _version

_STAT_KEYS = (
    "queue", "category", "ready", "scheduled", "running", "dead", "oldest_ready_age",
    "avg_run_ms", "p95_run_ms", "completed_1m", "completed_15m", "completed_1h",
    "retried_1m", "retried_15m", "retried_1h", "dead_1m", "dead_15m", "dead_1h",
    "failure_rate", "retries_per_job", "lock_attempts", "lock_failures", "contention_ratio",
    "pickup_p50_ms", "pickup_p95_ms", "pickup_p99_ms", "wal_bytes_per_job", "paused",
    "minute_elapsed_s",
)  # fmt: skip


_WORKER_KEYS = (
    "worker", "running", "queues", "oldest_claim_age", "next_lease_expiry", "connections",
)  # fmt: skip


@dataclass
class Snapshot:
    """One reading of the database for ``andal status``: queues (with their categories),
    workers, and the cache's figures when ``cache.stats()`` exists."""

    taken_at: datetime
    queues: list[dict[str, Any]]
    categories: list[dict[str, Any]]
    workers: list[dict[str, Any]] | None  # None: not readable with this role
    cache: list[dict[str, Any]]  # cache.stats()
    version: str = ""
    database: str = ""


def take_snapshot(conn: psycopg.Connection) -> Snapshot:
    """Read queue.status(), queue.stats(), the workers and cache.stats() on ``conn``."""
    status = conn.execute(sql.STATUS).fetchall()
    stats = [dict(zip(_STAT_KEYS, r, strict=True)) for r in conn.execute(sql.STATS).fetchall()]
    totals = {r["queue"]: r for r in stats if r["category"] is None}
    queues = []
    for name, ready, scheduled, running, dead, oldest in status:
        row = dict(totals.get(name) or _empty_stats(name))
        # live counts from queue.status(), which also lists configured queues without jobs
        row.update(ready=ready, scheduled=scheduled, running=running, dead=dead)
        row["oldest_ready_age"] = oldest
        queues.append(row)
    known = {q["queue"] for q in queues}
    queues += [r for r in totals.values() if r["queue"] not in known]
    categories = [r for r in stats if r["category"] is not None]
    workers = _read_workers(conn)
    cur = conn.execute(sql.CACHE_STATS)
    names = [d.name for d in cur.description or []]
    cache = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    info = conn.info
    return Snapshot(
        taken_at=datetime.now(timezone.utc),
        queues=queues,
        categories=categories,
        workers=workers,
        cache=cache,
        version=_version(conn),
        database=f"{info.dbname}@{info.host}:{info.port}",
    )


def _empty_stats(queue: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_STAT_KEYS)
    row.update(queue=queue, lock_attempts=0, lock_failures=0, minute_elapsed_s=0.0)
    for key in _STAT_KEYS:
        if key[-3:] in ("_1m", "15m", "_1h"):
            row[key] = 0
    return row


def _read_workers(conn: psycopg.Connection) -> list[dict[str, Any]] | None:
    try:
        with conn.transaction():  # a refused read must not spoil the connection
            rows = conn.execute(sql.WORKERS).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return [dict(zip(_WORKER_KEYS, r, strict=True)) for r in rows]


def per_minute(row: Mapping[str, Any], outcome: str) -> float:
    """Attempts ended per minute with ``outcome``: the pace of the current minute so far (its
    count over the seconds elapsed in it, at least one). queue.stats() keeps whole minutes, so
    this is the most recent figure it can give; right after a minute starts it is noisy."""
    elapsed = max(float(row.get("minute_elapsed_s") or 0.0), 1.0)
    return float(row.get(f"{outcome}_1m") or 0) * 60 / elapsed


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def snapshot_json(snap: Snapshot, full: bool = False) -> Any:
    """The JSON form: a list of queues (each with its categories); with ``full`` an object
    with the queues, workers and cache."""

    def clean(row: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in row.items():
            if key == "minute_elapsed_s":
                continue
            if isinstance(value, timedelta):
                out[f"{key}_s"] = value.total_seconds()
            else:
                out[key] = value
        return out

    queues = []
    for q in snap.queues:
        item = clean(q)
        item.pop("category", None)
        for outcome in ("completed", "retried", "dead"):
            item[f"{outcome}_per_min"] = round(per_minute(q, outcome), 3)
        item["categories"] = [
            clean({k: v for k, v in c.items() if k != "queue"})
            for c in snap.categories
            if c["queue"] == q["queue"]
        ]
        queues.append(item)
    if not full:
        return queues
    return {
        "taken_at": snap.taken_at.isoformat(timespec="seconds"),
        "database": snap.database,
        "version": snap.version,
        "queues": queues,
        "workers": None if snap.workers is None else [clean(w) for w in snap.workers],
        "cache": [clean(c) for c in snap.cache],
    }
