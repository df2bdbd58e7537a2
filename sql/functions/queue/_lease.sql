-- The lease of a running job: its loss (AN001), the fence every write on behalf of a job
-- passes, and the take-back of expired leases. Private: granted to nobody.

-- The lease rules:
-- * its length: the claim's `lease` argument, else the queue's lease, else
--   queue._lease_default() (60 seconds, as the column default of queue.queues.lease); never
--   past the attempt's deadline (claimed_at + the job's timeout);
-- * its clock: every lease and fencing decision (a claim's expiry, the take-back of
--   expired leases, the fence of complete, complete_many, fail, release and heartbeat) reads
--   queue._lease_clock(), the database's current time (clock_timestamp()), once per call:
--   never the transaction's start time (now()), so a lease is never handed out already
--   expired by a claim late in a long transaction, and a write after the expiry is refused
--   whenever its transaction began;
-- * the fence: a write on behalf of a job holds when its token is the job's and
--   lease_expires_at > the call's clock (queue._check_fence; the set-based functions write
--   the same predicate, j.token = the given token and j.lease_expires_at > v_now);
-- * its loss: SQLSTATE AN001 with the reason (queue._lease_lost);
-- * its take-back: queue._reap.

-- _lease_default: the lease when neither the claim nor the queue names one.
create or replace function queue._lease_default() returns interval
language sql immutable
set search_path = pg_catalog, pg_temp
as $$ select interval '60 seconds' $$;

-- _lease_clock: the time lease and fencing decisions are made at (see above).
-- PL/pgSQL, not SQL: a SQL function with a SET clause is never inlined, and each transaction
-- that called it re-planned its body (a W1 pgbench drain at batch 1 ran 5–15 % faster so).
create or replace function queue._lease_clock() returns timestamptz
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    return clock_timestamp();
end
$$;

-- _lease_taken: lease the jobs `job_ids` (locked by the caller's claim) to `worker` at
-- v_now, and return them in claim order: a fresh token each, attempt + 1, and the lease:
-- the claim's `lease`, else the queue's, else queue._lease_default(), never past the
-- attempt's deadline (v_now + the job's timeout). This is the lease formula's home;
-- queue._claim_direct keeps a copy inside its one statement (a test proves they agree).
create or replace function queue._lease_taken(
    worker text, job_ids bigint[], lease interval, v_now timestamptz
) returns setof queue.claimed
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = _lease_taken.worker, claimed_at = v_now,
            lease_expires_at = least(v_now + coalesce(
                _lease_taken.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                queue._lease_default()), v_now + j.timeout)
        where j.id = any (_lease_taken.job_ids)
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.token, j.lease_expires_at, j.enqueued_at, j.cache_key, j.cache_version,
            j.available_at, v_now + j.timeout as deadline
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

-- _refusal: why a write on behalf of job_id with token is refused now, in one word (null:
-- it would hold: the token is the job's and its lease runs). The one home of the reasons,
-- returned by queue.refusals and queue.complete_many_outcomes and worded by queue._lease_lost:
-- gone (no longer live: completed, dead-lettered or cancelled); retry_pending (its attempt
-- failed, queue.fail, and it waits for that retry); pending_again (its lease was taken back
-- or it was released); claimed_again (another token holds it now); aborted (an abort was
-- requested while the lease runs: end the attempt with queue.fail, the job ends cancelled);
-- timed_out (it ran past its timeout); expired (its lease ran out, not yet taken back).
create or replace function queue._refusal(job_id bigint, token uuid) returns text
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job queue.jobs;
    v_now timestamptz := queue._lease_clock();
begin
    select j.* into v_job from queue.jobs as j where j.id = _refusal.job_id;
    if not found then
        return 'gone';
    elsif v_job.status <> 'running' and v_job.errors -> -1 ? 'retry_in'
        and (v_job.errors -> -1 ->> 'attempt')::int = v_job.attempt
        and (v_job.errors -> -1 ->> 'at')::timestamptz
            + (v_job.errors -> -1 ->> 'retry_in')::interval = v_job.available_at then
        -- its newest error is queue.fail's (only fail records retry_in) for the attempt it
        -- is at, and the job still waits for that retry: not claimed or released since
        return 'retry_pending';
    elsif v_job.status <> 'running' then
        return 'pending_again';
    elsif v_job.token is distinct from _refusal.token then
        return 'claimed_again';
    elsif v_job.abort_requested_at is not null and v_job.lease_expires_at > v_now then
        return 'aborted';
    elsif v_job.timeout is not null
        and v_job.lease_expires_at >= v_job.claimed_at + v_job.timeout
        and v_job.lease_expires_at <= v_now then
        return 'timed_out';
    elsif v_job.lease_expires_at <= v_now then
        return 'expired';
    end if;
    return null;
end
$$;

-- _lease_lost: raise andal's lease-lost error (SQLSTATE AN001) for job_id, its detail saying
-- why the caller's token is no longer current (queue._refusal). Never returns.
create or replace function queue._lease_lost(job_id bigint, token uuid) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job record;
    v_detail text;
begin
    select j.attempt, j.available_at, j.abort_requested_at, j.timeout, j.lease_expires_at,
        j.lease_expires_at >= j.claimed_at + j.timeout as capped
    into v_job from queue.jobs as j where j.id = _lease_lost.job_id;
    -- (a write refused while the lease still runs: a heartbeat at the attempt's deadline)
    v_detail := case coalesce(queue._refusal(_lease_lost.job_id, _lease_lost.token),
            case when v_job.capped then 'timed_out' end, 'expired')
        when 'gone' then format(
            'job %s is no longer live (completed, dead-lettered or cancelled)', job_id)
        when 'retry_pending' then format('job %s is pending again: its attempt %s failed '
            '(queue.fail) and waits for its retry at %s', job_id, v_job.attempt,
            v_job.available_at)
        when 'pending_again' then format(
            'job %s is pending again (its lease expired or it was released)', job_id)
        -- not who holds it now: any caller with any job id would learn it
        when 'claimed_again' then format('job %s was claimed again (attempt %s)', job_id,
            v_job.attempt)
        when 'aborted' then format('an abort of job %s was requested at %s: end the attempt '
            'with queue.fail, the job ends cancelled', job_id, v_job.abort_requested_at)
        when 'timed_out' then format('job %s ran past its timeout of %s', job_id, v_job.timeout)
        else format('the lease of job %s expired at %s', job_id, v_job.lease_expires_at)
    end;
    raise exception 'lease lost on job %', job_id
        using errcode = 'AN001', detail = v_detail,
        hint = 'Discard this attempt''s outcome: the job will run (or ran) again elsewhere.';
end
$$;

-- _check_fence: a write on behalf of job_id is allowed only while the caller's token is
-- current: the job is running under that token and its lease has not expired by the
-- database's current time (queue._lease_clock: not the transaction's start, so a
-- transaction begun before the expiry cannot write after it). Share-locks the job's row
-- until the caller's transaction ends, so a takeover (which updates the row) waits until
-- the write committed or rolled back. Raises 22004 (null) or AN001.
create or replace function queue._check_fence(job_id bigint, token uuid) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_now timestamptz := queue._lease_clock();
begin
    if job_id is null or token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    -- by primary key and token, as complete (a token is set only while a job runs)
    perform from queue.jobs as j
    where j.id = _check_fence.job_id and j.token = _check_fence.token
      and j.lease_expires_at > v_now
    for share;
    if not found then
        perform queue._lease_lost(_check_fence.job_id, _check_fence.token);
    end if;
end
$$;

-- _reap: take back up to `lim` running jobs of `queues` (null: every queue) whose lease
-- expired: the attempt is spent; the job is pending again at once, keeping its place (its
-- available_at), or dead-lettered when it has no attempt left, or cancelled when its abort
-- was requested. A lease that ran to the attempt's deadline (claimed_at + timeout) is a
-- timeout: the error history records reason timeout and the retry waits for the queue's
-- backoff. Skips rows another session holds. The side effects go through
-- queue._settle_many once, after the loop (the slots freed, the attempts counted, the cache
-- keys in key order, a hint on andal_jobs per queue with a job claimable at once). Returns
-- how many it took back.
drop function if exists queue._reap(int);
create or replace function queue._reap(lim int default 100, queues text[] default null)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job record;
    v_count int := 0;
    v_error text;
    v_timeout boolean;
    -- the jobs taken back, for queue._settle_many: outcome, queue, category, times, cache key
    v_ids bigint[] := '{}'::bigint[];
    v_outcomes text[] := '{}'::text[];
    v_queues text[] := '{}'::text[];
    v_cats text[] := '{}'::text[];
    v_claimed timestamptz[] := '{}'::timestamptz[];
    v_avail timestamptz[] := '{}'::timestamptz[];
    v_keys text[] := '{}'::text[];
    v_ready timestamptz[] := '{}'::timestamptz[];
    v_at timestamptz;
    v_now timestamptz := queue._lease_clock();
begin
    for v_job in
        select j.* from queue.jobs as j
        where j.status = 'running' and j.lease_expires_at <= v_now
          and (_reap.queues is null or j.queue = any (_reap.queues))
        order by j.lease_expires_at
        limit lim
        for update skip locked
    loop
        v_timeout := v_job.timeout is not null
            and v_job.lease_expires_at >= v_job.claimed_at + v_job.timeout;
        if v_timeout then
            -- the attempt ran to its deadline: a failure with reason timeout, retried after
            -- the queue's backoff (or dead-lettered) like any failure
            v_error := format('timeout: the attempt ran past its timeout of %s (worker %s)',
                v_job.timeout, v_job.worker);
            v_job.errors := queue._add_error(v_job.errors, queue._error_entry(
                v_job.attempt, v_error, v_job.worker) || '{"reason": "timeout"}');
        else
            v_error := format('lease expired (worker %s)', v_job.worker);
            v_job.errors := queue._add_error(v_job.errors,
                queue._error_entry(v_job.attempt, v_error, v_job.worker));
        end if;
        v_at := null;
        if v_job.abort_requested_at is not null then
            -- aborted and never acknowledged: fenced now, cancelled, not retried
            perform queue._bury(v_job.id, 'cancelled', 'aborted: ' || v_error, v_job.errors);
            v_outcomes := v_outcomes || 'cancelled'::text;
        elsif queue._out_of_attempts(v_job.attempt, v_job.max_attempts) then
            perform queue._bury(v_job.id, 'exhausted', v_error, v_job.errors);
            v_outcomes := v_outcomes || 'dead'::text;
        else
            update queue.jobs as j
            set status = 'pending', token = null, worker = null, claimed_at = null,
                lease_expires_at = null, errors = v_job.errors,
                available_at = case when v_timeout
                    then now() + queue._backoff(queue._config(v_job.queue), v_job.attempt)
                    else j.available_at end
            where j.id = v_job.id
            returning j.available_at into v_at;
            v_outcomes := v_outcomes || 'retry'::text;
        end if;
        v_ids := v_ids || v_job.id;
        v_queues := v_queues || v_job.queue;
        v_cats := v_cats || v_job.category;
        v_claimed := v_claimed || v_job.claimed_at;
        v_avail := v_avail || v_job.available_at;
        v_keys := v_keys || v_job.cache_key;
        v_ready := v_ready || v_at;
        v_count := v_count + 1;
    end loop;
    if v_count > 0 then
        perform queue._settle_many(v_ids, v_outcomes, v_queues, v_cats, v_claimed, v_avail,
            v_keys, null, v_ready);
    end if;
    return v_count;
end
$$;
revoke all on function queue._lease_default() from public;
revoke all on function queue._lease_clock() from public;
revoke all on function queue._lease_taken(text, bigint[], interval, timestamptz) from public;
revoke all on function queue._refusal(bigint, uuid) from public;
revoke all on function queue._lease_lost(bigint, uuid) from public;
revoke all on function queue._check_fence(bigint, uuid) from public;
revoke all on function queue._reap(int, text[]) from public;
