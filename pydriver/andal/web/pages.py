"""What each page shows: the rows of the SQL functions, grouped for the templates.

Nothing here decides a queue fact: figures come as the functions return them (counts,
ratios, quantiles); this module only groups rows by queue and picks a page of a list.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from . import charts, queries
from .db import Database

PAGE_SIZE = 50
#: How many dead letters a filtered list scans at most (queue.list_dead's lim).
SCAN_LIMIT = 10000


def overview(db: Database) -> dict[str, Any]:
    stats, by_minute, workers, cache = db.read_many(
        [
            (queries.STATS, None),
            (queries.BY_MINUTE, {"span": "1 hour"}),
            (queries.WORKERS, None),
            (queries.CACHE_STATS, None),
        ]
    )
    series = _series(by_minute)
    queues = [dict(r) for r in stats if r["category"] is None]
    for q in queues:
        minutes = series.get(q["queue"], [])
        q["throughput"] = charts.spark([m["completed"] for m in minutes])
        q["failures"] = charts.spark([m["failure_rate"] for m in minutes], peak=1.0)
    categories = [r for r in stats if r["category"] is not None]
    held = stats[0] if stats else None
    return {
        "queues": queues,
        "categories": categories,
        "held_xmin_age": held["held_xmin_age"] if held else None,
        "held_xmin_seconds": held["held_xmin_seconds"] if held else None,
        "workers": len(workers),
        "running": sum(w["running"] for w in workers),
        "cache": cache_figures(cache),
    }


def _series(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["queue"]].append(r)
    return out


def cache_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """cache.stats() rows: the unlabelled figures by name, and the hit ratio per pool."""
    plain = {r["metric"]: r["value"] for r in rows if not r["labels"]}
    ratios = [
        {"pool": r["labels"].get("pool"), "job": r["labels"].get("job_type"), "ratio": r["value"]}
        for r in rows
        if r["metric"] == "hit_ratio"
    ]
    return {"plain": plain, "hit_ratios": ratios}


def queue(db: Database, name: str) -> dict[str, Any]:
    stats, by_minute, dead = db.read_many(
        [
            (queries.STATS, None),
            (queries.BY_MINUTE, {"span": "1 hour"}),
            (
                queries.LIST_DEAD,
                {"queue": name, "lim": 10, "reason": None, "page": 10, "offset": 0},
            ),
        ]
    )
    rows = [r for r in stats if r["queue"] == name]
    total = next((r for r in rows if r["category"] is None), None)
    minutes = _series(by_minute).get(name, [])
    return {
        "name": name,
        "total": total,
        "categories": [r for r in rows if r["category"] is not None],
        "throughput": charts.spark([m["completed"] for m in minutes]),
        "failures": charts.spark([m["failure_rate"] for m in minutes], peak=1.0),
        "dead": dead,
    }


def dead_letters(
    db: Database, queue_name: str | None, reason: str | None, page: int
) -> dict[str, Any]:
    offset = (page - 1) * PAGE_SIZE
    lim = SCAN_LIMIT if reason else offset + PAGE_SIZE + 1
    rows = db.read(
        queries.LIST_DEAD,
        {
            "queue": queue_name,
            "lim": min(lim, SCAN_LIMIT),
            "reason": reason,
            "page": PAGE_SIZE + 1,
            "offset": offset,
        },
    )
    return {
        "rows": rows[:PAGE_SIZE],
        "more": len(rows) > PAGE_SIZE,
        "page": page,
        "queue": queue_name or "",
        "reason": reason or "",
        "reasons": ("exhausted", "non_retryable", "cancelled"),
    }


def dead_job(db: Database, job_id: int) -> dict[str, Any] | None:
    """A dead letter by id, among the newest SCAN_LIMIT (queue.list_dead)."""
    rows = db.read(queries.DEAD_JOB, {"lim": SCAN_LIMIT, "job_id": job_id})
    return rows[0] if rows else None


def workers(db: Database) -> dict[str, Any]:
    return {"workers": db.read(queries.WORKERS)}
