-- Worker registration: a worker says who it is (queue.register_worker at start, again as its
-- heartbeat), and queue.workers() / queue.registered_workers() list the live registrations,
-- so no reader has to guess workers from session names.

-- queue.register_worker: register the worker `worker`, or refresh its registration; returns
-- when the registration expires unless refreshed (now() + expire_after). A worker calls it at
-- start and then well within expire_after (the Python worker: every 10 s, expiring after a
-- minute); a worker that stops calling is no longer listed once expire_after has passed
-- (crashed, or cut off from the database). started_at is kept across refreshes of the same
-- host and pid, and reset when another process takes the name. Expired registrations of any
-- worker are deleted here. A null optional argument means its default (no queues, 0 slots,
-- no version, a minute). Works at any isolation level (one upsert of its own row).
-- Raises: 22004 null worker, host or pid; 22023 a bad name (worker, host: 255 characters,
-- version: 64, queue names), a negative pid, slots outside 0..100000, more than 1000 queues,
-- an expire_after not positive or past queue.config.max_lease.
create or replace function queue.register_worker(
    worker text,
    host text,
    pid int,
    queues text [] default '{}',
    slots int default 0,
    version text default null,
    expire_after interval default '1 minute'
) returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_queues text[] := coalesce(register_worker.queues, '{}'::text[]);
    v_slots int := coalesce(register_worker.slots, 0);
    v_expire interval := coalesce(register_worker.expire_after, interval '1 minute');
begin
    perform queue._check_name(register_worker.worker, 'worker');
    perform queue._check_name(register_worker.host, 'host', true, 255);
    perform queue._check_name(register_worker.version, 'version', false, 64);
    if register_worker.pid is null then
        raise exception 'pid must not be null' using errcode = '22004';
    end if;
    if register_worker.pid < 0 then
        raise exception 'pid must not be negative (got %)', register_worker.pid
            using errcode = '22023';
    end if;
    if v_slots not between 0 and 100000 then
        raise exception 'slots must be between 0 and 100000 (got %)', v_slots
            using errcode = '22023';
    end if;
    if array_ndims(v_queues) > 1 or array_lower(v_queues, 1) <> 1
        or cardinality(v_queues) > 1000 then
        raise exception 'queues must be a one-dimensional array of at most 1000 names'
            using errcode = '22023';
    end if;
    perform queue._check_names(v_queues, 'queues');
    perform queue._check_interval(v_expire, 'expire_after', true, true, 'lease');

    delete from queue.worker_registrations as r
    where r.last_seen_at + r.expire_after < now() and r.worker <> register_worker.worker;
    insert into queue.worker_registrations as r (
        worker, host, pid, queues, slots, version, started_at, last_seen_at, expire_after
    ) values (
        register_worker.worker, register_worker.host, register_worker.pid, v_queues, v_slots,
        register_worker.version, now(), now(), v_expire
    )
    on conflict (worker) do update set
        host = excluded.host, pid = excluded.pid, queues = excluded.queues,
        slots = excluded.slots, version = excluded.version,
        started_at = case when (r.host, r.pid) = (excluded.host, excluded.pid)
            and r.last_seen_at + r.expire_after >= now()
            then r.started_at else excluded.started_at end,
        last_seen_at = excluded.last_seen_at, expire_after = excluded.expire_after;
    return now() + v_expire;
end
$$;

-- queue.unregister_worker: remove the registration of `worker` (a worker calls it when it
-- stops); returns whether there was one. Its running jobs are not touched.
-- Raises: 22004 null worker; 22023 a bad worker name.
create or replace function queue.unregister_worker(worker text) returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(unregister_worker.worker, 'worker');
    delete from queue.worker_registrations as r where r.worker = unregister_worker.worker;
    return found;
end
$$;

-- queue.registered_workers: one row per live registration (refreshed within its
-- expire_after): what the worker said of itself, and busy, the jobs it holds running now.
-- For operators and dashboards (the Workers page of `andal web`), not the hot path.
create or replace function queue.registered_workers()
returns table (
    worker text, host text, pid int, queues text [], slots int, busy bigint, version text,
    started_at timestamptz, last_seen_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select r.worker, r.host, r.pid, r.queues, r.slots,
        (select count(*) from queue.jobs as j
         where j.worker = r.worker and j.status = 'running'),
        r.version, r.started_at, r.last_seen_at
    from queue.worker_registrations as r
    where r.last_seen_at + r.expire_after >= now()
    order by r.worker;
end
$$;

comment on function queue.register_worker(text, text, int, text [], int, text, interval) is
'Register a worker, or refresh its registration; returns when it expires.';
comment on function queue.unregister_worker(text) is 'Remove a worker''s registration.';
comment on function queue.registered_workers() is
'Live worker registrations: host, pid, queues, slots, busy, version, start, last refresh.';
revoke all on function queue.register_worker(text, text, int, text [], int, text, interval)
from public;
revoke all on function queue.unregister_worker(text) from public;
revoke all on function queue.registered_workers() from public;
grant execute on function queue.register_worker(text, text, int, text [], int, text, interval)
to andal_worker, andal_admin;
grant execute on function queue.unregister_worker(text) to andal_worker, andal_admin;
grant execute on function queue.registered_workers()
to andal_worker, andal_admin, andal_monitor;
