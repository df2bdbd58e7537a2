"""Day-two calls: every andal SQL function a team calls by hand, as one typed ``Call``.

Each function here builds a ``Call`` (a statement, its parameters, and how its rows become
typed values); ``Client`` and ``AsyncClient`` run it on a connection of their own, or on the
caller's (``conn=``). The rules stay in SQL: these only name the arguments and shape the rows.
An argument left out (None) is not sent, so the function's own default applies (for
``configure_queue``: the queue keeps its value).

``SQL_FUNCTIONS`` maps each public SQL function to the method that calls it; the functions
with no method are listed in docs/python.md ("SQL only") and the tests check both lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.types.json import Jsonb

from .errors import translated
from .jobs import Child, JobInfo, JobOrigin, Parent
from .values import Seconds, as_interval

T = TypeVar("T")
Rows = list[tuple[Any, ...]]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One statement and how its rows become the answer."""

    statement: str
    params: dict[str, Any]
    shape: Callable[[Rows], T]

    def run(self, conn: psycopg.Connection[Any]) -> T:
        with translated():
            cur = conn.execute(self.statement, self.params)
            return self.shape(cur.fetchall() if cur.description else [])

    async def arun(self, conn: psycopg.AsyncConnection[Any]) -> T:
        with translated():
            cur = await conn.execute(self.statement, self.params)
            return self.shape(await cur.fetchall() if cur.description else [])


@dataclass(frozen=True)
class QueueSettings:
    """``queue.queue_settings``: a queue's policy (``configured`` false: never configured,
    the defaults). ``timeout`` and ``history_retention`` None: none."""

    queue: str
    configured: bool
    max_attempts: int
    lease: timedelta
    backoff: str
    backoff_base: timedelta
    backoff_cap: timedelta
    jitter: float
    notify: bool
    payload_limit: int
    keep_results: bool
    cache_policy: str
    paused: bool
    timeout: timedelta | None
    results_retention: timedelta
    dead_retention: timedelta
    history_retention: timedelta | None
    updated_at: datetime | None


@dataclass(frozen=True)
class Schedule:
    """One row of ``queue.schedules``."""

    name: str
    queue: str
    cron: str | None
    every: timedelta | None
    timezone: str
    payload: Any
    category: str | None
    priority: int
    missed: str
    catch_up: int
    enabled: bool
    builtin: bool
    last_tick: datetime | None
    last_fired_at: datetime | None
    last_job_id: int | None
    next_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class RateLimit:
    """One row of ``queue.rate_limits``: at most ``starts`` starts ``per`` interval."""

    category: str
    starts: int | None
    per: timedelta | None
    started_in_window: int | None
    max_running: int | None


@dataclass(frozen=True)
class CategoryLimit:
    """One row of ``queue.category_limits`` (``max_running`` 0: paused)."""

    category: str
    max_running: int


@dataclass(frozen=True)
class DeadLetter:
    """One row of ``queue.dead_letters_by``: a dead job, its reason and last error (no
    payload)."""

    job_id: int
    queue: str
    category: str | None
    reason: str
    attempts: int
    max_attempts: int
    enqueued_at: datetime
    died_at: datetime
    last_error: str | None


@dataclass(frozen=True)
class Requeued:
    """``queue.requeue_dead_matching``: how many came back, how many were refused (a live job
    holds their dedup key)."""

    requeued: int
    refused: int


@dataclass(frozen=True)
class QueueStatus:
    """One row of ``queue.status``."""

    queue: str
    ready: int
    scheduled: int
    running: int
    dead: int
    oldest_ready_age: timedelta | None


@dataclass(frozen=True)
class QueueStats:
    """One row of ``queue.stats`` (``category`` None: the whole queue); see docs/sql-api.md."""

    queue: str
    category: str | None
    ready: int
    scheduled: int
    running: int
    dead: int
    oldest_ready_age: timedelta | None
    avg_run_ms: float | None
    p95_run_ms: float | None
    completed_1m: int
    completed_15m: int
    completed_1h: int
    retried_1m: int
    retried_15m: int
    retried_1h: int
    dead_1m: int
    dead_15m: int
    dead_1h: int
    failure_rate: float | None
    retries_per_job: float | None
    lock_attempts: int | None
    lock_failures: int | None
    contention_ratio: float | None
    pickup_p50_ms: float | None
    pickup_p95_ms: float | None
    pickup_p99_ms: float | None
    wal_bytes_per_job: float | None
    held_xmin_age: int | None
    held_xmin_seconds: float | None
    paused: bool
    rate_refusals: int | None
    waiting: int | None


@dataclass(frozen=True)
class MinuteStats:
    """One row of ``queue.stats_by_minute``."""

    queue: str
    minute: datetime
    completed: int
    retried: int
    dead: int
    failure_rate: float | None


@dataclass(frozen=True)
class WorkerInfo:
    """One row of ``queue.workers``: a worker's running jobs and open sessions."""

    worker: str
    running: int
    queues: list[str] | None
    oldest_claim_age: timedelta | None
    next_lease_expiry: timedelta | None
    connections: int


Arg = tuple[Any, str]


def call(
    function: str, shape: Callable[[Rows], T], *, select: str = "", always: Sequence[str] = (),
    **args: Arg,
) -> Call[T]:  # fmt: skip
    """``select <select> from queue.function(name => %(name)s::cast, ...)``, or ``select
    queue.function(...)`` without ``select``: each argument a ``(value, cast)`` pair, those
    whose value is None left out (the function's default applies) unless named in
    ``always`` (sent as null: it picks an overload)."""
    sent = {n: arg for n, arg in args.items() if arg[0] is not None or n in always}
    parts = [f"{n} => %({n})s::{cast}" for n, (_, cast) in sent.items()]
    params = {n: value for n, (value, _) in sent.items()}
    target = f"queue.{function}({', '.join(parts)})"
    statement = f"select {select} from {target} as r" if select else f"select {target}"
    return Call(statement, params, shape)


def interval(value: Seconds | None) -> Arg:
    return as_interval(value), "interval"


def json(value: Any) -> Arg:
    return (None if value is None else Jsonb(value)), "jsonb"


def columns(cls: type[Any]) -> str:
    """The dataclass's fields as the columns of a ``select`` (the row's order)."""
    return ", ".join(f"r.{f.name}" for f in fields(cls))


def rows_of(cls: Callable[..., T]) -> Callable[[Rows], list[T]]:
    return lambda rows: [cls(*row) for row in rows]


def first(rows: Rows) -> Any:
    return rows[0][0] if rows else None


def nothing(rows: Rows) -> None:
    return None


def one_of(cls: Callable[..., T]) -> Callable[[Rows], T]:
    return lambda rows: cls(*rows[0])


def maybe_one(cls: Callable[..., T]) -> Callable[[Rows], T | None]:
    return lambda rows: cls(*rows[0]) if rows else None


# -- jobs ---------------------------------------------------------------------------------


def job(job_id: int) -> Call[JobInfo | None]:
    return call("job", maybe_one(JobInfo), select="*", job_id=(job_id, "bigint"))


def jobs_by(
    queue: str | None, state: str | None, before: int | None, limit: int
) -> Call[list[JobInfo]]:
    return call(
        "jobs_by", rows_of(JobInfo), select="*", queue=(queue, "text"), state=(state, "text"),
        before=(before, "bigint"), lim=(limit, "int"),
    )  # fmt: skip


def parents(job_id: int) -> Call[list[Parent]]:
    return call(
        "parent_results", rows_of(Parent), select="r.parent_id, r.state, r.result",
        job_id=(job_id, "bigint"),
    )  # fmt: skip


def children(job_id: int) -> Call[list[Child]]:
    return call(
        "child_jobs", rows_of(Child), select="r.child_id, r.state, r.open",
        job_id=(job_id, "bigint"),
    )  # fmt: skip


def job_origin(job_id: int) -> Call[JobOrigin | None]:
    return call(
        "job_origin", maybe_one(JobOrigin), select=columns(JobOrigin), job_id=(job_id, "bigint")
    )


def job_payload(job_id: int) -> Call[Any]:
    return call("job_payload", first, job_id=(job_id, "bigint"))


def cancel(job_id: int) -> Call[None]:
    return call("cancel", nothing, job_id=(job_id, "bigint"))


# -- queues ---------------------------------------------------------------------------------


def pause(queue: str) -> Call[None]:
    return call("pause", nothing, queue=(queue, "text"))


def resume(queue: str) -> Call[None]:
    return call("resume", nothing, queue=(queue, "text"))


def queue_settings(queue: str) -> Call[QueueSettings]:
    def shape(rows: Rows) -> QueueSettings:
        return QueueSettings(queue, *rows[0])

    return call("queue_settings", shape, select="*", queue=(queue, "text"))


#: ``configure_queue``'s options and their SQL types (intervals take seconds or a timedelta).
QUEUE_OPTIONS = {
    "timeout": "interval", "max_attempts": "int", "lease": "interval", "backoff": "text",
    "backoff_base": "interval", "backoff_cap": "interval", "jitter": "real",
    "notify": "boolean", "payload_limit": "int", "keep_results": "boolean",
    "cache_policy": "text", "results_retention": "interval", "dead_retention": "interval",
}  # fmt: skip


def configure_queue(queue: str, options: dict[str, Any]) -> Call[QueueSettings]:
    """Options left out keep their value; ``timeout=0`` removes the queue's timeout."""
    unknown = set(options) - set(QUEUE_OPTIONS)
    if unknown:
        known = ", ".join(QUEUE_OPTIONS)
        raise TypeError(f"unknown queue option(s): {', '.join(sorted(unknown))} (known: {known})")
    args: dict[str, Arg] = {}
    for name, cast in QUEUE_OPTIONS.items():
        value = options.get(name)
        args[name] = interval(value) if cast == "interval" else (value, cast)
    # timeout is sent even when null: it picks the form that takes every option
    select = columns(QueueSettings).replace("r.configured", "true")
    return call(
        "configure_queue", one_of(QueueSettings), select=select, always=("timeout",),
        queue=(queue, "text"), **args,
    )  # fmt: skip


def set_history(queue: str, retention: Seconds | None) -> Call[None]:
    return call(
        "set_history", nothing, always=("retention",), queue=(queue, "text"),
        retention=interval(retention),
    )  # fmt: skip


def configure_history(partition_width: Seconds) -> Call[None]:
    return call("configure_history", nothing, partition_width=interval(partition_width))


# -- dead letters ---------------------------------------------------------------------------


def dead_letters(
    queue: str | None, reason: str | None, before: int | None, limit: int
) -> Call[list[DeadLetter]]:
    return call(
        "dead_letters_by", rows_of(DeadLetter), select=columns(DeadLetter),
        queue=(queue, "text"), reason=(reason, "text"), before=(before, "bigint"),
        lim=(limit, "int"),
    )  # fmt: skip


def requeue_dead(job_id: int, with_children: bool) -> Call[int]:
    return call(
        "requeue_dead", first, job_id=(job_id, "bigint"),
        with_children=(True if with_children else None, "boolean"),
    )  # fmt: skip


def purge_dead(
    queue: str | None, reason: str | None, older_than: Seconds | None, max_rows: int
) -> Call[int]:
    return call(
        "purge_dead_matching", first, queue=(queue, "text"), reason=(reason, "text"),
        older_than=interval(older_than), max_rows=(max_rows, "int"),
    )  # fmt: skip


def purge_dead_jobs(job_ids: Sequence[int]) -> Call[int]:
    return call("purge_dead_jobs", first, job_ids=(list(job_ids), "bigint[]"))


def requeue_dead_matching(
    queue: str | None, reason: str | None, older_than: Seconds | None, max_rows: int
) -> Call[Requeued]:
    return call(
        "requeue_dead_matching", one_of(Requeued), select="r.requeued, r.refused",
        queue=(queue, "text"), reason=(reason, "text"), older_than=interval(older_than),
        max_rows=(max_rows, "int"),
    )  # fmt: skip


# -- schedules, limits ----------------------------------------------------------------------


def schedule(name: str, queue: str | None, options: dict[str, Any]) -> Call[datetime]:
    """``options``: cron, every, payload, timezone, category, priority, max_attempts, missed,
    catch_up, enabled (left out: the function's default). ``queue.schedule`` defines the whole
    schedule: an update of an existing name takes the defaults for what it leaves out too."""
    casts = {
        "cron": "text", "timezone": "text", "category": "text", "priority": "int",
        "max_attempts": "int", "missed": "text", "catch_up": "int", "enabled": "boolean",
    }  # fmt: skip
    unknown = set(options) - set(casts) - {"every", "payload"}
    if unknown:
        raise TypeError(f"unknown schedule option(s): {', '.join(sorted(unknown))}")
    args: dict[str, Arg] = {n: (options.get(n), cast) for n, cast in casts.items()}
    return call(
        "schedule", first, select="", name=(name, "text"), queue=(queue, "text"),
        every=interval(options.get("every")), payload=json(options.get("payload")), **args,
    )  # fmt: skip


def unschedule(name: str) -> Call[bool]:
    return call("unschedule", first, name=(name, "text"))


def schedules() -> Call[list[Schedule]]:
    return call("schedules", rows_of(Schedule), select=columns(Schedule))


def set_rate_limit(category: str, starts: int | None, per: Seconds | None) -> Call[None]:
    return call(
        "set_rate_limit", nothing, always=("starts", "per"), category=(category, "text"),
        starts=(starts, "int"), per=interval(per),
    )  # fmt: skip


def rate_limits() -> Call[list[RateLimit]]:
    return call("rate_limits", rows_of(RateLimit), select=columns(RateLimit))


def set_category_limit(category: str, max_running: int) -> Call[None]:
    return call(
        "set_category_limit", nothing, category=(category, "text"),
        max_running=(max_running, "int"),
    )  # fmt: skip


def category_limits() -> Call[list[CategoryLimit]]:
    return call("category_limits", rows_of(CategoryLimit), select=columns(CategoryLimit))


# -- reads and housekeeping -----------------------------------------------------------------


def status() -> Call[list[QueueStatus]]:
    return call("status", rows_of(QueueStatus), select=columns(QueueStatus))


def stats() -> Call[list[QueueStats]]:
    return call("stats", rows_of(QueueStats), select=columns(QueueStats))


def stats_by_minute(span: Seconds | None) -> Call[list[MinuteStats]]:
    return call(
        "stats_by_minute", rows_of(MinuteStats), select=columns(MinuteStats),
        span=interval(span),
    )  # fmt: skip


def workers() -> Call[list[WorkerInfo]]:
    return call("workers", rows_of(WorkerInfo), select=columns(WorkerInfo))


def maintain() -> Call[int]:
    return call("maintain", first)


def version() -> Call[str]:
    return call("version", first)


#: Each public SQL function a ``Client`` / ``AsyncClient`` method calls: function -> method.
#: The others are listed in docs/python.md under "SQL only" (the tests check both lists).
SQL_FUNCTIONS = {
    "enqueue": "enqueue", "enqueue_many": "enqueue_many", "job": "job", "jobs_by": "jobs_by",
    "watch": "wait", "parent_results": "parents", "child_jobs": "children",
    "job_payload": "job_payload", "job_origin": "job_origin", "cancel": "cancel",
    "pause": "pause", "resume": "resume",
    "queue_settings": "queue_settings", "configure_queue": "configure_queue",
    "set_history": "set_history", "configure_history": "configure_history",
    "dead_letters_by": "dead_letters", "list_dead": "dead_letters",
    "requeue_dead": "requeue_dead", "requeue_dead_matching": "requeue_dead_matching",
    "purge_dead": "purge_dead", "purge_dead_matching": "purge_dead",
    "purge_dead_jobs": "purge_dead_jobs", "schedule": "schedule", "unschedule": "unschedule",
    "schedules": "schedules", "set_rate_limit": "set_rate_limit", "rate_limits": "rate_limits",
    "set_category_limit": "set_category_limit", "category_limits": "category_limits",
    "status": "status", "stats": "stats", "stats_by_minute": "stats_by_minute",
    "workers": "workers", "maintain": "maintain", "version": "version",
}  # fmt: skip
