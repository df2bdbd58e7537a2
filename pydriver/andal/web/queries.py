"""Every statement `andal web` sends, in one place.

Each one calls an andal SQL function with named arguments and casts; the dashboard computes no
queue fact of its own. Reads run inside a transaction that first takes the read-only role
(``SET_ROLE``, andal_monitor); actions inside one that takes the admin role, so PostgreSQL
checks every grant whatever the login role may otherwise do.
"""

from __future__ import annotations

#: Formatted with psycopg.sql.Identifier(role): ``<prefix>_monitor`` (reads only: statistics,
#: workers, job lookups, no payload) or ``<prefix>_admin``; the prefix is ``andal`` unless the
#: install chose another.
SET_ROLE = "set local role {}"

#: Whether the login role may take ``role`` (false when the role does not exist).
MEMBER_OF = (
    "select coalesce((select pg_catalog.pg_has_role(r.oid, 'MEMBER')"
    " from pg_catalog.pg_roles as r where r.rolname = %(role)s::text), false)"
)

#: Whether andal is installed: the schema and its live table exist, or the database is an
#: andal router (``andal router install``: the same functions, run on its partitions).
INSTALLED = (
    "select to_regnamespace('queue') is not null and (to_regclass('queue.jobs') is not null"
    " or to_regnamespace('andal_router') is not null)"
)

VERSION = "select queue.version()"
#: Whether the database is an andal router (its partitions serve the calls).
ROUTER = "select to_regnamespace('andal_router') is not null"
#: On a hot standby: seconds since the last transaction it replayed (its lag while the
#: primary writes); null on a primary.
REPLICA_LAG = (
    "select case when pg_is_in_recovery() then"
    " coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()), 0)::float8 end"
)

#: The install's monitor role (its prefix names the others).
MONITOR_ROLE = "select role_name from queue.roles() where kind = 'monitor'"

#: queue.stats(): one row per queue (category null) and per queue and category.
STATS = (
    "select s.queue, s.category, s.ready, s.scheduled, s.running, s.dead,"
    " extract(epoch from s.oldest_ready_age)::float8 as oldest_ready_s,"
    " s.avg_run_ms, s.p95_run_ms, s.completed_1m, s.completed_15m, s.completed_1h,"
    " s.retried_1h, s.dead_1h, s.failure_rate, s.retries_per_job,"
    " s.lock_attempts, s.lock_failures, s.contention_ratio,"
    " s.pickup_p50_ms, s.pickup_p95_ms, s.pickup_p99_ms, s.wal_bytes_per_job,"
    " s.held_xmin_age, s.held_xmin_seconds, s.paused, s.rate_refusals"
    " from queue.stats() as s order by s.queue, s.category nulls first"
)

#: Per queue and minute of the last hour: ended attempts and failure rate, for the charts.
BY_MINUTE = (
    "select m.queue, m.minute, m.completed, m.retried, m.dead, m.failure_rate"
    " from queue.stats_by_minute(span => %(span)s::interval) as m order by m.queue, m.minute"
)

#: Every known category and its limit (max_running; 0: paused).
CATEGORY_LIMITS = "select c.category, c.max_running from queue.category_limits() as c"

#: Workers (queue.workers()) with what each registered of itself: its handler slots (null
#: for a worker that does not register: an older driver, another client).
WORKERS = (
    "select w.worker, w.running, w.queues,"
    " extract(epoch from w.oldest_claim_age)::float8 as oldest_claim_s,"
    " extract(epoch from w.next_lease_expiry)::float8 as next_lease_s, w.connections,"
    " r.slots, r.host"
    " from queue.workers() as w"
    " left join queue.registered_workers() as r on r.worker = w.worker"
    " order by w.running desc, w.worker limit %(lim)s::int"
)

#: How many workers queue.workers() lists, and the jobs they hold.
WORKER_TOTALS = (
    "select count(*) as workers, coalesce(sum(w.running), 0)::bigint as running"
    " from queue.workers() as w"
)

#: What the banner of every page reads: the held-back xmin (queue.stats(), the same on every
#: row; no row without a queue), ...
BANNER_XMIN = "select s.held_xmin_age, s.held_xmin_seconds from queue.stats() as s limit 1"

#: ... the queues with ready jobs that no live worker takes, and their ready jobs, ...
BANNER_UNSERVED = "select u.queue, u.ready from queue.unserved_queues() as u"

#: ... and every live worker (queue.workers()) with the time left on its nearest lease
#: (negative: a lease it holds ran out).
BANNER_WORKERS = (
    "select w.worker, extract(epoch from w.next_lease_expiry)::float8 as next_lease_s"
    " from queue.workers() as w order by w.worker"
)

#: cache.stats() rows: (metric, labels, value).
CACHE_STATS = "select c.metric, c.labels, c.value from cache.stats() as c"

_JOB_COLUMNS = (
    "j.job_id, j.state, j.queue, j.category, j.priority, j.attempts, j.max_attempts,"
    " j.enqueued_at, j.available_at, j.started_at, j.finished_at, j.worker,"
    " extract(epoch from j.lease_expires_at - now())::float8 as lease_left_s,"
    " j.abort_requested_at, jsonb_pretty(j.result) as result, j.errors,"
    " j.errors -> -1 ->> 'error' as last_error, j.kept_until"
)

#: One job in any state andal remembers (no row otherwise). No payload: see PAYLOAD.
JOB = f"select {_JOB_COLUMNS} from queue.job(job_id => %(job_id)s::bigint) as j"

#: The schedule and tick that enqueued a job, and the cache key it refills (no row: forgotten).
JOB_ORIGIN = (
    "select o.schedule, o.tick, o.cache_key"
    " from queue.job_origin(job_id => %(job_id)s::bigint) as o"
)

#: A job's parents and children (a workflow's), with their states, in id order.
JOB_LINKS = {
    "parents": "select p.parent_id as job_id, p.state"
    " from queue.parent_results(job_id => %(job_id)s::bigint) as p",
    "children": "select c.child_id as job_id, c.state"
    " from queue.child_jobs(job_id => %(job_id)s::bigint) as c",
}

#: A page of jobs of a queue (null: all) in a state (null: all), newest first; keyset paged.
JOBS_BY = (
    f"select {_JOB_COLUMNS} from queue.jobs_by(queue => %(queue)s::text,"
    " state => %(state)s::text, before => %(before)s::bigint, lim => %(lim)s::int) as j"
)

#: A job's payload, indented (admins only: run as andal_admin).
PAYLOAD = "select jsonb_pretty(queue.job_payload(job_id => %(job_id)s::bigint))"

REQUEUE_DEAD = "select queue.requeue_dead(job_id => %(job_id)s::bigint)"

#: A page of dead letters by queue and reason (null: any), newest first; no payload.
DEAD_LETTERS_BY = (
    "select d.job_id, d.queue, d.category, d.reason, d.attempts, d.max_attempts,"
    " d.enqueued_at, d.died_at, d.last_error"
    " from queue.dead_letters_by(queue => %(queue)s::text, reason => %(reason)s::text,"
    " before => %(before)s::bigint, lim => %(lim)s::int) as d"
)

#: Every dead letter matching the filters, at most max_rows of them (admins).
REQUEUE_MATCHING = (
    "select r.requeued, r.refused from queue.requeue_dead_matching(queue => %(queue)s::text,"
    " reason => %(reason)s::text, max_rows => %(max_rows)s::int) as r"
)
PURGE_MATCHING = (
    "select queue.purge_dead_matching(queue => %(queue)s::text, reason => %(reason)s::text,"
    " max_rows => %(max_rows)s::int)"
)
PURGE_DEAD_JOBS = "select queue.purge_dead_jobs(job_ids => %(job_ids)s::bigint[])"
CANCEL = "select queue.cancel(job_id => %(job_id)s::bigint)"
PAUSE = "select queue.pause(queue => %(queue)s::text)"
RESUME = "select queue.resume(queue => %(queue)s::text)"

#: queue.queue_settings(): the queue's policy (the defaults when never configured); the
#: intervals as PostgreSQL prints them.
QUEUE_SETTINGS = (
    "select s.configured, s.max_attempts, s.lease, s.backoff, s.backoff_base,"
    " s.backoff_cap, s.jitter, s.notify, s.payload_limit, s.keep_results,"
    " s.cache_policy, s.paused, s.timeout, s.results_retention,"
    " s.dead_retention, s.history_retention, s.updated_at"
    " from queue.queue_settings(queue => %(queue)s::text) as s"
)

#: The queue's schedules (queue.schedules(), no payload).
SCHEDULES = (
    "select s.name, s.cron, s.every, s.timezone, s.category, s.priority, s.enabled,"
    " s.next_at, s.last_fired_at, s.last_job_id, s.last_error"
    " from queue.schedules() as s where s.queue = %(queue)s::text order by s.name"
)

#: Every rate-limited category (queue.rate_limits()).
RATE_LIMITS = (
    "select r.category, r.starts, r.per, r.started_in_window, r.max_running"
    " from queue.rate_limits() as r"
)
