"""The phrasebook: every statement the Python driver sends, in one place.

Each statement calls one andal SQL function with named arguments and explicit casts, so a
renamed parameter or a missing overload fails loudly at the first call (and in the tests)
instead of silently binding to something else. No queue rule lives here: the functions decide.

Parameters are passed as a dict (``%(name)s``). Where a SQL parameter has a default that must
not be overridden with null (``delay``, ``priority``), the driver always passes a value.
"""

from __future__ import annotations

# -- producers ------------------------------------------------------------------------------

ENQUEUE = (
    "select queue.enqueue("
    "payload => %(payload)s::jsonb, queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_key => %(dedup_key)s::text,"
    " cache_key => %(cache_key)s::text, cache_value => %(cache_value)s::jsonb)"
)

ENQUEUE_MANY = (
    "select id from queue.enqueue_many("
    "payloads => %(payloads)s::jsonb[], queue => %(queue)s::text, category => %(category)s::text,"
    " priority => %(priority)s::int, delay => %(delay)s::interval,"
    " max_attempts => %(max_attempts)s::int, dedup_keys => %(dedup_keys)s::text[]) as id"
)

# -- workers --------------------------------------------------------------------------------

#: ``db_now`` is the transaction's clock: ``lease_expires_at - db_now`` is the lease length,
#: which lets the worker schedule heartbeats without trusting its own clock.
CLAIM = (
    "select c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,"
    " c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version,"
    " now() as db_now"
    " from queue.claim(worker => %(worker)s::text, queues => %(queues)s::text[],"
    " batch => %(batch)s::int, lease => %(lease)s::interval) as c"
)

COMPLETE = (
    "select queue.complete(job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " result => %(result)s::jsonb)"
)

COMPLETE_MANY = (
    "select c.job_id, c.completed from queue.complete_many("
    "job_ids => %(job_ids)s::bigint[], tokens => %(tokens)s::uuid[],"
    " results => %(results)s::jsonb[]) as c"
)

FAIL = (
    "select queue.fail(job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " error => %(error)s::text, retry_in => %(retry_in)s::interval,"
    " retryable => %(retryable)s::boolean)"
)

HEARTBEAT_MANY = (
    "select h.job_id, h.lease_expires_at, now() as db_now from queue.heartbeat_many("
    "job_ids => %(job_ids)s::bigint[], tokens => %(tokens)s::uuid[],"
    " extend => %(extend)s::interval) as h"
)

RELEASE = (
    "select queue.release(job_id => %(job_id)s::bigint, token => %(token)s::uuid,"
    " delay => %(delay)s::interval)"
)

#: Housekeeping any worker may run; the driver runs it once a minute.
MAINTAIN = "select queue.maintain()"

LISTEN = "listen andal_jobs"
CHANNEL = "andal_jobs"

# -- operators ------------------------------------------------------------------------------

STATUS = (
    "select s.queue, s.ready, s.scheduled, s.running, s.dead, s.oldest_ready_age"
    " from queue.status() as s order by s.queue"
)

LIST_DEAD = (
    "select d.job_id, d.queue, d.category, d.attempt, d.reason, d.last_error, d.died_at,"
    " d.payload from queue.list_dead(queue => %(queue)s::text, lim => %(lim)s::int) as d"
)

REQUEUE_DEAD = "select queue.requeue_dead(job_id => %(job_id)s::bigint)"

PURGE_DEAD = "select queue.purge_dead(older_than => %(older_than)s::interval)"

CONFIGURE_QUEUE = (
    "select q.queue from queue.configure_queue(queue => %(queue)s::text,"
    " max_attempts => %(max_attempts)s::int, lease => %(lease)s::interval,"
    " backoff => %(backoff)s::text, backoff_base => %(backoff_base)s::interval,"
    " backoff_cap => %(backoff_cap)s::interval, jitter => %(jitter)s::real,"
    " notify => %(notify)s::boolean, payload_limit => %(payload_limit)s::int,"
    " keep_results => %(keep_results)s::boolean, cache_policy => %(cache_policy)s::text) as q"
)

SET_CATEGORY_LIMIT = (
    "select queue.set_category_limit(category => %(category)s::text,"
    " max_running => %(max_running)s::int)"
)

VERSION = "select queue.version()"

#: Whether andal is installed: the schema and its live table exist.
INSTALLED = "select to_regnamespace('queue') is not null and to_regclass('queue.jobs') is not null"
