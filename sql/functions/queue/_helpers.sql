-- Private helpers of the queue functions. Granted to nobody; called only by andal's own
-- SECURITY DEFINER functions.

-- _check_name: a name argument (queue, category, worker, key) is non-empty and not too long.
-- Raises 22004 when required and null, 22023 when empty or longer than max_length characters.
create or replace function queue._check_name(
    value text, argument text, required boolean default true, max_length int default 128
) returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if value is null then
        if required then
            raise exception '% must not be null', argument using errcode = '22004';
        end if;
        return;
    end if;
    if length(value) = 0 or length(value) > max_length then
        raise exception '% must be 1 to % characters long (got %)',
            argument, max_length, length(value)
            using errcode = '22023';
    end if;
end
$$;

-- _check_payload: a job payload is a non-null JSON object no larger than the queue's limit.
-- Raises 22004 (null), 22023 (not an object), 54000 (over payload_limit bytes of JSON text).
create or replace function queue._check_payload(payload jsonb, argument text, payload_limit int)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bytes bigint;
begin
    if payload is null then
        raise exception '% must not be null', argument using errcode = '22004';
    end if;
    if jsonb_typeof(payload) <> 'object' then
        raise exception '% must be a JSON object, not %', argument, jsonb_typeof(payload)
            using errcode = '22023';
    end if;
    -- The limit is on what a claimer receives: the JSON text, measured on every payload.
    -- The stored size says nothing about it (a jsonb number of a few bytes prints as up to
    -- 131,072 digits), so it is no shortcut; printing a small payload costs microseconds.
    v_bytes := octet_length(payload::text);
    if v_bytes > payload_limit then
        raise exception '% is % bytes, over the queue''s limit of % bytes',
            argument, v_bytes, payload_limit
            using errcode = '54000',
            hint = 'Store large data elsewhere and pass a reference, '
            'or raise the limit with queue.configure_queue(payload_limit => ...).';
    end if;
end
$$;

-- _limits: the bounds of queue.config (its column defaults when the row is missing). Out
-- parameters, not the table's row type: the function files are also applied to an older
-- schema before its migrations (an upgrade).
create or replace function queue._limits(
    out max_lease interval, out max_delay interval, out min_priority int,
    out max_priority int, out max_error_bytes int, out max_result_bytes int
)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    select c.max_lease, c.max_delay, c.min_priority, c.max_priority, c.max_error_bytes,
        c.max_result_bytes
    into max_lease, max_delay, min_priority, max_priority, max_error_bytes, max_result_bytes
    from queue.config as c;
    if not found then
        max_lease := interval '1 day';
        max_delay := interval '1 year';
        min_priority := -1000000;
        max_priority := 1000000;
        max_error_bytes := 65536;
        max_result_bytes := 1048576;
    end if;
end
$$;

-- _check_interval: an interval argument is not null, its effect not negative (or positive
-- when strict), and at most the bound `bound` names ('lease': queue.config.max_lease,
-- 'delay': max_delay; null: 1000 years). The effect is what andal does with it: now() +
-- value, compared with now(), so '-100 years 36000 days' (equal to 0 as an interval, 1.4
-- years in the past as a time) counts as negative. Values too large for a timestamp are
-- refused before any addition. Raises 22004 (null and required) or 22023.
drop function if exists queue._check_interval(interval, text, boolean, boolean);
create or replace function queue._check_interval(
    value interval, argument text, strict_positive boolean default false,
    required boolean default true, bound text default null
) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max interval;
    v_epoch numeric;
    v_sign int;
    v_over boolean;
    v_at timestamptz;
begin
    if value is null then
        if required then
            raise exception '% must not be null', argument using errcode = '22004';
        end if;
        return;
    end if;
    -- The epoch is within a month per 30 days of the effect: far past 1000 years, the sign
    -- alone decides, and now() + value is never computed (it could overflow). The bound is
    -- read only for a positive value (a zero delay, the common default, reads nothing).
    v_epoch := extract(epoch from value);
    if abs(v_epoch) > 2 * 31557600000::numeric then
        v_sign := sign(v_epoch)::int;
    else
        v_at := now() + value;
        v_sign := case when v_at > now() then 1 when v_at < now() then -1 else 0 end;
    end if;
    if v_sign > 0 then
        v_max := case bound
            when 'lease' then (queue._limits()).max_lease
            when 'delay' then (queue._limits()).max_delay
            else interval '1000 years'
        end;
        v_over := v_at is null or v_at > now() + v_max;
    end if;
    if strict_positive and v_sign <= 0 then
        raise exception '% must be positive (got %)', argument, value using errcode = '22023';
    end if;
    if v_sign < 0 then
        raise exception '% must not be negative (got %)', argument, value
            using errcode = '22023';
    end if;
    if v_over then
        raise exception '% must be at most % (got %)', argument, v_max, value
            using errcode = '22023',
            hint = case bound
                when 'lease' then 'The bound is queue.config.max_lease.'
                when 'delay' then 'The bound is queue.config.max_delay.'
                else 'Intervals past 1000 years are refused.'
            end;
    end if;
end
$$;

-- _check_priority: a priority is not null and within queue.config's min_priority ..
-- max_priority (0 always is). Raises 22004 / 22023.
create or replace function queue._check_priority(priority int) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limits record;
begin
    if priority is null then
        raise exception 'priority must not be null' using errcode = '22004';
    end if;
    if priority = 0 then
        return;
    end if;
    v_limits := queue._limits();
    if priority not between v_limits.min_priority and v_limits.max_priority then
        raise exception 'priority must be between % and % (got %)',
            v_limits.min_priority, v_limits.max_priority, priority
            using errcode = '22023',
            hint = 'The bounds are queue.config.min_priority and max_priority.';
    end if;
end
$$;

-- _check_result: a result to keep is at most queue.config.max_result_bytes of JSON text;
-- returns it. Raises 54000.
create or replace function queue._check_result(result jsonb, argument text) returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit int;
begin
    if result is null then
        return null;
    end if;
    v_limit := (queue._limits()).max_result_bytes;
    if octet_length(result::text) > v_limit then
        raise exception '% is % bytes, over the limit of % bytes for kept results', argument,
            octet_length(result::text), v_limit
            using errcode = '54000',
            hint = 'Complete the job without a result (or fail it), or raise '
            'queue.config.max_result_bytes.';
    end if;
    return result;
end
$$;

-- _caller: the role a SECURITY DEFINER function acts for: the caller's SET ROLE, else the
-- session user (inside such a function current_user is the definer, never the caller).
create or replace function queue._caller() returns name
language sql stable
set search_path = pg_catalog, pg_temp
as $$ select coalesce(nullif(current_setting('role'), 'none'), session_user)::name $$;

-- _config: the policy row of a queue, created with the defaults on first use. By primary
-- key whatever the statistics say (see _category_id).
create or replace function queue._config(queue_name text) returns queue.queues
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_cfg queue.queues;
begin
    select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    if not found then
        insert into queue.queues as q (queue) values (queue_name)
        on conflict (queue) do nothing;
        select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    end if;
    return v_cfg;
end
$$;

-- _category_id: the id of a category, created (limit 1) on first use. By its unique index
-- whatever the statistics say: after the table was vacuumed empty, a sequential scan looks
-- cheapest, and thousands of new names in one transaction made each lookup read them all.
create or replace function queue._category_id(category_name text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_id bigint;
begin
    select c.id into v_id from queue.categories as c where c.category = category_name;
    if v_id is null then
        insert into queue.categories as c (category) values (category_name)
        on conflict (category) do nothing;
        select c.id into v_id from queue.categories as c where c.category = category_name;
    end if;
    return v_id;
end
$$;

-- The category gate locks the category's row now (see queue.claim); the advisory key that
-- any role could take is gone.
drop function if exists queue._gate_key(bigint);

-- _backoff: the delay before the next attempt after `attempt` failed attempts, by queue policy.
-- linear: backoff_base * attempt (the seed's attempt * 5 s); exponential: backoff_base *
-- 2^(attempt-1). Both capped at backoff_cap, then reduced by up to `jitter` (a fraction).
create or replace function queue._backoff(cfg queue.queues, attempt int) returns interval
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    v_delay interval;
    v_secs numeric;
begin
    -- In seconds, capped before it becomes an interval: base * 2^40 (or * attempt) of a
    -- large base would overflow the interval range.
    if cfg.backoff = 'exponential' then
        v_secs := extract(epoch from cfg.backoff_base)
            * power(2::numeric, least(greatest(attempt, 1) - 1, 40));
    else
        v_secs := extract(epoch from cfg.backoff_base) * greatest(attempt, 1);
    end if;
    v_delay := case when v_secs >= extract(epoch from cfg.backoff_cap) then cfg.backoff_cap
        else make_interval(secs => v_secs::double precision) end;
    if cfg.jitter > 0 then
        v_delay := v_delay * (1 - cfg.jitter * random());
    end if;
    return v_delay;
end
$$;

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

-- _bury: move a live job to the dead letters with its error history (`errors`, the job's
-- history with this attempt's entry), and to queue.history when its queue keeps one; free
-- its gate slot, tell operators on channel andal_ops and, when the job is watched
-- (queue.watch), its watchers on andal_done. The caller holds the row lock. Takes the id,
-- not the row: no function signature depends on queue.jobs's row type, so
-- queue.set_shards can replace the table.
drop function if exists queue._bury(queue.jobs, text, text);
create or replace function queue._bury(
    job_id bigint, reason text, last_error text, errors jsonb
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_queue text;
    v_category text;
    v_watched boolean;
begin
    with gone as (
        delete from queue.jobs as j where j.id = _bury.job_id
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.enqueued_at, j.dedup_key, j.cache_key, j.claimed_at, j.worker, j.watched
    ),
    dead as (
        insert into queue.dead_letters as d (
            job_id, queue, category, priority, payload, attempt, max_attempts, enqueued_at,
            dedup_key, reason, last_error, errors, cache_key
        )
        select g.id, g.queue, g.category, g.priority, g.payload, g.attempt, g.max_attempts,
            g.enqueued_at, g.dedup_key, _bury.reason, _bury.last_error, _bury.errors,
            g.cache_key
        from gone as g
    ),
    kept as (
        -- the queue keeps history: the finished job goes there too
        insert into queue.history (
            job_id, queue, category, priority, state, payload, attempt, max_attempts,
            enqueued_at, started_at, worker, errors, keep_until
        )
        select g.id, g.queue, g.category, g.priority,
            case _bury.reason when 'cancelled' then 'cancelled' else 'dead' end, g.payload,
            g.attempt, g.max_attempts, g.enqueued_at, g.claimed_at, g.worker, _bury.errors,
            now() + q.history_retention
        from gone as g
        join queue.queues as q on q.queue = g.queue and q.history_retention is not null
    )
    select g.queue, g.category, g.watched into v_queue, v_category, v_watched from gone as g;
    if v_category is not null then
        delete from queue.worker_locks as w where w.job_id = _bury.job_id;
    end if;
    -- no names on a locked-down install (andal.notify_names = off, see queue._lock_down)
    perform pg_notify('andal_ops',
        case when coalesce(current_setting('andal.notify_names', true), '') <> 'off'
            then json_build_object('event', 'dead', 'job_id', _bury.job_id, 'queue', v_queue,
                'reason', _bury.reason)::text
            else '{"event":"dead"}' end);
    if v_watched then
        perform pg_notify('andal_done',
            case when coalesce(current_setting('andal.notify_names', true), '') <> 'off'
                then _bury.job_id::text else '' end);
    end if;
end
$$;

-- _error_entry: one element of a job's error history.
create or replace function queue._error_entry(
    attempt int, error text, worker text, retry_in interval default null
) returns jsonb
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select jsonb_strip_nulls(jsonb_build_object(
        'attempt', attempt, 'error', error, 'worker', worker, 'at', now(),
        'retry_in', retry_in::text
    ))
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

revoke all on function queue._check_name(text, text, boolean, int) from public;
revoke all on function queue._check_payload(jsonb, text, int) from public;
revoke all on function queue._limits() from public;
revoke all on function queue._caller() from public;
revoke all on function queue._check_result(jsonb, text) from public;
revoke all on function queue._check_fence(bigint, uuid) from public;
revoke all on function queue._check_interval(interval, text, boolean, boolean, text) from public;
revoke all on function queue._check_priority(int) from public;
revoke all on function queue._config(text) from public;
revoke all on function queue._category_id(text) from public;
revoke all on function queue._backoff(queue.queues, int) from public;
revoke all on function queue._lease_lost(bigint, uuid) from public;
revoke all on function queue._bury(bigint, text, text, jsonb) from public;
revoke all on function queue._error_entry(int, text, text, interval) from public;
revoke all on function queue._reap(int, text[]) from public;
