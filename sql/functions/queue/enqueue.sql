-- queue.enqueue: add one job; returns its id.
--
-- Guarantees: the job is visible to claimers when the caller's transaction commits (so a
-- rolled-back enqueue never runs). A dedup_key equal to that of a live (pending or running)
-- job of the same queue returns that job's id and inserts nothing, also under concurrent
-- enqueues. One NOTIFY on channel andal_jobs (payload: the queue name) per transaction and
-- queue, unless the queue's notify is off or the job is delayed. With cache_key and
-- cache_value the value is written through to the shared cache in the same transaction;
-- the job then carries the cache version it needs (cache_version).
-- A null optional argument means its default (priority 0, no delay, the queue's max_attempts
-- and timeout, no category, dedup_key or cache_key), so a client can pass every argument.
-- Isolation: any level without dedup_key and cache_key; with either, READ COMMITTED (checked
-- up front, 55000 otherwise): they read rows other transactions commit meanwhile, which a
-- REPEATABLE READ or SERIALIZABLE snapshot hides.
-- Raises: 22004 null payload or queue; 22023 non-object payload, a delay or priority out of
-- bounds (queue.config), max_attempts < 1, empty or over-long names, JSON null cache_value;
-- 54000 payload over the queue's limit, cache_value over the cache's; 55000 dedup_key or
-- cache_key outside READ COMMITTED.
-- The body of every form of queue.enqueue (private) but the common call, which the 9-argument
-- form hands to queue._enqueue_lean; timeout null: the queue's; trace_context null: none
-- (checked by queue._check_trace_context). Its steps: the checks and the queue's policy
-- (queue._enqueue_check), the insert (or the live job holding the dedup key), the cache
-- version of a job with a cache_key (queue._enqueue_cache) and the hint.
create or replace function queue._enqueue(
    payload jsonb,
    queue text,
    category text,
    priority int,
    delay interval,
    max_attempts int,
    dedup_key text,
    cache_key text,
    cache_value jsonb,
    timeout interval,
    trace_context jsonb
) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_id bigint;
    v_inserted boolean := false;
    -- null means the default, as for max_attempts and timeout
    v_priority int := coalesce(_enqueue.priority, 0);
    v_delay interval := coalesce(_enqueue.delay, interval '0');
begin
    v_cfg := queue._enqueue_check(_enqueue.payload, _enqueue.queue, _enqueue.category,
        v_priority, v_delay, _enqueue.max_attempts, _enqueue.dedup_key, _enqueue.cache_key,
        _enqueue.cache_value, _enqueue.timeout, _enqueue.trace_context);
    if _enqueue.category is not null then
        perform queue._category_id(_enqueue.category);
    end if;

    loop
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, dedup_key,
            cache_key, timeout, trace_context
        ) values (
            _enqueue.queue, _enqueue.category, v_priority, _enqueue.payload,
            coalesce(_enqueue.max_attempts, v_cfg.max_attempts), now() + v_delay,
            _enqueue.dedup_key, _enqueue.cache_key, coalesce(_enqueue.timeout, v_cfg.timeout),
            _enqueue.trace_context
        )
        on conflict (queue, dedup_key) where dedup_key is not null do nothing
        returning j.id into v_id;
        if v_id is not null then
            v_inserted := true;
            exit;
        end if;
        -- A live job holds the key; it may finish between the conflict and this read: retry.
        select j.id into v_id from queue.jobs as j
        where j.queue = _enqueue.queue and j.dedup_key = _enqueue.dedup_key;
        exit when v_id is not null;
    end loop;

    if v_inserted then
        if _enqueue.cache_key is not null then
            perform queue._enqueue_cache(v_id, _enqueue.cache_key, _enqueue.cache_value);
        end if;
        if v_cfg.notify and v_delay <= interval '0' then
            perform queue._notify_ready(_enqueue.queue, true);
        end if;
    end if;
    return v_id;
end
$$;

-- _enqueue_check: the checks of queue._enqueue's arguments, in queue.enqueue's order of
-- errors (priority and delay with their defaults applied), every one before anything is
-- written (no sequence advances for a rejected call); reads the queue's policy
-- (queue._config) for the payload's limit and returns it. Used by queue._enqueue.
create or replace function queue._enqueue_check(
    payload jsonb, queue text, category text, priority int, delay interval, max_attempts int,
    dedup_key text, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb
) returns queue.queues
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cfg queue.queues;
begin
    perform queue._check_name(_enqueue_check.queue, 'queue');
    -- (a helper is called only when it has something to check: a null name or timeout
    -- passes, so does a delay of 0 in effect, as in queue._enqueue_many_check)
    if _enqueue_check.category is not null then
        perform queue._check_name(_enqueue_check.category, 'category', false);
    end if;
    if _enqueue_check.dedup_key is not null then
        perform queue._check_name(_enqueue_check.dedup_key, 'dedup_key', false, 512);
    end if;
    if _enqueue_check.cache_key is not null then
        perform queue._check_name(_enqueue_check.cache_key, 'cache_key', false, 512);
    end if;
    if not (_enqueue_check.delay = interval '0'
            and abs(extract(epoch from _enqueue_check.delay)) < 1e9
            and now() + _enqueue_check.delay = now()) then
        perform queue._check_interval(_enqueue_check.delay, 'delay', bound => 'delay');
    end if;
    if _enqueue_check.priority <> 0 then
        perform queue._check_priority(_enqueue_check.priority);  -- 0 is always allowed
    end if;
    if _enqueue_check.timeout is not null then
        perform queue._check_interval(_enqueue_check.timeout, 'timeout', true, false, 'lease');
    end if;
    if _enqueue_check.max_attempts is not null and _enqueue_check.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', _enqueue_check.max_attempts
            using errcode = '22023';
    end if;
    if _enqueue_check.cache_value is not null and _enqueue_check.cache_key is null then
        raise exception 'cache_value needs a cache_key' using errcode = '22023';
    end if;
    if _enqueue_check.payload is null then
        raise exception 'payload must not be null' using errcode = '22004';
    end if;
    -- A dedup key answers with the live job of another transaction, a cache key reads or
    -- writes the entry others change: both need the newest committed rows, which a
    -- REPEATABLE READ or SERIALIZABLE snapshot hides (it would fail with 40001 on a race).
    if (_enqueue_check.dedup_key is not null or _enqueue_check.cache_key is not null)
        and current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.enqueue with a dedup_key or cache_key must run at READ COMMITTED '
            'isolation (not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Enqueue without dedup_key and cache_key, or in a READ COMMITTED transaction.';
    end if;
    if _enqueue_check.trace_context is not null then
        perform queue._check_trace_context(_enqueue_check.trace_context);
    end if;
    -- a cache_value is checked also when a live job already holds the dedup key
    if _enqueue_check.cache_value is not null then
        perform cache._check_value(_enqueue_check.cache_value, 'cache_value');
    end if;
    v_cfg := queue._config(_enqueue_check.queue);
    perform queue._check_payload(_enqueue_check.payload, 'payload', v_cfg.payload_limit);
    return v_cfg;
end
$$;

-- _enqueue_cache: the cache step of a job queue._enqueue inserted with a cache_key: the
-- cache_value written through to the shared cache in the caller's transaction, or without
-- one the key's current version, stored on the job as the cache version it needs
-- (cache_version). Used by queue._enqueue.
create or replace function queue._enqueue_cache(job_id bigint, cache_key text, cache_value jsonb)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_version bigint;
begin
    if _enqueue_cache.cache_value is not null then
        v_version := cache._write_through(_enqueue_cache.cache_key, _enqueue_cache.cache_value);
    else
        v_version := cache._current_version(_enqueue_cache.cache_key);
    end if;
    update queue.jobs as j set cache_version = v_version where j.id = _enqueue_cache.job_id;
end
$$;

-- _enqueue_lean: the body of the common call of queue.enqueue (private) — no category,
-- dedup_key, cache_key, cache_value, trace context or timeout, the queue's max_attempts,
-- priority 0 and a delay whose effect is exactly none (the 9-argument form decides; every
-- other call takes queue._enqueue). Its checks are plain expressions (the check helpers run
-- only to raise their own error), the policy is read here (queue._config only creates a
-- missing row) and passed to the hint (queue._notify_ready): fewer PL/pgSQL frames and
-- statements per call than queue._enqueue. Same rules, same errors in the same order as
-- queue._enqueue. enable_seqscan = off keeps the policy read on the primary key whatever the
-- statistics say, as in queue._config.
create or replace function queue._enqueue_lean(payload jsonb, queue text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_id bigint;
begin
    if _enqueue_lean.queue is null or length(_enqueue_lean.queue) not between 1 and 128 then
        perform queue._check_name(_enqueue_lean.queue, 'queue');
    end if;
    if _enqueue_lean.payload is null then
        raise exception 'payload must not be null' using errcode = '22004';
    end if;
    select q.* into v_cfg from queue.queues as q where q.queue = _enqueue_lean.queue;
    if not found then
        v_cfg := queue._config(_enqueue_lean.queue);
    end if;
    -- queue._json_size's first step, inline: a small object (stored in at most 1024 bytes)
    -- printing as at most 1000 bytes within the limit passes; anything else is checked whole
    if jsonb_typeof(_enqueue_lean.payload) <> 'object'
        or pg_column_size(_enqueue_lean.payload) > 1024
        or octet_length(_enqueue_lean.payload::text) > least(1000, v_cfg.payload_limit) then
        perform queue._check_payload(_enqueue_lean.payload, 'payload', v_cfg.payload_limit);
    end if;
    insert into queue.jobs as j (queue, payload, max_attempts, available_at, timeout)
    values (
        _enqueue_lean.queue, _enqueue_lean.payload, v_cfg.max_attempts, now(), v_cfg.timeout
    )
    returning j.id into v_id;
    if v_cfg.notify then
        perform queue._notify_ready(_enqueue_lean.queue, true);
    end if;
    return v_id;
end
$$;

create or replace function queue.enqueue(
    payload jsonb,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_key text default null,
    cache_key text default null,
    cache_value jsonb default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    -- The common call (the driver's, the benchmark's) takes the lean body. A null priority
    -- or delay means its default; the delay must be 0 in effect (now() + delay = now(),
    -- tested only on a delay equal to 0 and small enough to add).
    if category is null and dedup_key is null and cache_key is null and cache_value is null
        and max_attempts is null and coalesce(priority, 0) = 0
        and coalesce(delay, interval '0') = interval '0'
        and abs(extract(epoch from coalesce(delay, interval '0'))) < 1e9
        and now() + coalesce(delay, interval '0') = now() then
        return queue._enqueue_lean(payload, queue);
    end if;
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, null, null);
end
$$;

-- queue.enqueue with a timeout: the maximum run time of each attempt of this job (null: the
-- queue's timeout, see queue.configure_queue). An attempt still running at claim time +
-- timeout fails with reason timeout: its lease ends there (heartbeats cannot extend it),
-- its token is fenced, and the job is retried after the queue's backoff or dead-lettered.
-- Raises as queue.enqueue, and 22023 for a timeout <= 0 or over queue.config.max_lease.
create or replace function queue.enqueue(
    payload jsonb,
    timeout interval,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_key text default null,
    cache_key text default null,
    cache_value jsonb default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, timeout, null);
end
$$;

-- queue.enqueue with the producer's trace context: a JSON object of strings, as an
-- OpenTelemetry propagator injects it ({"traceparent": "00-...", "tracestate": "..."}),
-- stored with the job for the worker's span to link to (queue.trace_contexts). Sent only by
-- a producer that traces; timeout as in the form above (null: the queue's).
-- Raises as queue.enqueue, and 22023 for a trace_context that is not an object of strings
-- or over 4096 bytes of JSON text.
create or replace function queue.enqueue(
    payload jsonb,
    trace_context jsonb,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_key text default null,
    cache_key text default null,
    cache_value jsonb default null,
    timeout interval default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, timeout, trace_context);
end
$$;

revoke all on function queue._enqueue(
    jsonb, text, text, int, interval, int, text, text, jsonb, interval, jsonb
) from public;
revoke all on function queue._enqueue_lean(jsonb, text) from public;
revoke all on function queue._enqueue_check(
    jsonb, text, text, int, interval, int, text, text, jsonb, interval, jsonb
) from public;
revoke all on function queue._enqueue_cache(bigint, text, jsonb) from public;
comment on function queue.enqueue(
    jsonb, jsonb, text, text, int, interval, int, text, text, jsonb, interval
) is 'Add a job carrying the producer''s trace context; returns its id.';
revoke all on function queue.enqueue(
    jsonb, jsonb, text, text, int, interval, int, text, text, jsonb, interval
) from public;
grant execute on function queue.enqueue(
    jsonb, jsonb, text, text, int, interval, int, text, text, jsonb, interval
) to andal_producer, andal_admin;
comment on function queue.enqueue(
    jsonb, interval, text, text, int, interval, int, text, text, jsonb
) is 'Add a job with a timeout (maximum run time of an attempt); returns its id.';
revoke all on function queue.enqueue(
    jsonb, interval, text, text, int, interval, int, text, text, jsonb
) from public;
grant execute on function queue.enqueue(
    jsonb, interval, text, text, int, interval, int, text, text, jsonb
) to andal_producer, andal_admin;
comment on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb) is
'Add a job; returns its id (or the id of the live job with the same dedup_key).';
revoke all on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb)
from public;
grant execute on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb)
to andal_producer, andal_admin;

-- queue.enqueue with parents: the job waits (state waiting, never claimed) until every job
-- of `after` (their ids, of any queues) has ended, and becomes claimable in the transaction
-- that ends the last of them (then at its delay, when it has one). A parent already
-- completed (or one andal no longer remembers) counts as ended. A parent that ends dead or
-- cancelled applies on_parent_failure: 'cancel' (the default; null too) cancels the job,
-- reason parent_failed, and its own waiting children in turn; 'run' counts the end as any
-- other (the job reads what happened with queue.parent_results). A parent already dead or
-- cancelled applies it at once. An empty or null `after` makes a plain job. No dedup_key:
-- create a workflow's jobs in one transaction instead. Rules: sql/functions/queue/_workflow.sql.
-- A parent must be committed (or enqueued in the caller's transaction): an uncommitted
-- parent of another transaction is not seen and counts as ended.
-- Raises as queue.enqueue, and 22004 a null element of `after`; 22023 an id andal never
-- issued, on_parent_failure not 'cancel' or 'run', more than 100000 parents.
create or replace function queue.enqueue(
    payload jsonb,
    after bigint[],
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    cache_key text default null,
    cache_value jsonb default null,
    timeout interval default null,
    trace_context jsonb default null,
    on_parent_failure text default 'cancel'
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_policy text := coalesce(on_parent_failure, 'cancel');
    v_parents bigint[] := queue._workflow_check(coalesce(after, '{}'), v_policy);
    v_id bigint;
begin
    v_id := queue._enqueue(payload, queue, category, priority, delay, max_attempts, null,
        cache_key, cache_value, timeout, trace_context);
    perform queue._workflow_wait(array[v_id], queue, v_parents, v_policy);
    return v_id;
end
$$;

comment on function queue.enqueue(
    jsonb, bigint[], text, text, int, interval, int, text, jsonb, interval, jsonb, text
) is 'Add a job that waits for the jobs of after to end; returns its id.';
revoke all on function queue.enqueue(
    jsonb, bigint[], text, text, int, interval, int, text, jsonb, interval, jsonb, text
) from public;
grant execute on function queue.enqueue(
    jsonb, bigint[], text, text, int, interval, int, text, jsonb, interval, jsonb, text
) to andal_producer, andal_admin;
