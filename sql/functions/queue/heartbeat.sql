-- queue.heartbeat: extend the lease of a claimed job; returns the new expiry.
-- The lease becomes now() + extend (default: the queue's lease); the gate slot follows it.
-- Raises: 22004 null job_id or token; 22023 extend <= 0; AN001 lease lost (a stale worker
-- learns here that it must stop).
create or replace function queue.heartbeat(job_id bigint, token uuid, extend interval default null)
returns timestamptz
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
    v_expires timestamptz;
begin
    if heartbeat.job_id is null or heartbeat.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(heartbeat.extend, 'extend', true, false, 'lease');
    update queue.jobs as j
    set lease_expires_at = now() + coalesce(
        heartbeat.extend,
        (select q.lease from queue.queues as q where q.queue = j.queue),
        interval '60 seconds'
    )
    -- By primary key, never a scan of the running jobs (as complete): a token is set only
    -- while a job runs, so token and unexpired lease say "running" without naming the
    -- status, which would let the planner read jobs_lease_idx on stale statistics.
    where j.id = heartbeat.job_id and j.token = heartbeat.token
      and j.lease_expires_at > now()
    returning j.lease_expires_at into v_expires;
    if v_expires is null then
        perform queue._lease_lost(heartbeat.job_id, heartbeat.token);
    end if;
    return v_expires;
end
$$;

-- queue.heartbeat_many: extend several leases at once; returns one row per input job with
-- the new expiry, or null where the lease was lost (never raises for that).
-- Raises: 22004 null arrays; 22023 arrays of different lengths or extend <= 0.
create or replace function queue.heartbeat_many(
    job_ids bigint[], tokens uuid[], extend interval default null
) returns table (job_id bigint, lease_expires_at timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- every row is found by primary key, whatever the (possibly stale) statistics say; jit off:
-- a plan costed with a disabled scan would otherwise be JIT-compiled on every call
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
    perform queue._check_interval(heartbeat_many.extend, 'extend', true, false, 'lease');
    return query
    with input as (
        select i.id, i.tok, i.n
        from unnest(heartbeat_many.job_ids, heartbeat_many.tokens) with ordinality as i (id, tok, n)
    ),
    locked as (
        -- By primary key (= any), never a scan of the running jobs: a token is set only
        -- while a job runs, so token and unexpired lease say "running" without naming the
        -- status (which would let the planner pick jobs_lease_idx on stale statistics).
        select j.id from queue.jobs as j
        where j.id = any (heartbeat_many.job_ids) and j.lease_expires_at > now()
          and exists (select from input as i where i.id = j.id and i.tok = j.token)
        order by j.id
        for update of j
    ),
    extended as (
        update queue.jobs as j
        set lease_expires_at = now() + coalesce(
            heartbeat_many.extend,
            (select q.lease from queue.queues as q where q.queue = j.queue),
            interval '60 seconds'
        )
        from locked as l where j.id = l.id
        returning j.id, j.token, j.lease_expires_at
    )
    -- by id and token: a wrong token beside the job's right one in the same call is lost
    select i.id, e.lease_expires_at
    from input as i left join extended as e on e.id = i.id and e.token = i.tok
    order by i.n;
end
$$;

comment on function queue.heartbeat(bigint, uuid, interval) is
'Extend the lease of a claimed job; raises AN001 when the lease is lost.';
comment on function queue.heartbeat_many(bigint[], uuid[], interval) is
'Extend several leases; null expiry where the lease was lost.';
revoke all on function queue.heartbeat(bigint, uuid, interval) from public;
revoke all on function queue.heartbeat_many(bigint[], uuid[], interval) from public;
grant execute on function queue.heartbeat(bigint, uuid, interval) to andal_worker, andal_admin;
grant execute on function queue.heartbeat_many(bigint[], uuid[], interval)
to andal_worker, andal_admin;
