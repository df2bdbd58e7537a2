-- queue.fail: record a failed attempt of a claimed job; returns its new status.
--
-- 'pending': retryable and attempts left — the job stays in the table with available_at
-- moved by the queue's backoff (retry_in overrides), on the database clock (Q3).
-- 'dead': out of attempts, or retryable => false — the job moves to queue.dead_letters with
-- its whole error history and a NOTIFY goes to channel andal_ops (Q4).
-- 'cancelled': an abort of the job was requested (queue.cancel while it ran) — the job moves
-- to queue.dead_letters with reason 'cancelled', never retried, whatever retryable says.
-- Either way the error (with attempt, worker, time) is appended to the job's history, its
-- gate slot is freed and its cache key invalidated in the same transaction (C8).
-- An error longer than queue.config.max_error_bytes is cut to it (marked), never refused.
-- Raises: 22004 null job_id, token or error; 22023 retry_in negative or over
-- queue.config.max_delay; AN001 lease lost.
create or replace function queue.fail(
    job_id bigint,
    token uuid,
    error text,
    retry_in interval default null,
    retryable boolean default true
) returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- by primary key whatever the (possibly stale) statistics say, as complete: a shard
-- analyzed while empty would otherwise be read whole
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_job record;  -- not queue.jobs: queue.set_shards may replace the table mid-call
    v_cfg queue.queues;
    v_delay interval;
    v_status text;
    v_error text;
    v_limit int;
begin
    if fail.job_id is null or fail.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    if fail.error is null then
        raise exception 'error must not be null' using errcode = '22004',
            hint = 'Pass the error message (and traceback) of the failed attempt.';
    end if;
    if fail.retryable is null then
        raise exception 'retryable must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(fail.retry_in, 'retry_in', false, false, 'delay');
    v_error := fail.error;
    if octet_length(v_error) > 1024 then
        v_limit := (queue._limits()).max_error_bytes;
        if octet_length(v_error) > v_limit then
            -- cut, never refused: a worker must always be able to record a failure. By
            -- characters (a byte cut could split one), shortened until it fits.
            v_error := left(v_error, v_limit);
            while octet_length(v_error) > v_limit loop
                v_error := left(v_error,
                    length(v_error) - greatest((octet_length(v_error) - v_limit) / 4, 1));
            end loop;
            v_error := v_error || format(' ... (cut at %s bytes)', v_limit);
        end if;
    end if;

    select j.* into v_job from queue.jobs as j where j.id = fail.job_id for update;
    if v_job.id is null or v_job.status <> 'running' or v_job.token <> fail.token
        or v_job.lease_expires_at <= now() then
        perform queue._lease_lost(fail.job_id, fail.token);
    end if;
    v_cfg := queue._config(v_job.queue);

    if v_job.abort_requested_at is not null then
        perform queue._bury(v_job.id, 'cancelled', v_error, v_job.errors
            || queue._error_entry(v_job.attempt, v_error, v_job.worker));
        if v_job.cache_key is not null then
            perform cache._job_done(v_job.cache_key, v_cfg.cache_policy, null, 'dead');
        end if;
        return 'cancelled';
    end if;
    if not fail.retryable or v_job.attempt >= v_job.max_attempts then
        v_job.errors := v_job.errors
            || queue._error_entry(v_job.attempt, v_error, v_job.worker);
        perform queue._bury(v_job.id,
            case when fail.retryable then 'exhausted' else 'non_retryable' end, v_error,
            v_job.errors);
        v_status := 'dead';
    else
        v_delay := coalesce(fail.retry_in, queue._backoff(v_cfg, v_job.attempt));
        update queue.jobs as j
        set status = 'pending', token = null, worker = null, claimed_at = null,
            lease_expires_at = null, available_at = now() + v_delay,
            errors = j.errors || queue._error_entry(v_job.attempt, v_error, v_job.worker, v_delay)
        where j.id = v_job.id;
        if v_job.category is not null then
            delete from queue.worker_locks as w where w.job_id = v_job.id;
        end if;
        v_status := 'pending';
    end if;
    perform queue._record(v_job.queue, v_job.category, 0,
        (v_status = 'pending')::int, (v_status = 'dead')::int,
        array[extract(epoch from now() - v_job.claimed_at) * 1000],
        array[date_part('epoch', v_job.claimed_at - v_job.available_at) * 1000]);
    if v_job.cache_key is not null then
        perform cache._job_done(v_job.cache_key, v_cfg.cache_policy, null,
            case v_status when 'dead' then 'dead' else 'retry' end);
    end if;
    return v_status;
end
$$;

comment on function queue.fail(bigint, uuid, text, interval, boolean) is
'Record a failed attempt: retry with backoff (pending) or dead-letter (dead).';
revoke all on function queue.fail(bigint, uuid, text, interval, boolean) from public;
grant execute on function queue.fail(bigint, uuid, text, interval, boolean)
to andal_worker, andal_admin;
