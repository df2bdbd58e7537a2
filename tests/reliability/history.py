"""The attempt log and its checker, Python side (the SQL is in ``checker.sql``).

* ``install`` / ``reset``: put schema ``andal_check`` into a TEST database, empty it.
* ``enqueue`` / ``enqueue_many``: enqueue and record the job in ``andal_check.enqueued`` in one
  statement, hence one transaction (the caller's, when it has one open).
* ``claim`` / ``complete`` / ``fail``: a lightweight SQL worker whose log rows commit in the
  same transaction as andal's answer, so its history is exact.
* ``ProcessLog``: the log writer of the handler wrappers in worker processes (``handlers``).
* ``check`` / ``assert_clean``: the checker's counts (lost, duplicated, overlapping,
  over_limit); every reliability test ends with ``assert_clean``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

CHECKER_SQL = Path(__file__).with_name("checker.sql")
LOG_APP = "andal-check log"  # application_name of log connections (never terminated by tests)


def install(conn: psycopg.Connection) -> None:
    """Create (or refresh) schema andal_check in the database of ``conn``."""
    conn.execute(CHECKER_SQL.read_text())


def reset(conn: psycopg.Connection) -> None:
    """Empty andal's data tables and the history. Install bookkeeping and single-row settings
    tables (a boolean primary key: cache.config, cache.log_state, cache.epoch) are kept:
    emptying cache.config silently lifts the cache's value size limit."""
    tables = conn.execute(
        """
        select string_agg(format('%I.%I', n.nspname, c.relname), ', ')
        from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname in ('queue', 'cache', 'andal_check') and c.relkind in ('r', 'p')
          and c.relname not in ('schema_migrations', 'install_state')
          and not exists (
              select from pg_index as i
              join pg_attribute as a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
              where i.indrelid = c.oid and i.indisprimary and i.indnkeyatts = 1
                and a.atttypid = 'boolean'::regtype)
        """
    ).fetchone()[0]
    conn.execute(f"truncate {tables}")


# -- the checker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    lost: int
    duplicated: int
    overlapping: int
    over_limit: int
    jobs: int
    attempts: int

    @property
    def violations(self) -> int:
        return self.lost + self.duplicated + self.overlapping + self.over_limit

    def __str__(self) -> str:
        return (
            f"lost={self.lost} duplicated={self.duplicated} overlapping={self.overlapping}"
            f" over_limit={self.over_limit} (jobs={self.jobs}, attempts={self.attempts})"
        )


def check(conn: psycopg.Connection) -> Counts:
    row = conn.execute("select * from andal_check.check()").fetchone()
    return Counts(*(int(v) for v in row))


def violations(conn: psycopg.Connection, limit: int = 20) -> list[tuple[str, int, str, str]]:
    return conn.execute(
        "select kind, job_id, category, detail from andal_check.violations()"
        " order by kind, job_id limit %s",
        (limit,),
    ).fetchall()


def assert_clean(conn: psycopg.Connection) -> Counts:
    """The checker's four counts are 0; returns them (for the report)."""
    counts = check(conn)
    assert counts.violations == 0, f"checker: {counts}\n" + "\n".join(map(str, violations(conn)))
    return counts


def early_claims(conn: psycopg.Connection) -> tuple[int, int]:
    """(attempts claimed before their job's available_at, attempts without both times)."""
    return conn.execute(
        "select count(*) filter (where claimed_at < available_at),"
        " count(*) filter (where claimed_at is null or available_at is null)"
        " from andal_check.attempts"
    ).fetchone()


# -- producing, recorded -------------------------------------------------------------------

ENQUEUE = """
with e as (
    select queue.enqueue(payload => %(payload)s::jsonb, queue => %(queue)s::text,
        category => %(category)s::text, priority => %(priority)s::int,
        delay => %(delay)s::interval, max_attempts => %(max_attempts)s::int,
        dedup_key => %(dedup_key)s::text, cache_key => %(cache_key)s::text) as id
),
recorded as (
    insert into andal_check.enqueued (job_id, queue, category)
    select e.id, %(queue)s, %(category)s from e
    on conflict (job_id) do nothing  -- a dedup_key answered with a live job's id
)
select e.id from e
"""

ENQUEUE_MANY = """
with e as (
    select id from queue.enqueue_many(payloads => %(payloads)s::jsonb[], queue => %(queue)s::text,
        category => %(category)s::text, priority => %(priority)s::int,
        delay => %(delay)s::interval, max_attempts => %(max_attempts)s::int) as id
)
insert into andal_check.enqueued (job_id, queue, category)
select e.id, %(queue)s, %(category)s from e
returning job_id
"""


def _opts(
    queue: str, category: str | None, priority: int, delay: float, max_attempts: int | None
) -> dict[str, Any]:
    return {
        "queue": queue,
        "category": category,
        "priority": priority,
        "delay": timedelta(seconds=delay),
        "max_attempts": max_attempts,
    }


def enqueue(
    conn: psycopg.Connection,
    payload: Any,
    queue: str,
    *,
    category: str | None = None,
    priority: int = 0,
    delay: float = 0.0,
    max_attempts: int | None = None,
    dedup_key: str | None = None,
    cache_key: str | None = None,
) -> int:
    """queue.enqueue and its record, in one statement (the caller's transaction if open)."""
    params = _opts(queue, category, priority, delay, max_attempts)
    params.update(payload=Jsonb(payload), dedup_key=dedup_key, cache_key=cache_key)
    return conn.execute(ENQUEUE, params).fetchone()[0]


def enqueue_many(
    conn: psycopg.Connection,
    payloads: Sequence[Any],
    queue: str,
    *,
    category: str | None = None,
    priority: int = 0,
    delay: float = 0.0,
    max_attempts: int | None = None,
) -> list[int]:
    """queue.enqueue_many and the records, in one statement."""
    params = _opts(queue, category, priority, delay, max_attempts)
    params["payloads"] = [Jsonb(p) for p in payloads]
    return [r[0] for r in conn.execute(ENQUEUE_MANY, params).fetchall()]


# -- a lightweight SQL worker whose log commits with andal's answer --------------------------


@dataclass(frozen=True)
class Claimed:
    job_id: int
    queue: str
    category: str | None
    payload: Any
    attempt: int
    token: UUID
    lease_expires_at: Any


CLAIM = """
with c as materialized (
    select * from queue.claim(worker => %(worker)s::text, queues => %(queues)s::text[],
        batch => %(batch)s::int, lease => %(lease)s::interval)
),
logged as (
    -- queue.jobs as this statement's snapshot shows it: before the claim, available_at as
    -- the claim found it
    insert into andal_check.attempt_log (job_id, attempt, token, worker, queue, category, event,
        claimed_at, available_at, lease_expires_at)
    select c.job_id, c.attempt, c.token, %(worker)s, c.queue, c.category, 'start', now(),
        j.available_at, c.lease_expires_at
    from c left join queue.jobs as j on j.id = c.job_id
)
select c.job_id, c.queue, c.category, c.payload, c.attempt, c.token, c.lease_expires_at from c
"""


def claim(
    conn: psycopg.Connection,
    worker: str,
    queues: Sequence[str] | None = None,
    batch: int = 1,
    lease: float | None = None,
) -> list[Claimed]:
    """queue.claim, with a start row per claimed job in the claim's own transaction."""
    rows = conn.execute(
        CLAIM,
        {
            "worker": worker,
            "queues": list(queues) if queues is not None else None,
            "batch": batch,
            "lease": None if lease is None else timedelta(seconds=lease),
        },
    ).fetchall()
    return [Claimed(*r) for r in rows]


COMPLETE = """
with i as (
    select * from unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(attempts)s::int[])
        as i (job_id, token, attempt)
),
ended as (
    insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome)
    select i.job_id, i.attempt, i.token, %(worker)s, 'end', 'ok' from i
),
done as materialized (
    select d.job_id, d.completed from queue.complete_many(job_ids => %(ids)s::bigint[],
        tokens => %(tokens)s::uuid[], results => %(results)s::jsonb[]) as d
),
told as (
    insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome)
    select i.job_id, i.attempt, i.token, %(worker)s, 'outcome',
        case when d.completed then 'completed' else 'lease_lost' end
    from i join done as d on d.job_id = i.job_id
)
select d.job_id, d.completed from done as d
"""


def complete(conn: psycopg.Connection, worker: str, claimed: Sequence[Claimed]) -> dict[int, bool]:
    """queue.complete_many for ``claimed`` with end and outcome rows in the same statement;
    returns job id -> completed. The result stored (keep_results) names the token."""
    if not claimed:
        return {}
    rows = conn.execute(
        COMPLETE,
        {
            "ids": [c.job_id for c in claimed],
            "tokens": [c.token for c in claimed],
            "attempts": [c.attempt for c in claimed],
            "results": [Jsonb({"token": str(c.token), "worker": worker}) for c in claimed],
            "worker": worker,
        },
    ).fetchall()
    return dict(rows)


def log_row(
    conn: psycopg.Connection,
    event: str,
    job_id: int,
    attempt: int,
    token: UUID,
    worker: str,
    outcome: str | None = None,
    detail: str | None = None,
) -> None:
    conn.execute(
        "insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome,"
        " detail) values (%s, %s, %s, %s, %s, %s, %s)",
        (job_id, attempt, token, worker, event, outcome, detail),
    )


def fail(
    conn: psycopg.Connection,
    worker: str,
    c: Claimed,
    error: str,
    retry_in: float | None = None,
    retryable: bool = True,
) -> str:
    """queue.fail with the end and outcome rows in one transaction; returns the new status."""
    with conn.transaction():
        log_row(conn, "end", c.job_id, c.attempt, c.token, worker, "error", error[:200])
        status = conn.execute(
            "select queue.fail(job_id => %s, token => %s, error => %s, retry_in => %s,"
            " retryable => %s)",
            (
                c.job_id,
                c.token,
                error,
                None if retry_in is None else timedelta(seconds=retry_in),
                retryable,
            ),
        ).fetchone()[0]
        log_row(
            conn,
            "outcome",
            c.job_id,
            c.attempt,
            c.token,
            worker,
            "dead" if status == "dead" else "retried",
        )
    return status


# -- the log writer of worker processes ----------------------------------------------------

#: detail of a start row: the job's error history at the start (it names the attempts whose
#: leases were taken back, by whom and when: "lease expired (worker ...)").
START = """
insert into andal_check.attempt_log (job_id, attempt, token, worker, queue, category, event,
    claimed_at, available_at, lease_expires_at, detail)
select %(job_id)s, %(attempt)s, %(token)s, %(worker)s, %(queue)s, %(category)s, 'start',
    j.claimed_at, j.available_at, %(lease)s, j.errors::text
from (select) as one
left join queue.jobs as j on j.id = %(job_id)s and j.token = %(token)s
"""

ROW = """
insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome, detail)
values (%s, %s, %s, %s, %s, %s, %s)
"""


def _connection_trouble(exc: BaseException) -> bool:
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state[:2] in ("08", "53", "57", "58")


class ProcessLog:
    """One log connection per worker process, shared by its handler threads.

    Start and end rows are written at once (autocommit) before the handler goes on; outcome
    rows (from the driver's events, after andal answered) are buffered and written by a
    background thread every 100 ms, and at exit. ``REL_LOG_SYNC=1`` keeps synchronous_commit
    on (the database-crash test); otherwise log commits are asynchronous, which a worker's
    crash cannot lose. A lost connection is retried for ``REL_LOG_RETRY`` seconds (30).
    """

    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn or os.environ["DATABASE_URL"]
        self.sync = os.environ.get("REL_LOG_SYNC", "0") == "1"
        self.retry_for = float(os.environ.get("REL_LOG_RETRY", "30"))
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._pending: list[tuple[Any, ...]] = []
        self._pending_lock = threading.Lock()
        self._flusher: threading.Thread | None = None
        atexit.register(self.flush)

    def _connect(self) -> psycopg.Connection:
        conn = psycopg.connect(
            self.dsn, autocommit=True, application_name=LOG_APP, connect_timeout=5
        )
        if not self.sync:
            conn.execute("set synchronous_commit = off")
        return conn

    def execute(self, sql: str, params: Any, many: bool = False) -> None:
        deadline = time.monotonic() + self.retry_for
        with self._lock:
            while True:
                try:
                    if self._conn is None or self._conn.closed or self._conn.broken:
                        self._conn = self._connect()
                    if many:
                        with self._conn.cursor() as cur:
                            cur.executemany(sql, params)
                    else:
                        self._conn.execute(sql, params)
                    return
                except psycopg.Error as exc:
                    if not _connection_trouble(exc) or time.monotonic() > deadline:
                        raise
                    if self._conn is not None:
                        self._conn.close()
                    self._conn = None
                    time.sleep(0.2)

    def start(self, job: Any, worker: str) -> None:
        self.execute(
            START,
            {
                "job_id": job.id,
                "attempt": job.attempt,
                "token": job.token,
                "worker": worker,
                "queue": job.queue,
                "category": job.category,
                "lease": job.lease_expires_at,
            },
        )

    def end(self, job: Any, worker: str, outcome: str, detail: str | None = None) -> None:
        self.execute(ROW, (job.id, job.attempt, job.token, worker, "end", outcome, detail))

    def outcome(
        self, job_id: int, attempt: int, token: UUID, worker: str, outcome: str, detail: str
    ) -> None:
        with self._pending_lock:
            self._pending.append((job_id, attempt, token, worker, "outcome", outcome, detail))
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="rel-log-flush", daemon=True
                )
                self._flusher.start()

    def _flush_loop(self) -> None:
        while True:
            time.sleep(0.1)
            with contextlib.suppress(psycopg.Error):  # retried at the next tick
                self.flush()

    def flush(self) -> None:
        with self._pending_lock:
            rows, self._pending = self._pending, []
        if not rows:
            return
        try:
            self.execute(ROW, rows, many=True)
        except BaseException:
            with self._pending_lock:
                self._pending[:0] = rows
            raise
