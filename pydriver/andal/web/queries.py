"""Every statement `andal web` sends, in one place.

Each one calls an andal SQL function with named arguments and casts; the dashboard computes no
queue fact of its own. Reads run inside a transaction that first takes the read-only role
(``READ_ROLE``); actions inside one that takes the admin role (``ADMIN_ROLE``), so PostgreSQL
checks every grant whatever the login role may otherwise do.
"""

from __future__ import annotations

READ_ROLE = "set local role andal_reader"
ADMIN_ROLE = "set local role andal_admin"

#: Whether the login role may take ``role`` (false when the role does not exist).
MEMBER_OF = (
    "select coalesce((select pg_catalog.pg_has_role(r.oid, 'MEMBER')"
    " from pg_catalog.pg_roles as r where r.rolname = %(role)s::text), false)"
)

#: Whether andal is installed: the schema and its live table exist.
INSTALLED = "select to_regnamespace('queue') is not null and to_regclass('queue.jobs') is not null"

#: Which optional public functions this database has (names in schema ``queue``).
FUNCTIONS = (
    "select array_agg(distinct p.proname::text) from pg_catalog.pg_proc as p"
    " where p.pronamespace = 'queue'::regnamespace and p.proname = any(%(names)s::text[])"
)

VERSION = "select queue.version()"

#: queue.stats(): one row per queue (category null) and per queue and category.
STATS = (
    "select s.queue, s.category, s.ready, s.scheduled, s.running, s.dead,"
    " extract(epoch from s.oldest_ready_age)::float8 as oldest_ready_s,"
    " s.avg_run_ms, s.p95_run_ms, s.completed_1m, s.completed_15m, s.completed_1h,"
    " s.retried_1h, s.dead_1h, s.failure_rate, s.retries_per_job,"
    " s.lock_attempts, s.lock_failures, s.contention_ratio,"
    " s.pickup_p50_ms, s.pickup_p95_ms, s.pickup_p99_ms, s.wal_bytes_per_job,"
    " s.held_xmin_age, s.held_xmin_seconds"
    " from queue.stats() as s order by s.queue, s.category nulls first"
)

#: Per queue and minute of the last hour: ended attempts and failure rate, for the charts.
BY_MINUTE = (
    "select m.queue, m.minute, m.completed, m.retried, m.dead, m.failure_rate"
    " from queue.stats_by_minute(span => %(span)s::interval) as m order by m.queue, m.minute"
)

WORKERS = (
    "select w.worker, w.running, w.queues,"
    " extract(epoch from w.oldest_claim_age)::float8 as oldest_claim_s,"
    " extract(epoch from w.next_lease_expiry)::float8 as next_lease_s, w.connections"
    " from queue.workers() as w order by w.worker"
)

#: cache.stats() rows: (metric, labels, value).
CACHE_STATS = "select c.metric, c.labels, c.value from cache.stats() as c"

#: The newest dead letters (of one queue, of one reason), one page of them.
LIST_DEAD = (
    "select d.job_id, d.queue, d.category, d.priority, jsonb_pretty(d.payload) as payload,"
    " d.attempt, d.max_attempts, d.enqueued_at, d.died_at, d.reason, d.last_error,"
    " jsonb_pretty(d.errors) as errors"
    " from queue.list_dead(queue => %(queue)s::text, lim => %(lim)s::int) as d"
    " where %(reason)s::text is null or d.reason = %(reason)s::text"
    " order by d.died_at desc, d.job_id desc limit %(page)s::int offset %(offset)s::int"
)

#: One dead letter by id, among the newest ``lim`` (before queue.job() exists).
DEAD_JOB = (
    "select d.job_id, d.queue, d.category, d.priority, jsonb_pretty(d.payload) as payload,"
    " d.attempt, d.max_attempts, d.enqueued_at, d.died_at, d.reason, d.last_error,"
    " jsonb_pretty(d.errors) as errors"
    " from queue.list_dead(queue => null, lim => %(lim)s::int) as d"
    " where d.job_id = %(job_id)s::bigint"
)

REQUEUE_DEAD = "select queue.requeue_dead(job_id => %(job_id)s::bigint)"
PURGE_DEAD_JOBS = "select queue.purge_dead_jobs(job_ids => %(job_ids)s::bigint[])"
PURGE_DEAD = "select queue.purge_dead(older_than => %(older_than)s::interval)"
CANCEL = "select queue.cancel(job_id => %(job_id)s::bigint)"
