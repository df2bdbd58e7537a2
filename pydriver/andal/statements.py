"""The phrasebook (``andal.statements``): every statement the Python driver sends, in one place.

Each statement calls one andal SQL function with named arguments and explicit casts, so a
renamed parameter or a missing overload fails loudly at the first call (and in the tests)
instead of silently binding to something else. No queue rule lives here: the functions decide.

Parameters are passed as a dict (``%(name)s``). A null optional argument means its default in
every function (``delay``, ``priority``, ``max_attempts``, ...). The
worker passes its array parameters (``::bigint[]``, ``::uuid[]``, ``::text[]``, ``::jsonb[]``) as
array literals (``andal.worker.plain_array``, ``text_array``): psycopg adapts a Python list
element by element, which costs more client CPU than the statement for a batch of 100.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple
from uuid import UUID

# -- producers ------------------------------------------------------------------------------

ENQUEUE = (
    "select queue.enqueue("
    "payload => %(payload)s::jsonb, queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_key => %(dedup_key)s::text,"
    " cache_key => %(cache_key)s::text, cache_value => %(cache_value)s::jsonb)"
)

#: ``ENQUEUE`` with the producer's trace context (sent only when the producer traces).
ENQUEUE_TRACED = (
    "select queue.enqueue("
    "payload => %(payload)s::jsonb, trace_context => %(trace_context)s::jsonb,"
    " queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_key => %(dedup_key)s::text,"
    " cache_key => %(cache_key)s::text, cache_value => %(cache_value)s::jsonb,"
    " timeout => %(timeout)s::interval)"
)

ENQUEUE_MANY = (
    "select id from queue.enqueue_many("
    "payloads => %(payloads)s::jsonb[], queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_keys => %(dedup_keys)s::text[]) as id"
)

#: ``ENQUEUE_MANY`` with a timeout for every job (``queue.enqueue_many``'s timeout form).
ENQUEUE_MANY_TIMEOUT = (
    "select id from queue.enqueue_many("
    "payloads => %(payloads)s::jsonb[], timeout => %(timeout)s::interval,"
    " queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_keys => %(dedup_keys)s::text[]) as id"
)

#: ``queue.enqueue``'s form with parents (``after``): the job waits until they all ended.
ENQUEUE_AFTER = (
    "select queue.enqueue("
    "payload => %(payload)s::jsonb, after => %(after)s::bigint[], queue => %(queue)s::text,"
    " category => %(category)s::text, priority => %(priority)s::int,"
    " delay => %(delay)s::interval, max_attempts => %(max_attempts)s::int,"
    " cache_key => %(cache_key)s::text, cache_value => %(cache_value)s::jsonb,"
    " trace_context => %(trace_context)s::jsonb, timeout => %(timeout)s::interval,"
    " on_parent_failure => %(on_parent_failure)s::text)"
)

#: ``queue.enqueue_many``'s form with parents: every job of the call waits for them.
ENQUEUE_MANY_AFTER = (
    "select id from queue.enqueue_many("
    "payloads => %(payloads)s::jsonb[], after => %(after)s::bigint[], queue => %(queue)s::text,"
    " category => %(category)s::text, priority => %(priority)s::int,"
    " delay => %(delay)s::interval, max_attempts => %(max_attempts)s::int,"
    " timeout => %(timeout)s::interval, on_parent_failure => %(on_parent_failure)s::text) as id"
)

#: A job's parents (id, state, kept result) and children (id, state, still waiting for it).
PARENT_RESULTS = (
    "select p.parent_id, p.state, p.result"
    " from queue.parent_results(job_id => %(job_id)s::bigint) as p"
)
CHILD_JOBS = (
    "select c.child_id, c.state, c.open from queue.child_jobs(job_id => %(job_id)s::bigint) as c"
)

# -- workers --------------------------------------------------------------------------------

#: ``db_now`` is the transaction's clock: ``lease_expires_at - db_now`` is the lease length,
#: which lets the worker schedule heartbeats without trusting its own clock. The payload comes
#: as text and is decoded per job, so one payload Python cannot decode (JSON nested past its
#: recursion limit) fails that job alone instead of the whole batch. ``deadline``: when the
#: attempt must end (null: the job has no timeout), for the worker to stop its handler then.
CLAIM = (
    "select c.job_id, c.queue, c.category, c.priority, c.payload::text, c.attempt,"
    " c.max_attempts,"
    " c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version,"
    " c.deadline, now() as db_now"
    " from queue.claim(worker => %(worker)s::text, queues => %(queues)s::text[],"
    " batch => %(batch)s::int, lease => %(lease)s::interval, deadlines => true) as c"
)


class Claimed(NamedTuple):
    """A claimed job, read by name: the row of ``CLAIM`` (and the claimed rows of
    ``COMPLETE_MANY_THEN_CLAIM``, its columns 1 to 14). Its fields are the attributes of the
    SQL type ``queue.claimed`` (the claimed row's one declaration, migration 0054), the
    payload as text, then ``db_now`` (a test checks both statements and the type)."""

    job_id: int
    queue: str
    category: str | None
    priority: int
    payload: str
    attempt: int
    max_attempts: int
    token: UUID
    lease_expires_at: datetime
    enqueued_at: datetime
    cache_key: str | None
    cache_version: int | None
    deadline: datetime | None
    db_now: datetime


#: Seconds until the next job of the queues becomes claimable (negative: ready now), null when
#: nothing is scheduled: bounds the pause after an empty claim.
NEXT_AVAILABLE = (
    "select extract(epoch from queue.next_available(queues => %(queues)s::text[])"
    " - clock_timestamp())::float8"
)

COMPLETE = (
    "select queue.complete(job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " result => %(result)s::jsonb)"
)

#: ``queue.complete_many_outcomes``: job id, completed, and why not (``refused``: one word of
#: ``queue.refusals``; ``aborted`` is acknowledged with ``FAIL``, any other discards the outcome)
COMPLETE_MANY = (
    "select c.job_id, c.completed, c.refused from queue.complete_many_outcomes("
    "job_ids => %(job_ids)s::bigint[], tokens => %(tokens)s::uuid[],"
    " results => %(results)s::jsonb[]) as c"
)

#: ``queue.refusals``: why a completion came back ``completed = false`` (from
#: ``COMPLETE_MANY_THEN_CLAIM``) or AN001 (from ``COMPLETE``): job id, refused
REFUSALS = (
    "select r.job_id, r.refused from queue.refusals("
    "job_ids => %(job_ids)s::bigint[], tokens => %(tokens)s::uuid[]) as r"
)

#: ``queue.complete_many_then_claim``: ``COMPLETE_MANY``, then ``CLAIM``, in one call: one
#: round trip and one transaction (one commit) for the outcomes of the jobs that ran and the
#: next jobs for the slots they left. The completions run first, so the claim sees their
#: effects (a category slot they free, say); an error in either rolls both back. A row per
#: completion (``claimed`` false: ``job_id`` and ``completed``, as ``COMPLETE_MANY``), then a
#: row per claimed job (``claimed`` true: the columns of ``CLAIM`` in its order, from
#: ``job_id`` to ``db_now``: a ``Claimed``).
COMPLETE_MANY_THEN_CLAIM = (
    "select d.claimed, d.job_id, d.queue, d.category, d.priority, d.payload::text, d.attempt,"
    " d.max_attempts, d.token, d.lease_expires_at, d.enqueued_at, d.cache_key, d.cache_version,"
    " d.deadline, case when d.claimed then now() end as db_now, d.completed"
    " from queue.complete_many_then_claim(job_ids => %(job_ids)s::bigint[],"
    " tokens => %(tokens)s::uuid[], results => %(results)s::jsonb[],"
    " worker => %(worker)s::text, queues => %(queues)s::text[], batch => %(batch)s::int,"
    " lease => %(lease)s::interval) as d"
)

#: status, reason (the dead letter's, for a dead job) and the next availability
FAIL = (
    "select f.status, f.reason, f.available_at from queue.fail_outcome("
    "job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " error => %(error)s::text, retry_in => %(retry_in)s::interval,"
    " retryable => %(retryable)s::boolean) as f"
)

#: The producers' trace contexts of claimed jobs (read only by a worker that traces).
TRACE_CONTEXTS = (
    "select t.job_id, t.trace_context"
    " from queue.trace_contexts(job_ids => %(job_ids)s::bigint[]) as t"
)

#: ``abort_requested``: ``queue.cancel`` asked for the job to stop (the lease is then no
#: longer extended).
HEARTBEAT_MANY = (
    "select h.job_id, h.lease_expires_at, now() as db_now, h.abort_requested"
    " from queue.heartbeat_many(job_ids => %(job_ids)s::bigint[], tokens => %(tokens)s::uuid[],"
    " report_abort => true, extend => %(extend)s::interval) as h"
)

RELEASE = (
    "select queue.release(job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " delay => %(delay)s::interval)"
)

#: Housekeeping any worker may run; the driver runs it once a minute.
MAINTAIN = "select queue.maintain()"

# -- the cache (andal.cache) -----------------------------------------------------------------

CACHE_GET = (
    "select g.value, g.version, g.stale, g.checksum,"
    " extract(epoch from g.expires_at - now())::float8 as ttl_left,"
    " octet_length(g.value::text) as size"
    " from cache.get(key => %(key)s::text, refresh_queue => %(refresh_queue)s::text) as g"
)

#: put, then the entry's remaining TTL (the put may have chosen it: adaptive TTL).
CACHE_PUT = (
    "with p as (select cache.put(key => %(key)s::text, value => %(value)s::jsonb,"
    " ttl => %(ttl)s::interval, if_version => %(if_version)s::bigint) as version)"
    " select p.version, (select extract(epoch from g.expires_at - now())::float8"
    " from cache.get(key => %(key)s::text) as g) as ttl_left from p"
)

#: The same for a refill after a miss (``cache.refill``: alone in its transaction, on the
#: cache's own autocommit connections, it commits without waiting for the WAL flush).
CACHE_PUT_REFILL = (
    "with p as (select cache.refill(key => %(key)s::text, value => %(value)s::jsonb,"
    " ttl => %(ttl)s::interval, if_version => %(if_version)s::bigint) as version)"
    " select p.version, (select extract(epoch from g.expires_at - now())::float8"
    " from cache.get(key => %(key)s::text) as g) as ttl_left from p"
)

CACHE_INVALIDATE = "select cache.invalidate(key => %(key)s::text, reason => %(reason)s::text)"

CACHE_CHANGES_SINCE = (
    "select c.seq, c.key, c.version, c.op, c.watermark, c.xid, c.snapshot::text"
    " from cache.changes_since(watermark => %(watermark)s::bigint, epoch => %(epoch)s::bigint,"
    " lim => %(lim)s::int, after_xid => %(after_xid)s::bigint,"
    " after_seq => %(after_seq)s::bigint, snapshot => %(snapshot)s::pg_snapshot) as c"
)

CACHE_VALIDATE = (
    "select v.key, v.version, v.checksum, v.stale, v.repaired"
    " from cache.validate(keys => %(keys)s::text[], versions => %(versions)s::bigint[],"
    " checksums => %(checksums)s::text[], loaded => %(loaded)s::jsonb[]) as v"
)

CACHE_REPORT_READS = (
    "select cache.report_reads(pool => %(pool)s::text, counts => %(counts)s::jsonb)"
)

CACHE_REFRESH_VIEW = (
    "select cache.refresh_view(view => r.view) as took"
    " from (select to_regclass(%(view)s::text) as view) as r where r.view is not null"
)

#: The NOTIFY channel of cache changes (payload: the writer's transaction id, a hint only).
#: Formatted with psycopg.sql.Identifier(channel): a Cache may be given another channel.
CACHE_CHANNEL = "andal_cache"
CACHE_LISTEN = "listen {}"

# -- the demo (andal demo: its own cluster, superuser) ------------------------------------

#: Formatted with psycopg.sql.Identifier(name).
DEMO_DROP_DATABASE = "drop database if exists {} with (force)"
DEMO_CREATE_DATABASE = "create database {}"
#: The demo queue's live jobs and dead letters (the demo runs as the superuser).
DEMO_LIVE_JOBS = "select count(*) from queue.jobs where queue = %s"
DEMO_DEAD_JOBS = "select count(*) from queue.dead_letters where queue = %s"
#: The dead letters of the demo queue from job id %s on (this run's, on a reused database).
DEMO_DEAD_SINCE = "select count(*) from queue.dead_letters where queue = %s and job_id >= %s"

# -- vacuum, when the server's autovacuum is off ---------------------------------------------
# VACUUM cannot run inside a function (nor a transaction): these statements stay in the driver.

AUTOVACUUM_OFF = "select current_setting('autovacuum') = 'off'"

AUTOVACUUM_OFF_ROLE = "select current_setting('autovacuum') = 'off', current_user::text"

#: Session-level, so it spans the VACUUMs (each its own transaction); released by VACUUM_UNLOCK.
VACUUM_LOCK = "select pg_try_advisory_lock(%(key)s::bigint)"
VACUUM_UNLOCK = "select pg_advisory_unlock(%(key)s::bigint)"

#: ``queue.vacuum_due``: andal's tables to vacuum now (changed, and not vacuumed by anyone in
#: the last ``every``), whether this role may vacuum each, most dead rows first.
VACUUM_DUE = (
    "select v.schema_name, v.table_name, v.dead, v.allowed"
    " from queue.vacuum_due(every => %(every)s::interval) as v"
)

#: Formatted with psycopg.sql.Identifier(schema, table).
VACUUM = "vacuum (analyze) {}"

LISTEN = "listen andal_jobs"
CHANNEL = "andal_jobs"
#: ``queue.cancel`` asked the worker holding a running job to stop it (a hint: the worker
#: re-reads the request with a heartbeat).
LISTEN_ABORT = "listen andal_abort"
ABORT_CHANNEL = "andal_abort"
#: The listener's session sleeps on its queues (producers hint it until ``BUSY``), and wakes.
IDLE = "select queue.idle(queues => %(queues)s::text[])"
BUSY = "select queue.busy()"

# -- operators ------------------------------------------------------------------------------

STATUS = (
    "select s.queue, s.ready, s.scheduled, s.running, s.dead, s.oldest_ready_age"
    " from queue.status() as s order by s.queue"
)

#: queue.stats() rows (one per queue, category null, and one per queue and category), with the
#: seconds elapsed in the current minute (the 1m/15m windows are whole minutes plus this one).
STATS = (
    "select s.queue, s.category, s.ready, s.scheduled, s.running, s.dead, s.oldest_ready_age,"
    " s.avg_run_ms, s.p95_run_ms, s.completed_1m, s.completed_15m, s.completed_1h,"
    " s.retried_1m, s.retried_15m, s.retried_1h, s.dead_1m, s.dead_15m, s.dead_1h,"
    " s.failure_rate, s.retries_per_job, s.lock_attempts, s.lock_failures,"
    " s.contention_ratio, s.pickup_p50_ms, s.pickup_p95_ms, s.pickup_p99_ms,"
    " s.wal_bytes_per_job, s.paused,"
    " extract(epoch from now() - date_trunc('minute', now()))::float8 as minute_elapsed_s"
    " from queue.stats() as s"
)

#: Workers: running jobs by worker, and sessions open by andal workers (their connections are
#: named ``andal <worker>``, ``andal <worker> listen`` and ``andal <worker> vacuum``).
#: A worker's registration (queue.workers() knows it by it), also its periodic refresh.
REGISTER_WORKER = (
    "select queue.register_worker(worker => %(worker)s::text, host => %(host)s::text,"
    " pid => %(pid)s::int, queues => %(queues)s::text[], slots => %(slots)s::int,"
    " version => %(version)s::text, expire_after => %(expire_after)s::interval)"
)

UNREGISTER_WORKER = "select queue.unregister_worker(worker => %(worker)s::text)"

WORKERS = (
    "select w.worker, w.running, w.queues, w.oldest_claim_age, w.next_lease_expiry,"
    " w.connections from queue.workers() as w order by w.worker"
)

#: The shared cache's figures (cache.stats()): any columns, shown as they come.
CACHE_STATS = "select * from cache.stats()"

LIST_DEAD = (
    "select d.job_id, d.queue, d.category, d.attempt, d.reason, d.last_error, d.died_at,"
    " d.payload from queue.list_dead(queue => %(queue)s::text, lim => %(lim)s::int) as d"
)

REQUEUE_DEAD = "select queue.requeue_dead(job_id => %(job_id)s::bigint)"

PURGE_DEAD = "select queue.purge_dead(older_than => %(older_than)s::interval)"
PURGE_DEAD_JOBS = "select queue.purge_dead_jobs(job_ids => %(job_ids)s::bigint[])"
PURGE_DEAD_MATCHING = (
    "select queue.purge_dead_matching(queue => %(queue)s::text, reason => %(reason)s::text,"
    " older_than => %(older_than)s::interval, max_rows => %(max_rows)s::int)"
)


SET_CATEGORY_LIMIT = (
    "select queue.set_category_limit(category => %(category)s::text,"
    " max_running => %(max_running)s::int)"
)

VERSION = "select queue.version()"

#: Pausing a queue: its jobs are not claimed until it is resumed (enqueue still works).
PAUSE = "select queue.pause(queue => %(queue)s::text)"
RESUME = "select queue.resume(queue => %(queue)s::text)"

#: One job as andal remembers it (no row: andal does not remember the job).
JOB = "select * from queue.job(job_id => %(job_id)s::bigint)"

#: Waiting for jobs: a NOTIFY on this channel (payload: the job id) when a watched job ends.
LISTEN_DONE = "listen andal_done"
WATCH = "select queue.watch(job_id => %(job_id)s::bigint)"

#: Withdraw a pending or scheduled job, or ask a running job to stop.
CANCEL = "select queue.cancel(job_id => %(job_id)s::bigint)"

#: Whether andal is installed: the schema and its live table exist.
#: The server process running this connection's statements (a pooler's client sees another
#: process id at connection start than this one).
BACKEND_PID = "select pg_backend_pid()"
INSTALLED = "select to_regnamespace('queue') is not null and to_regclass('queue.jobs') is not null"

__all__ = [
    "BACKEND_PID",
    "DEMO_CREATE_DATABASE",
    "DEMO_DEAD_JOBS",
    "DEMO_DEAD_SINCE",
    "DEMO_DROP_DATABASE",
    "DEMO_LIVE_JOBS",
    "ENQUEUE_TRACED",
    "TRACE_CONTEXTS",
    "CACHE_GET",
    "CACHE_PUT",
    "CACHE_PUT_REFILL",
    "CACHE_INVALIDATE",
    "CACHE_CHANGES_SINCE",
    "CACHE_VALIDATE",
    "CACHE_REPORT_READS",
    "CACHE_REFRESH_VIEW",
    "CACHE_CHANNEL",
    "CACHE_LISTEN",
    "ABORT_CHANNEL",
    "CANCEL",
    "JOB",
    "LISTEN_DONE",
    "PAUSE",
    "RESUME",
    "WATCH",
    "AUTOVACUUM_OFF",
    "AUTOVACUUM_OFF_ROLE",
    "CACHE_STATS",
    "CHANNEL",
    "CLAIM",
    "COMPLETE",
    "COMPLETE_MANY",
    "COMPLETE_MANY_THEN_CLAIM",
    "REFUSALS",
    "ENQUEUE",
    "ENQUEUE_MANY",
    "ENQUEUE_AFTER",
    "ENQUEUE_MANY_AFTER",
    "PARENT_RESULTS",
    "CHILD_JOBS",
    "FAIL",
    "HEARTBEAT_MANY",
    "INSTALLED",
    "LISTEN",
    "LISTEN_ABORT",
    "IDLE",
    "BUSY",
    "LIST_DEAD",
    "MAINTAIN",
    "PURGE_DEAD",
    "PURGE_DEAD_JOBS",
    "PURGE_DEAD_MATCHING",
    "RELEASE",
    "REQUEUE_DEAD",
    "SET_CATEGORY_LIMIT",
    "STATS",
    "STATUS",
    "VACUUM",
    "VACUUM_DUE",
    "VACUUM_LOCK",
    "VACUUM_UNLOCK",
    "VERSION",
    "NEXT_AVAILABLE",
    "REGISTER_WORKER",
    "UNREGISTER_WORKER",
    "WORKERS",
]
