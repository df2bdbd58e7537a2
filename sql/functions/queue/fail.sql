-- queue.fail: record a failed attempt of a claimed job; returns its new status.
-- queue.fail_outcome: the same, returning the outcome: status, reason and next availability.
--
-- 'pending': retryable and attempts left — the job stays in the table with available_at
-- moved by the queue's backoff (retry_in overrides), on the database clock.
-- 'dead': out of attempts, or retryable => false — the job moves to queue.dead_letters with
-- its whole error history and a NOTIFY goes to channel andal_ops.
-- 'cancelled': an abort of the job was requested (queue.cancel while it ran) — the job moves
-- to queue.dead_letters with reason 'cancelled', never retried, whatever retryable says.
-- Either way the error (with attempt, worker, time) is appended to the job's history, its
-- gate slot is freed, its attempt counted and its cache key invalidated in the same
-- transaction (queue._settle); a retry due at once (retry_in => '0') sends the hint on
-- andal_jobs that the job is claimable.
-- An error longer than queue.config.max_error_bytes is cut to it, marked ' ... (cut at N
-- bytes)' (queue._bound_error), never refused.
-- The lease is checked on the database's current time (queue._lease_clock): a transaction
-- begun before the lease expired cannot fail the job after it.
-- Raises: 22004 null job_id, token or error; 22023 retry_in negative or over
-- queue.config.max_delay; AN001 lease lost.
create or replace function queue._fail(
    job_id bigint, token uuid, error text, retry_in interval, retryable boolean
) returns table (status text, reason text, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
-- by primary key whatever the (possibly stale) statistics say, as complete: a shard
-- analyzed while empty would otherwise be read whole
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_job record;
    v_cfg queue.queues;
    v_delay interval;
    v_error text;
    v_reason text;
    v_at timestamptz;
begin
    if _fail.job_id is null or _fail.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    if _fail.error is null then
        raise exception 'error must not be null' using errcode = '22004',
            hint = 'Pass the error message (and traceback) of the failed attempt.';
    end if;
    if _fail.retryable is null then
        raise exception 'retryable must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(_fail.retry_in, 'retry_in', false, false, 'delay');
    v_error := queue._bound_error(_fail.error);

    select j.* into v_job from queue.jobs as j where j.id = _fail.job_id for update;
    if v_job.id is null or v_job.status <> 'running' or v_job.token <> _fail.token
        or v_job.lease_expires_at <= queue._lease_clock() then
        perform queue._lease_lost(_fail.job_id, _fail.token);
    end if;
    v_cfg := queue._config(v_job.queue);

    if v_job.abort_requested_at is not null then
        perform queue._bury(v_job.id, 'cancelled', v_error, queue._add_error(v_job.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker)));
        perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled',
            v_job.claimed_at, v_job.available_at, v_job.cache_key);
        return query select 'cancelled'::text, 'cancelled'::text, null::timestamptz;
        return;
    end if;
    if not _fail.retryable or queue._out_of_attempts(v_job.attempt, v_job.max_attempts) then
        v_reason := case when _fail.retryable then 'exhausted' else 'non_retryable' end;
        perform queue._bury(v_job.id, v_reason, v_error, queue._add_error(v_job.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker)));
        perform queue._settle(v_job.id, v_job.queue, v_job.category, 'dead',
            v_job.claimed_at, v_job.available_at, v_job.cache_key);
        return query select 'dead'::text, v_reason, null::timestamptz;
        return;
    end if;
    v_delay := coalesce(_fail.retry_in, queue._backoff(v_cfg, v_job.attempt));
    update queue.jobs as j
    set status = 'pending', token = null, worker = null, claimed_at = null,
        lease_expires_at = null, available_at = now() + v_delay,
        errors = queue._add_error(j.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker, v_delay))
    where j.id = v_job.id
    returning j.available_at into v_at;
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'retry',
        v_job.claimed_at, v_job.available_at, v_job.cache_key, ready_at => v_at);
    return query select 'pending'::text, 'retry'::text, v_at;
end
$$;

create or replace function queue.fail(
    job_id bigint,
    token uuid,
    error text,
    retry_in interval default null,
    retryable boolean default true
) returns text
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select f.status from queue._fail(job_id, token, error, retry_in, retryable) as f
$$;

-- queue.fail_outcome: queue.fail, returning its outcome: status ('pending', 'dead' or
-- 'cancelled'), reason ('retry'; for a dead job the dead letter's reason, 'exhausted' or
-- 'non_retryable'; 'cancelled') and available_at (when a pending job can be claimed again,
-- else null). A new name rather than a new return type of queue.fail, whose result stays
-- the status alone.
create or replace function queue.fail_outcome(
    job_id bigint,
    token uuid,
    error text,
    retry_in interval default null,
    retryable boolean default true
) returns table (status text, reason text, available_at timestamptz)
language sql
security definer
set search_path = pg_catalog, pg_temp
rows 1
as $$
    select f.status, f.reason, f.available_at
    from queue._fail(job_id, token, error, retry_in, retryable) as f
$$;

comment on function queue.fail(bigint, uuid, text, interval, boolean) is
'Record a failed attempt: retry with backoff (pending) or dead-letter (dead).';
comment on function queue.fail_outcome(bigint, uuid, text, interval, boolean) is
'Record a failed attempt; returns status, reason and the next availability.';
revoke all on function queue._fail(bigint, uuid, text, interval, boolean) from public;
revoke all on function queue.fail(bigint, uuid, text, interval, boolean) from public;
revoke all on function queue.fail_outcome(bigint, uuid, text, interval, boolean) from public;
grant execute on function queue.fail(bigint, uuid, text, interval, boolean)
to andal_worker, andal_admin;
grant execute on function queue.fail_outcome(bigint, uuid, text, interval, boolean)
to andal_worker, andal_admin;
