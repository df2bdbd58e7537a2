-- Job lookup: queue.job (one job by id, for every role that reads), queue.job_origin (the
-- schedule or cache key it came from, same roles), queue.job_payload (its payload, for
-- admins), and the private helpers queue._live_state and queue._remembered.
--
-- Where a job's facts come from, in this order (the first source that has the id answers):
--   1. queue.jobs: a live job (scheduled, pending, failed awaiting retry, running);
--   2. queue.history: a finished job of a queue that keeps history (its newest row: the
--      highest finished_seq, rows without one older than any with one, then finished_at);
--   3. queue.dead_letters: a dead or cancelled job (kept until purge_dead);
--   4. queue.results: a completed job of a queue with keep_results (result and time only);
--   5. queue.completions: any job completed in the last hour (queue._completions_keep),
--      whatever its queue keeps (its queue and time only; kept_until: when it is forgotten).
-- A job found in none of them is one andal does not remember: it never existed, or it
-- completed over an hour ago in a queue that keeps no history (nor results), or its history
-- expired, or its dead letter was purged. queue.job returns no row then.

-- _live_state: the state of a live job from its row, as queue.job names it (states.sql).
create or replace function queue._live_state(
    status text, available_at timestamptz, attempt int
) returns text
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select queue._job_name(queue._job_state(status, available_at <= now(), attempt > 0))
$$;

-- queue.job: one row describing the job, or no row when andal does not remember it (see
-- above). One statement, so it reads one snapshot: a job that finishes meanwhile is seen
-- either live or finished, never missing.
-- state: the job_state of queue.states(): waiting, scheduled (waiting for its delay),
-- pending (ready), running, failed (an attempt failed and the retry waits for its
-- backoff), completed, dead, cancelled.
-- attempts: runs started; started_at: start of the current (running) or last attempt,
-- null when unknown (a dead letter); finished_at: when it completed, died or was cancelled;
-- worker and lease_expires_at: the worker holding it and its lease, while it runs;
-- abort_requested_at: when queue.cancel asked the running job to stop; result: the
-- completion result when kept (history, or keep_results); errors: the error history, one
-- object per failed attempt; kept_until: when its history row may be dropped (history only).
-- No payload: that is queue.job_payload, for admins.
-- Raises: 22004 null job_id.
create or replace function queue.job(job_id bigint)
returns setof queue.job_info
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
-- every source is read by its job id index, whatever the statistics say
set enable_seqscan = off
set jit = off
rows 1
as $$
#variable_conflict use_column
begin
    if job.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    select s.job_id, s.state, s.queue, s.category, s.priority, s.attempts, s.max_attempts,
        s.enqueued_at, s.available_at, s.started_at, s.finished_at, s.worker,
        s.lease_expires_at, s.abort_requested_at, s.result, s.errors, s.kept_until
    from (
        select 1 as src, j.id as job_id,
            queue._live_state(j.status, j.available_at, j.attempt) as state,
            j.queue, j.category, j.priority, j.attempt as attempts, j.max_attempts,
            j.enqueued_at, j.available_at, j.claimed_at as started_at,
            null::timestamptz as finished_at, j.worker, j.lease_expires_at,
            j.abort_requested_at, null::jsonb as result, j.errors,
            null::timestamptz as kept_until
        from queue.jobs as j
        where j.id = job.job_id
        union all
        (select 2, h.job_id, h.state, h.queue, h.category, h.priority, h.attempt,
            h.max_attempts, h.enqueued_at, null, h.started_at, h.finished_at, null, null, null,
            h.result, h.errors, h.keep_until
         from queue.history as h
         where h.job_id = job.job_id
         order by h.finished_seq desc nulls last, h.finished_at desc
         limit 1)
        union all
        select 3, d.job_id,
            queue._ended_state(d.reason),
            d.queue, d.category, d.priority, d.attempt, d.max_attempts, d.enqueued_at, null,
            null, d.died_at, null, null, null, null, d.errors, null
        from queue.dead_letters as d
        where d.job_id = job.job_id
        union all
        select 4, r.job_id, 'completed', r.queue, null, null, null, null, null, null, null,
            r.completed_at, null, null, null, r.result, null, null
        from queue.results as r
        where r.job_id = job.job_id
        union all
        select 5, job.job_id, 'completed', c.queues[array_position(c.ids, job.job_id)], null,
            null, null, null, null, null, null, c.completed_at, null, null, null, null, null,
            c.completed_at + queue._completions_keep()
        from queue.completions as c  -- a job completes once: in one row at most
        where c.span @> job.job_id and job.job_id = any (c.ids)
    ) as s
    order by s.src
    limit 1;
end
$$;

-- _remembered: the payload and cache key of a job andal remembers with its payload (live,
-- history, dead letter: the first source that has the id, as above); no row when none does.
-- History keeps no cache key (null there). The one home of that precedence for
-- queue.job_payload and queue.job_origin.
create or replace function queue._remembered(job_id bigint)
returns table (payload jsonb, cache_key text)
language sql stable
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
rows 1
as $$
    select s.payload, s.cache_key from (
        select 1 as src, j.payload, j.cache_key from queue.jobs as j
        where j.id = _remembered.job_id
        union all
        (select 2, h.payload, null from queue.history as h where h.job_id = _remembered.job_id
         order by h.finished_seq desc nulls last, h.finished_at desc limit 1)
        union all
        select 3, d.payload, d.cache_key from queue.dead_letters as d
        where d.job_id = _remembered.job_id
    ) as s
    order by s.src
    limit 1
$$;

-- queue.job_payload: the payload of a job andal remembers (live, history or dead letter);
-- null when it does not. For admins: payloads may hold what only the application should see.
-- Raises: 22004 null job_id.
create or replace function queue.job_payload(job_id bigint)
returns jsonb
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if job_payload.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return (select r.payload from queue._remembered(job_payload.job_id) as r);
end
$$;

-- queue.job_origin: where a job came from, for every role that reads queue.job (no payload).
-- schedule, tick: the schedule and the tick that enqueued it (the marks a schedule's tick
-- puts in the payload, "_schedule" and "_tick"; null for a job no schedule enqueued);
-- cache_key: the cache key whose refill it is (null for other jobs, and once the job is in
-- history, which keeps no cache key). One row, or none when andal does not remember the
-- job's payload (a job completed in a queue that keeps no history, or a purged dead letter).
-- Raises: 22004 null job_id.
create or replace function queue.job_origin(job_id bigint)
returns table (schedule text, tick timestamptz, cache_key text)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
rows 1
as $$
declare
    v_payload jsonb;
    v_key text;
    v_tick timestamptz;
begin
    if job_origin.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    select r.payload, r.cache_key into v_payload, v_key
    from queue._remembered(job_origin.job_id) as r;
    if not found then
        return;
    end if;
    if jsonb_typeof(v_payload -> '_schedule') = 'string' then
        begin
            v_tick := (v_payload ->> '_tick')::timestamptz;
        exception when data_exception then
            v_tick := null;  -- a producer's own "_tick", not a schedule's mark
        end;
    end if;
    return query select
        case when v_tick is not null then v_payload ->> '_schedule' end, v_tick, v_key;
end
$$;

comment on function queue._live_state(text, timestamptz, int) is
'Private: the state (scheduled, pending, failed, running) of a live job.';
comment on function queue.job(bigint) is
'One job by id: state, queue, attempts, times, worker, result, error history; no row when unknown.';
comment on function queue.job_payload(bigint) is
'The payload of a job andal remembers (admins only).';
comment on function queue._remembered(bigint) is
'Private: the payload and cache key of a remembered job (live, history, dead letter).';
comment on function queue.job_origin(bigint) is
'Where a job came from: the schedule and tick that enqueued it, the cache key it refills.';
revoke all on function queue._live_state(text, timestamptz, int) from public;
revoke all on function queue.job(bigint) from public;
revoke all on function queue.job_payload(bigint) from public;
revoke all on function queue._remembered(bigint) from public;
revoke all on function queue.job_origin(bigint) from public;
grant execute on function queue.job(bigint)
to andal_producer, andal_worker, andal_admin, andal_monitor;
grant execute on function queue.job_payload(bigint) to andal_admin;
grant execute on function queue.job_origin(bigint)
to andal_producer, andal_worker, andal_admin, andal_monitor;
