-- Heartbeats: queue.heartbeat and queue.heartbeat_many extend leases; their overloads with
-- report_abort also say whether an abort was requested (queue.cancel of a running job). The
-- two overloads of each are thin wrappers of one private body: queue._heartbeat_one (one job,
-- by primary key) and queue._heartbeat (many).
--
-- A job whose abort was requested keeps its lease but is no longer extended: its worker is
-- expected to stop and end the attempt (queue.fail or queue.release: the job ends
-- cancelled); a worker that ignores the request is fenced when the lease runs out (the job
-- is then taken back as cancelled, never retried).

-- _heartbeat: extend the leases of the (job, token) pairs that are current, unexpired leases;
-- one row per input pair, in input order: the lease expiry (unchanged when an abort was
-- requested), or null where the lease was lost; abort_requested (null where lost). Rows are
-- locked in id order, so concurrent batches never deadlock.
-- Raises: 22023 extend <= 0.
create or replace function queue._heartbeat(job_ids bigint[], tokens uuid[], extend interval)
returns table (job_id bigint, lease_expires_at timestamptz, abort_requested boolean)
language plpgsql
set search_path = pg_catalog, pg_temp
-- every row is found by primary key, whatever the (possibly stale) statistics say; jit off:
-- a plan costed with a disabled scan would otherwise be JIT-compiled on every call
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_now timestamptz := queue._lease_clock();
begin
    perform queue._check_interval(_heartbeat.extend, 'extend', true, false, 'lease');
    return query
    with input as (
        select i.id, i.tok, i.n
        from unnest(_heartbeat.job_ids, _heartbeat.tokens) with ordinality as i (id, tok, n)
    ),
    locked as (
        -- By primary key (= any), never a scan of the running jobs: a token is set only
        -- while a job runs, so token and unexpired lease say "running" without naming the
        -- status (which would let the planner pick jobs_lease_idx on stale statistics).
        select j.id from queue.jobs as j
        where j.id = any (_heartbeat.job_ids) and j.lease_expires_at > v_now
          and exists (select from input as i where i.id = j.id and i.tok = j.token)
        order by j.id
        for update of j
    ),
    extended as (
        update queue.jobs as j
        set lease_expires_at = case
            when j.abort_requested_at is not null then j.lease_expires_at
            -- never past the attempt's deadline (claim time + the job's timeout)
            else least(v_now + coalesce(
                _heartbeat.extend,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                queue._lease_default()), j.claimed_at + j.timeout)
            end
        from locked as l where j.id = l.id
        returning j.id, j.token, j.lease_expires_at,
            j.abort_requested_at is not null as abort_requested
    )
    -- by id and token: a wrong token beside the job's right one in the same call is lost
    select i.id, e.lease_expires_at, e.abort_requested
    from input as i left join extended as e on e.id = i.id and e.token = i.tok
    order by i.n;
end
$$;

-- _heartbeat_one: extend the lease of one job when (job_id, token) is its current,
-- unexpired lease (not when an abort was requested); returns the expiry and whether an
-- abort was requested, or nulls when the lease was lost. One statement, by primary key.
-- Raises: 22023 extend <= 0 or past max_lease.
create or replace function queue._heartbeat_one(job_id bigint, token uuid, extend interval)
returns table (lease_expires_at timestamptz, abort_requested boolean)
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_now timestamptz := queue._lease_clock();
begin
    perform queue._check_interval(_heartbeat_one.extend, 'extend', true, false, 'lease');
    return query
    update queue.jobs as j
    set lease_expires_at = case
        when j.abort_requested_at is not null then j.lease_expires_at
        -- never past the attempt's deadline (claim time + the job's timeout)
        else least(v_now + coalesce(
            _heartbeat_one.extend,
            (select q.lease from queue.queues as q where q.queue = j.queue),
            queue._lease_default()), j.claimed_at + j.timeout)
        end
    -- By primary key, never a scan of the running jobs (as complete): a token is set only
    -- while a job runs, so token and unexpired lease say "running" without naming the
    -- status, which would let the planner read jobs_lease_idx on stale statistics.
    where j.id = _heartbeat_one.job_id and j.token = _heartbeat_one.token
      and j.lease_expires_at > v_now
    returning j.lease_expires_at, j.abort_requested_at is not null;
end
$$;

-- queue.heartbeat: extend the lease of a claimed job; returns the new expiry.
-- The lease becomes the current time + extend (default: the queue's lease), but never later than the
-- attempt's deadline (claimed_at + the job's timeout); the gate slot follows it.
-- A job whose abort was requested is not extended (the expiry returned is unchanged): use
-- the overload with report_abort to learn why.
-- Raises: 22004 null job_id or token; 22023 extend <= 0; AN001 lease lost (a stale worker
-- learns here that it must stop).
create or replace function queue.heartbeat(job_id bigint, token uuid, extend interval default null)
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_expires timestamptz;
begin
    if heartbeat.job_id is null or heartbeat.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    select h.lease_expires_at into v_expires
    from queue._heartbeat_one(heartbeat.job_id, heartbeat.token, heartbeat.extend) as h;
    if v_expires is null then
        perform queue._lease_lost(heartbeat.job_id, heartbeat.token);
    end if;
    return v_expires;
end
$$;

-- queue.heartbeat (report_abort): the same, and whether an abort of the job was requested:
-- then the lease is not extended and the worker should stop the job and end the attempt
-- with queue.fail (the job ends cancelled). report_abort selects this overload (pass true).
-- Raises: 22004 null job_id, token or report_abort; 22023 extend <= 0; AN001 lease lost.
create or replace function queue.heartbeat(
    job_id bigint, token uuid, report_abort boolean, extend interval default null
) returns table (lease_expires_at timestamptz, abort_requested boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_expires timestamptz;
    v_abort boolean;
begin
    if heartbeat.job_id is null or heartbeat.token is null or heartbeat.report_abort is null then
        raise exception 'job_id, token and report_abort must not be null' using errcode = '22004';
    end if;
    select h.lease_expires_at, h.abort_requested into v_expires, v_abort
    from queue._heartbeat_one(heartbeat.job_id, heartbeat.token, heartbeat.extend) as h;
    if v_expires is null then
        perform queue._lease_lost(heartbeat.job_id, heartbeat.token);
    end if;
    return query select v_expires, v_abort;
end
$$;

-- queue.heartbeat_many: extend several leases at once; returns one row per input job with
-- the new expiry, or null where the lease was lost (never raises for that). A job whose
-- abort was requested is not extended (its expiry is returned unchanged).
-- Raises: 22004 null arrays; 22023 arrays of different lengths or extend <= 0.
create or replace function queue.heartbeat_many(
    job_ids bigint[], tokens uuid[], extend interval default null
) returns table (job_id bigint, lease_expires_at timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
begin
    if heartbeat_many.job_ids is null or heartbeat_many.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if cardinality(heartbeat_many.job_ids) <> cardinality(heartbeat_many.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select h.job_id, h.lease_expires_at
    from queue._heartbeat(heartbeat_many.job_ids, heartbeat_many.tokens, heartbeat_many.extend)
        as h;
end
$$;

-- queue.heartbeat_many (report_abort): the same, with abort_requested per job (true: stop
-- it; null where the lease was lost). report_abort selects this overload (pass true).
-- Raises: 22004 null arrays or report_abort; 22023 arrays of different lengths or
-- extend <= 0.
create or replace function queue.heartbeat_many(
    job_ids bigint[], tokens uuid[], report_abort boolean, extend interval default null
) returns table (job_id bigint, lease_expires_at timestamptz, abort_requested boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
begin
    if heartbeat_many.job_ids is null or heartbeat_many.tokens is null
        or heartbeat_many.report_abort is null then
        raise exception 'job_ids, tokens and report_abort must not be null'
            using errcode = '22004';
    end if;
    if cardinality(heartbeat_many.job_ids) <> cardinality(heartbeat_many.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select h.job_id, h.lease_expires_at, h.abort_requested
    from queue._heartbeat(heartbeat_many.job_ids, heartbeat_many.tokens, heartbeat_many.extend)
        as h;
end
$$;

comment on function queue._heartbeat_one(bigint, uuid, interval) is
'Private: extend one lease (not of a job whose abort was requested); report an abort.';
comment on function queue._heartbeat(bigint[], uuid[], interval) is
'Private: extend leases (not of jobs whose abort was requested); report aborts.';
comment on function queue.heartbeat(bigint, uuid, interval) is
'Extend the lease of a claimed job; raises AN001 when the lease is lost.';
comment on function queue.heartbeat(bigint, uuid, boolean, interval) is
'Extend the lease of a claimed job and report whether its abort was requested.';
comment on function queue.heartbeat_many(bigint[], uuid[], interval) is
'Extend several leases; null expiry where the lease was lost.';
comment on function queue.heartbeat_many(bigint[], uuid[], boolean, interval) is
'Extend several leases and report requested aborts; null where the lease was lost.';
revoke all on function queue._heartbeat_one(bigint, uuid, interval) from public;
revoke all on function queue._heartbeat(bigint[], uuid[], interval) from public;
revoke all on function queue.heartbeat(bigint, uuid, interval) from public;
revoke all on function queue.heartbeat(bigint, uuid, boolean, interval) from public;
revoke all on function queue.heartbeat_many(bigint[], uuid[], interval) from public;
revoke all on function queue.heartbeat_many(bigint[], uuid[], boolean, interval) from public;
grant execute on function queue.heartbeat(bigint, uuid, interval) to andal_worker, andal_admin;
grant execute on function queue.heartbeat(bigint, uuid, boolean, interval)
to andal_worker, andal_admin;
grant execute on function queue.heartbeat_many(bigint[], uuid[], interval)
to andal_worker, andal_admin;
grant execute on function queue.heartbeat_many(bigint[], uuid[], boolean, interval)
to andal_worker, andal_admin;
