"""What each page shows: the rows of the SQL functions, grouped for the templates.

Nothing here decides a queue fact: figures come as the functions return them (counts,
ratios, quantiles, a job's state); this module only groups rows by queue and cuts pages.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from ..jobs import JOB_STATE
from ..jobs import STATES as JOB_STATES
from . import charts, fmt, queries
from .db import Database

PAGE_SIZE = 50
#: The Workers page lists at most this many workers.
WORKERS_SHOWN = 200
#: The largest job id (bigint): a larger number in a URL is no job.
MAX_ID = 2**63 - 1
#: The states of queue.job() (``queue.jobs_by``'s filter), in a job's order of life: the one
#: vocabulary (``andal.jobs.STATES``), in the names ``queue.job`` gives them.
STATES = tuple(JOB_STATE.get(s, s) for s in JOB_STATES)


@dataclass(frozen=True)
class Thresholds:
    """When the overview flags a queue (``andal web --warn-*``)."""

    failure_rate: float = 0.1
    oldest_ready_s: float = 300.0
    #: The banner warns when the held-back xmin is this many seconds old.
    xmin_age_s: float = 600.0


def trouble(q: dict[str, Any], warn: Thresholds) -> list[str]:
    """Why a queue of queue.stats() needs a look, in words (empty: it does not)."""
    reasons = []
    rate, dead, oldest = q.get("failure_rate"), q.get("dead") or 0, q.get("oldest_ready_s")
    if rate is not None and rate >= warn.failure_rate:
        reasons.append(f"failing {rate * 100:.0f} %")
    if dead:
        reasons.append(f"{dead} dead")
    if oldest is not None and oldest >= warn.oldest_ready_s:
        reasons.append(f"oldest ready {fmt.age(oldest)}")
    return reasons


def trouble_first(data: dict[str, Any], warn: Thresholds) -> dict[str, Any]:
    """The overview with each queue's trouble and those in trouble first (the most reasons,
    then the highest failure rate), the others after them in their order."""
    flagged = [dict(q, trouble=trouble(q, warn)) for q in data["queues"]]
    flagged.sort(
        key=lambda q: (-len(q["trouble"]), -(q.get("failure_rate") or 0) if q["trouble"] else 0)
    )
    return dict(data, queues=flagged)


#: Names a banner line lists before "and N more".
BANNER_NAMES = 8


def banner_reads(db: Database) -> dict[str, list[dict[str, Any]]]:
    """What the banner of every page is made of (read once per refresh for every page)."""
    reads = [queries.BANNER_XMIN, queries.BANNER_UNSERVED, queries.BANNER_WORKERS]
    xmin, unserved, workers = db.read_many([(q, None) for q in reads])
    return {"xmin": xmin, "unserved": unserved, "workers": workers}


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:BANNER_NAMES])
    more = len(names) - BANNER_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def banner(data: dict[str, list[dict[str, Any]]], warn: Thresholds) -> list[dict[str, str]]:
    """The banner's lines ({kind, text}; none: nothing to say), from what the functions
    return: queues with ready jobs that no live worker takes (queue.unserved_queues()),
    workers holding a job whose lease ran out (they stopped heartbeating), and a held-back
    xmin older than ``warn.xmin_age_s``."""
    lines = []
    waiting = data["unserved"]
    if waiting:
        ready = sum(q["ready"] for q in waiting)
        who = "No worker is live" if not data["workers"] else "No live worker takes"
        where = (
            "queue" + ("s " if len(waiting) > 1 else " ") + _names([q["queue"] for q in waiting])
        )
        lines.append({"kind": "workers", "text": f"{who}: {where} ({fmt.count(ready)} ready)"})
    stopped = [
        w for w in data["workers"] if w["next_lease_s"] is not None and w["next_lease_s"] < 0
    ]
    if stopped:
        oldest = -min(w["next_lease_s"] for w in stopped)
        text = "Stopped heartbeating: worker" + ("s " if len(stopped) > 1 else " ")
        text += _names([w["worker"] for w in stopped])
        text += f" (a held job's lease ran out {fmt.age(oldest)} ago)"
        lines.append({"kind": "heartbeat", "text": text})
    held = data["xmin"][0] if data["xmin"] else None
    if held and (held["held_xmin_seconds"] or 0) >= warn.xmin_age_s:
        lines.append({"kind": "xmin", "text": (
            f"The held-back xmin is {fmt.age(held['held_xmin_seconds'])} old"
            f" ({fmt.count(held['held_xmin_age'])} transactions): until the transaction,"
            " prepared transaction or replication slot holding it ends, vacuum cannot remove"
            " the rows of finished jobs"
        )})  # fmt: skip
    return lines


def overview(db: Database) -> dict[str, Any]:
    stats, by_minute, workers, cache, limits = db.read_many(
        [
            (queries.STATS, None),
            (queries.BY_MINUTE, {"span": "1 hour"}),
            (queries.WORKER_TOTALS, None),
            (queries.CACHE_STATS, None),
            (queries.CATEGORY_LIMITS, None),
        ]
    )
    series = _series(by_minute)
    queues = [_charted(dict(r), series) for r in stats if r["category"] is None]
    held = stats[0] if stats else None
    return {
        "queues": queues,
        "categories": _limited(stats, limits),
        "held_xmin_age": held["held_xmin_age"] if held else None,
        "held_xmin_seconds": held["held_xmin_seconds"] if held else None,
        "workers": workers[0]["workers"],
        "running": workers[0]["running"],
        "cache": cache_figures(cache),
    }


def _series(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["queue"]].append(r)
    return out


def _charted(row: dict[str, Any], series: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    minutes = series.get(row["queue"], [])
    times = [m["minute"] for m in minutes]
    row["throughput"] = charts.spark([m["completed"] for m in minutes], times=times)
    row["failures"] = charts.spark(
        [m["failure_rate"] for m in minutes], peak=1.0, unit="%", times=times, what="failed"
    )
    return row


def _limited(stats: list[dict[str, Any]], limits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-category rows of queue.stats(), each with its limit from category_limits()."""
    limit = {r["category"]: r["max_running"] for r in limits}
    return [dict(r, limit=limit.get(r["category"])) for r in stats if r["category"] is not None]


def cache_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """cache.stats() rows: the unlabelled figures by name, and the hit ratio per pool."""
    plain = {r["metric"]: r["value"] for r in rows if not r["labels"]}
    ratios = [
        {"pool": r["labels"].get("pool"), "job": r["labels"].get("job_type"), "ratio": r["value"]}
        for r in rows
        if r["metric"] == "hit_ratio"
    ]
    return {"plain": plain, "hit_ratios": ratios}


def _page(db: Database, queue: str | None, state: str | None, before: int | None) -> dict[str, Any]:
    """One page of queue.jobs_by(), and the ``before`` of the next page (None: the last)."""
    rows = db.read(
        queries.JOBS_BY, {"queue": queue, "state": state, "before": before, "lim": PAGE_SIZE + 1}
    )
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    return {"jobs": rows, "next_before": rows[-1]["job_id"] if more else None}


def queue(db: Database, name: str, state: str | None, before: int | None) -> dict[str, Any]:
    """A queue's page but its live figures (``queue_figures``, read for every queue at once)."""
    settings, schedules = db.read_many(
        [(queries.QUEUE_SETTINGS, {"queue": name}), (queries.SCHEDULES, {"queue": name})]
    )
    return {
        "settings": settings[0] if settings else None,
        "schedules": schedules,
        "state": state or "",
        "states": STATES,
        "before": before,
        **_page(db, name, state, before),
    }


def every_queue(db: Database) -> dict[str, list[dict[str, Any]]]:
    """What the live part of every queue's page shows, read once for all of them (so however
    many queue names are asked for, the functions run once per refresh)."""
    stats, by_minute, limits, rates = db.read_many(
        [
            (queries.STATS, None),
            (queries.BY_MINUTE, {"span": "1 hour"}),
            (queries.CATEGORY_LIMITS, None),
            (queries.RATE_LIMITS, None),
        ]
    )
    return {"stats": stats, "by_minute": by_minute, "limits": limits, "rates": rates}


def queue_figures(every: dict[str, list[dict[str, Any]]], name: str) -> dict[str, Any] | None:
    """The live part of a queue's page: its figures, charts, categories and the rate limits
    of the categories it uses (those queue.stats() lists for it); None when queue.stats()
    does not list the queue."""
    rows = [r for r in every["stats"] if r["queue"] == name]
    total = next((dict(r) for r in rows if r["category"] is None), None)
    if total is None:
        return None
    used = {r["category"]: r for r in rows if r["category"] is not None}
    return {
        "name": name,
        "total": _charted(total, _series([m for m in every["by_minute"] if m["queue"] == name])),
        "categories": _limited(rows, every["limits"]),
        "rate_limits": [
            dict(r, refusals=used[r["category"]]["rate_refusals"])
            for r in every["rates"]
            if r["category"] in used
        ],
    }


#: The reasons a job dies for (queue.dead_letters.reason).
REASONS = ("exhausted", "non_retryable", "cancelled")
#: Dead letters requeued or purged by one press of "all matching".
BULK_LIMIT = 1000


def dead_letters(
    db: Database, queue_name: str | None, reason: str | None, before: int | None
) -> dict[str, Any]:
    """A page of queue.dead_letters_by(), and the ``before`` of the next (None: the last)."""
    rows = db.read(
        queries.DEAD_LETTERS_BY,
        {"queue": queue_name, "reason": reason, "before": before, "lim": PAGE_SIZE + 1},
    )
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    return {
        "queue": queue_name or "",
        "reason": reason or "",
        "reasons": REASONS,
        "before": before,
        "bulk_limit": BULK_LIMIT,
        "jobs": rows,
        "next_before": rows[-1]["job_id"] if more else None,
    }


def job(db: Database, job_id: int) -> dict[str, Any]:
    """queue.job()'s row (None: andal does not remember the job), where it came from
    (queue.job_origin()) and, for a dashboard that may act, the payload
    (queue.job_payload() is for admins)."""
    rows = db.read(queries.JOB, {"job_id": job_id})
    found = rows[0] if rows else None
    payload = None
    if found and db.can_act:
        try:
            payload = db.act(queries.PAYLOAD, {"job_id": job_id})
        except psycopg.errors.InsufficientPrivilege:
            payload = None
    links: dict[str, list[Any]] = {"parents": [], "children": []}
    origin = None
    if found:  # a workflow's job: its parents and children, with their states
        links = {key: db.read(q, {"job_id": job_id}) for key, q in queries.JOB_LINKS.items()}
        origin = next(iter(db.read(queries.JOB_ORIGIN, {"job_id": job_id})), None)
    return {"job": found, "origin": origin, "payload": payload, "timeline": timeline(found),
            **links}  # fmt: skip


def timeline(job: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A job's life in time order, from queue.job()'s row: enqueued, each failed attempt
    (its worker, error and retry delay, from the error history), the current attempt's
    start, and its end (completed, dead or cancelled)."""
    if job is None:
        return []

    def event(
        at: Any, what: str, attempt: Any = None, worker: Any = None, detail: str = ""
    ) -> dict[str, Any]:
        return {"at": at, "what": what, "attempt": attempt, "worker": worker, "detail": detail}

    events = [event(job["enqueued_at"], "enqueued")]
    for e in job.get("errors") or []:
        retry = f"; retry in {e['retry_in']}" if e.get("retry_in") else ""
        detail = f"{e.get('error', '')}{retry}"
        events.append(event(_instant(e.get("at")), "attempt failed", e.get("attempt"),
                            e.get("worker"), detail))  # fmt: skip
    if job.get("started_at") is not None and job["state"] == "running":
        events.append(event(job["started_at"], "attempt started", job["attempts"], job["worker"]))
    if job.get("finished_at") is not None:
        events.append(event(job["finished_at"], job["state"]))
    return events


def workers(db: Database) -> dict[str, Any]:
    """The workers holding most jobs first, at most ``WORKERS_SHOWN`` of them (however many
    are registered, the page stays one page), and how many there are in all."""
    shown, totals = db.read_many(
        [(queries.WORKERS, {"lim": WORKERS_SHOWN}), (queries.WORKER_TOTALS, None)]
    )
    return {"workers": shown, "total_workers": totals[0]["workers"]}


def replica_lag(db: Database) -> float | None:
    """On a hot standby, the seconds since the last transaction it replayed; None on a
    primary (the "replica, lag N s" mark of every page)."""
    value = db.read_one(queries.REPLICA_LAG)
    return None if value is None else float(value)


def _instant(text: Any) -> Any:
    """An error entry's time (JSON text) as a datetime, or as given when it is not one."""
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return text
