-- The lease of a running job: its loss (AN001), the fence every write on behalf of a job
-- passes, and the take-back of expired leases. Private: granted to nobody.

-- _lease_lost: raise andal's lease-lost error (SQLSTATE AN001) for job_id, explaining why the
-- caller's token is no longer current. Never returns.
create or replace function queue._lease_lost(job_id bigint, token uuid) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job record;  -- not queue.jobs: queue.set_shards may replace the table mid-call
    v_detail text;
begin
    select j.* into v_job from queue.jobs as j where j.id = _lease_lost.job_id;
    if not found then
        v_detail := format('job %s is no longer live (completed, dead-lettered or cancelled)',
            job_id);
    elsif v_job.status <> 'running' then
        v_detail := format('job %s is pending again (its lease expired or it was released)',
            job_id);
    elsif v_job.token is distinct from _lease_lost.token then
        -- not who holds it now: any caller with any job id would learn it
        v_detail := format('job %s was claimed again (attempt %s)', job_id, v_job.attempt);
    elsif v_job.abort_requested_at is not null and v_job.lease_expires_at > now() then
        v_detail := format('an abort of job %s was requested at %s: end the attempt with '
            'queue.fail, the job ends cancelled', job_id, v_job.abort_requested_at);
    elsif v_job.timeout is not null
        and v_job.lease_expires_at >= v_job.claimed_at + v_job.timeout then
        v_detail := format('job %s ran past its timeout of %s', job_id, v_job.timeout);
    else
        v_detail := format('the lease of job %s expired at %s', job_id, v_job.lease_expires_at);
    end if;
    raise exception 'lease lost on job %', job_id
        using errcode = 'AN001', detail = v_detail,
        hint = 'Discard this attempt''s outcome: the job will run (or ran) again elsewhere.';
end
$$;

-- _check_fence: a write on behalf of job_id is allowed only while the caller's token is
-- current: the job is running under that token and its lease has not expired. Share-locks
-- the job's row until the caller's transaction ends, so a takeover (which updates the row)
-- waits until the write committed or rolled back. Raises 22004 (null) or AN001.
create or replace function queue._check_fence(job_id bigint, token uuid) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
begin
    if job_id is null or token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    -- by primary key and token, as complete (a token is set only while a job runs)
    perform from queue.jobs as j
    where j.id = _check_fence.job_id and j.token = _check_fence.token
      and j.lease_expires_at > now()
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
-- backoff. Skips rows another session
-- holds. Returns how many it took back.
drop function if exists queue._reap(int);
create or replace function queue._reap(lim int default 100, queues text[] default null)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job record;  -- not queue.jobs: queue.set_shards may replace the table mid-call
    v_count int := 0;
    v_error text;
    v_timeout boolean;
    v_keys text[] := '{}'::text[];
    v_queues text[] := '{}'::text[];
    v_reasons text[] := '{}'::text[];
    v_row record;
begin
    for v_job in
        select j.* from queue.jobs as j
        where j.status = 'running' and j.lease_expires_at <= now()
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
            v_job.errors := v_job.errors || (queue._error_entry(v_job.attempt, v_error,
                v_job.worker) || '{"reason": "timeout"}');
        else
            v_error := format('lease expired (worker %s)', v_job.worker);
            v_job.errors := v_job.errors
                || queue._error_entry(v_job.attempt, v_error, v_job.worker);
        end if;
        if v_job.cache_key is not null then
            v_keys := v_keys || v_job.cache_key;
            v_queues := v_queues || v_job.queue;
            v_reasons := v_reasons
                || case when v_job.attempt >= v_job.max_attempts
                             or v_job.abort_requested_at is not null then 'dead'
                        else 'retry' end;
        end if;
        if v_job.abort_requested_at is not null then
            -- aborted and never acknowledged: fenced now, cancelled, not retried
            perform queue._bury(v_job.id, 'cancelled', 'aborted: ' || v_error, v_job.errors);
            v_count := v_count + 1;
            continue;
        end if;
        if v_job.attempt >= v_job.max_attempts then
            perform queue._bury(v_job.id, 'exhausted', v_error, v_job.errors);
        else
            update queue.jobs as j
            set status = 'pending', token = null, worker = null, claimed_at = null,
                lease_expires_at = null, errors = v_job.errors,
                available_at = case when v_timeout
                    then now() + queue._backoff(queue._config(v_job.queue), v_job.attempt)
                    else j.available_at end
            where j.id = v_job.id;
            if v_job.category is not null then
                delete from queue.worker_locks as w where w.job_id = v_job.id;
            end if;
        end if;
        perform queue._record(v_job.queue, v_job.category, 0,
            (v_job.attempt < v_job.max_attempts)::int, (v_job.attempt >= v_job.max_attempts)::int,
            array[extract(epoch from now() - v_job.claimed_at) * 1000],
            array[date_part('epoch', v_job.claimed_at - v_job.available_at) * 1000]);
        v_count := v_count + 1;
    end loop;
    -- The jobs' cache keys are invalidated in key order, like every batch does.
    for v_row in
        select u.k, u.q, u.r from unnest(v_keys, v_queues, v_reasons) as u (k, q, r)
        order by u.k
    loop
        perform cache._job_done(v_row.k, (queue._config(v_row.q)).cache_policy, null, v_row.r);
    end loop;
    return v_count;
end
$$;
revoke all on function queue._lease_lost(bigint, uuid) from public;
revoke all on function queue._check_fence(bigint, uuid) from public;
revoke all on function queue._reap(int, text[]) from public;
